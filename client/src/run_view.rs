//! The run the editor watches: its typed record as the server keeps it, kept current
//! by applying each event exactly as the store does, plus what only the editor shows
//! (failed attempts, each node's tool calls with their results, how long an agent
//! waited for a sibling to write the prompt cache, contradictions, the report, a
//! comparison with another run) and the timeline drawn from the record's per-node
//! times.

use conclave_shared::compare::FindingsDiff;
use conclave_shared::number::fixed;
use conclave_shared::{
    CacheRole, Effect, EventKind, FindingGroup, NodeKind, NodeState, NodeSummary, RunEvent, RunRecord, effect_of,
};
use std::collections::HashMap;

/// A failed attempt of a node: its number and what validation said about the answer.
#[derive(Debug, Clone, PartialEq)]
pub struct FailedAttempt {
    /// Attempt number, starting at 1.
    pub attempt: u32,
    /// The validation errors, one line each.
    pub errors: Vec<String>,
}

/// One tool call of a node, with its result once it came.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolActivity {
    /// The tool's id (`read_file`, `mcp:docs/git_log`).
    pub tool: String,
    /// The arguments the model sent, as compact JSON.
    pub arguments: String,
    /// The result, once the tool answered.
    pub result: Option<ToolAnswer>,
}

/// What a tool answered, as its `tool_result` event says.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolAnswer {
    /// Whether the call failed (the model read the error and went on).
    pub is_error: bool,
    /// The start of the result, as the event keeps it.
    pub content: String,
    /// The whole result's length, in characters.
    pub chars: u64,
    /// How long the call took.
    pub duration_ms: u64,
}

/// The findings of the watched run compared with those of an earlier run of the
/// same conclave.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// The earlier run.
    pub earlier: String,
    /// What changed since it, or why the two could not be compared.
    pub result: Result<FindingsDiff, String>,
}

/// The run being watched: the run record as the server keeps it, kept current by
/// applying each event exactly as the store does, plus what only the editor shows.
#[derive(Debug, Clone, PartialEq)]
pub struct RunView {
    /// The run's record: its status and every node's state, output, input and times.
    pub record: RunRecord,
    /// The sequence number of the last event applied; an event at or below it was
    /// applied already (a stream that reconnects may repeat events), so it is skipped.
    pub last_seq: u64,
    /// Failed attempts per node id; the record keeps only a node's final outcome.
    pub attempts: HashMap<String, Vec<FailedAttempt>>,
    /// Tool calls per node id, in the order they were made.
    pub tools: HashMap<String, Vec<ToolActivity>>,
    /// How long each agent that followed a sibling for the prompt cache waited, in
    /// milliseconds, by node id (its `cache_order` event).
    pub cache_waits: HashMap<String, u64>,
    /// Whether the record was complete when watching began (the run had finished):
    /// its events are then read for what the record does not keep, and not applied.
    pub complete: bool,
    /// Contradictions the engine found among reviewers.
    pub contradictions: Vec<FindingGroup>,
    /// The Markdown report, once the run has finished.
    pub report: Option<String>,
    /// The comparison with another run, when the user asked for one.
    pub comparison: Option<Comparison>,
    /// The server's clock minus the browser's, in milliseconds, as of the last event:
    /// live bars grow to the server's "now", whatever the browser's clock says.
    pub clock_offset_ms: i64,
}

/// One node's bar on the run timeline: where it starts and how wide it is, as
/// percentages of the time axis, and what it cost.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    /// The node.
    pub node_id: String,
    /// Its state.
    pub state: NodeState,
    /// Start, as a percentage of the axis.
    pub left: f64,
    /// Length, as a percentage of the axis.
    pub width: f64,
    /// Attempts, tokens and cost (or why there are none).
    pub detail: String,
    /// Whether its output was reused from an earlier run.
    pub reused: bool,
}

/// The run timeline: every node on one time axis.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    /// The length of the axis, in milliseconds.
    pub span_ms: u64,
    /// One bar per node, in the conclave's order.
    pub bars: Vec<Bar>,
}

impl RunView {
    /// Starts watching the run `record` describes.
    pub fn new(record: RunRecord) -> RunView {
        RunView {
            complete: record.summary.status.is_terminal(),
            record,
            last_seq: 0,
            attempts: HashMap::new(),
            tools: HashMap::new(),
            cache_waits: HashMap::new(),
            contradictions: Vec::new(),
            report: None,
            comparison: None,
            clock_offset_ms: 0,
        }
    }

    /// The run's id.
    pub fn id(&self) -> &str {
        &self.record.summary.id
    }

    /// Whether the run is still going (or waiting in the queue to).
    pub fn is_running(&self) -> bool {
        !self.record.summary.status.is_terminal()
    }

    /// Where node `id` stands in the run.
    pub fn node(&self, id: &str) -> Option<&NodeSummary> {
        self.record.nodes.iter().find(|n| n.node_id == id)
    }

    /// Applies one event of this run; false when it changes nothing the editor shows
    /// (streamed text, say), so watchers need not redraw.
    pub fn apply(&mut self, event: &RunEvent) -> bool {
        if event.run_id != self.record.summary.id || event.seq <= self.last_seq {
            return false;
        }
        self.last_seq = event.seq;
        let tool = self.note_tool(&event.kind);
        if tool || self.complete {
            // A finished run's record is complete already: only what it does not keep
            // (tool calls) is read from its events.
            return tool;
        }
        let noted = match &event.kind {
            EventKind::AttemptFailed { node_id, attempt, errors, .. } => {
                let failed = FailedAttempt { attempt: *attempt, errors: errors.clone() };
                self.attempts.entry(node_id.clone()).or_default().push(failed);
                true
            }
            // The same contradiction is reported to every node that receives it.
            EventKind::ContradictionDetected { contradiction, .. } if !self.contradictions.contains(contradiction) => {
                self.contradictions.push(contradiction.clone());
                true
            }
            EventKind::CacheOrder { node_id, role: CacheRole::Followed, waited_ms, .. } => {
                self.cache_waits.insert(node_id.clone(), *waited_ms);
                true
            }
            _ => false,
        };
        let changes_record = !matches!(effect_of(event), Effect::None);
        self.record.apply(event);
        noted || changes_record
    }

    /// Notes a tool call or a tool's result; false for any other event. A result
    /// answers the node's first call of the same tool still waiting for one.
    fn note_tool(&mut self, kind: &EventKind) -> bool {
        match kind {
            EventKind::ToolCall { node_id, tool, arguments } => {
                let arguments = serde_json::to_string(arguments).unwrap_or_default();
                let call = ToolActivity { tool: tool.clone(), arguments, result: None };
                self.tools.entry(node_id.clone()).or_default().push(call);
            }
            EventKind::ToolResult { node_id, tool, is_error, content, chars, duration_ms } => {
                let answer = ToolAnswer {
                    is_error: *is_error,
                    content: content.clone(),
                    chars: *chars,
                    duration_ms: *duration_ms,
                };
                let calls = self.tools.entry(node_id.clone()).or_default();
                match calls.iter_mut().find(|c| c.tool == *tool && c.result.is_none()) {
                    Some(call) => call.result = Some(answer),
                    None => {
                        calls.push(ToolActivity { tool: tool.clone(), arguments: String::new(), result: Some(answer) })
                    }
                }
            }
            _ => return false,
        }
        true
    }

    /// The timeline at server time `now_ms`: nodes still running end at `now_ms`.
    /// The axis starts when the first node started and spans a round length of at
    /// least ten seconds, so bars grow visibly while nodes run.
    pub fn timeline(&self, now_ms: u64) -> Timeline {
        let nodes = &self.record.nodes;
        let start = nodes.iter().filter_map(|n| n.started_ms).min().unwrap_or(self.record.summary.created_ms);
        let end_of = |n: &NodeSummary| match (n.started_ms, n.finished_ms) {
            // A node at work, or an approval waiting for its decision, grows with time.
            (Some(s), None) if matches!(n.state, NodeState::Running | NodeState::Waiting) => Some(now_ms.max(s)),
            (Some(s), end) => Some(end.unwrap_or(s)),
            (None, _) => None,
        };
        let last = nodes.iter().filter_map(end_of).max().unwrap_or(start);
        let span_ms = round_span(last.saturating_sub(start));
        let percent = |ms: u64| ms.saturating_sub(start) as f64 * 100.0 / span_ms as f64;
        let bars = nodes
            .iter()
            .map(|n| {
                let (left, width) = match (n.started_ms, end_of(n)) {
                    (Some(s), Some(e)) => (percent(s), percent(e) - percent(s)),
                    _ => (0.0, 0.0),
                };
                Bar {
                    node_id: n.node_id.clone(),
                    state: n.state,
                    left,
                    width,
                    detail: self.bar_detail(n),
                    reused: n.reused_from.is_some(),
                }
            })
            .collect();
        Timeline { span_ms, bars }
    }

    /// What a node's bar says: attempts, tokens and cost for agents.
    fn bar_detail(&self, node: &NodeSummary) -> String {
        let is_agent = self.record.conclave.node(&node.node_id).is_some_and(|n| n.kind == NodeKind::Agent);
        if node.reused_from.is_some() {
            return "reused · no cost".to_string();
        }
        if node.cached_from.is_some() {
            return "cached · no cost".to_string();
        }
        if node.state == NodeState::Waiting {
            return "waiting for a decision".to_string();
        }
        if !is_agent || matches!(node.state, NodeState::Queued | NodeState::Skipped) {
            return node.state.as_str().to_string();
        }
        let attempts = match node.state {
            NodeState::Running => format!("attempt {}", node.attempts + 1),
            _ => format!("{} attempt{}", node.attempts, if node.attempts == 1 { "" } else { "s" }),
        };
        let tokens = node.usage.as_ref().map_or(0, |u| u.input_tokens + u.output_tokens);
        let cost = node.usage.as_ref().and_then(|u| u.cost_usd).map_or_else(|| "—".to_string(), dollars);
        let waited = match self.cache_waits.get(&node.node_id) {
            Some(ms) => format!(" · waited {ms} ms for the cache"),
            None => String::new(),
        };
        format!("{attempts} · {tokens} tokens · {cost}{waited}")
    }
}

/// A cost in US dollars, to a precision that shows small costs.
pub fn dollars(cost: f64) -> String {
    if cost > 0.0 && cost < 0.0001 { "<$0.0001".to_string() } else { format!("${}", fixed(cost, 4)) }
}

/// The axis length for `elapsed` milliseconds: the first of a few round lengths
/// (10 s, 20 s, 30 s, 1 min, 2 min, 5 min, ... 6 h) that holds it, or whole hours
/// beyond.
fn round_span(elapsed: u64) -> u64 {
    const STEPS_S: [u64; 12] = [10, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 21600];
    let seconds = elapsed.div_ceil(1000);
    let step = STEPS_S.iter().copied().find(|&s| s >= seconds).unwrap_or_else(|| seconds.div_ceil(3600) * 3600);
    step * 1000
}

/// The axis length as people say it: `10 s`, `2 min`, `1 h`.
pub fn span_label(span_ms: u64) -> String {
    let seconds = span_ms / 1000;
    match seconds {
        s if s < 60 => format!("{s} s"),
        s if s < 3600 => format!("{} min", s / 60),
        s => format!("{} h", s / 3600),
    }
}
