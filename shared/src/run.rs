//! Run records as the store keeps them and the API and CLI show them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::conclave::Conclave;
use crate::events::{EventKind, NodeOutput, RunEvent, Usage};
use crate::outcome::RunStatus;
use std::collections::HashMap;

/// Where a node stands within a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum NodeState {
    /// Waiting for its inputs.
    Queued,
    /// Working.
    Running,
    /// An approval node waiting for a person's decision.
    Waiting,
    /// Done with an output.
    Succeeded,
    /// Failed.
    Failed,
    /// Not run: something upstream failed, or a route took another branch
    /// (`NodeSummary::routed_out`).
    Skipped,
    /// Stopped unfinished because the run was cancelled.
    Cancelled,
    /// Unfinished when the process running it died.
    Interrupted,
}

impl NodeState {
    /// The name used in storage and on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeState::Queued => "queued",
            NodeState::Running => "running",
            NodeState::Waiting => "waiting",
            NodeState::Succeeded => "succeeded",
            NodeState::Failed => "failed",
            NodeState::Skipped => "skipped",
            NodeState::Cancelled => "cancelled",
            NodeState::Interrupted => "interrupted",
        }
    }

    /// Parses a stored name.
    pub fn parse(s: &str) -> Option<NodeState> {
        [
            NodeState::Queued,
            NodeState::Running,
            NodeState::Waiting,
            NodeState::Succeeded,
            NodeState::Failed,
            NodeState::Skipped,
            NodeState::Cancelled,
            NodeState::Interrupted,
        ]
        .into_iter()
        .find(|st| st.as_str() == s)
    }
}

/// One line of a run listing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RunSummary {
    /// Run id.
    pub id: String,
    /// Conclave that ran.
    pub conclave_id: String,
    /// Current status.
    pub status: RunStatus,
    /// When the run was created, in Unix milliseconds.
    pub created_ms: u64,
    /// When it ended, if it has.
    pub finished_ms: Option<u64>,
    /// For failed runs, the first failing node.
    pub failed_node: Option<String>,
    /// For failed, cancelled or interrupted runs, why.
    pub error: Option<String>,
    /// The pull (merge) request a review from a webhook reviews, as people write it
    /// (`owner/name#7`, `group/project!7`): [`crate::delivery::PullRequestRef::label`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_request: Option<String>,
}

/// A node's result within a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NodeSummary {
    /// Node id.
    pub node_id: String,
    /// Its state.
    pub state: NodeState,
    /// Its final output, once succeeded.
    pub output: Option<NodeOutput>,
    /// Its error, once failed (or the upstream node, once skipped).
    pub error: Option<String>,
    /// Tokens and cost: of the failed attempts so far, then of the whole node.
    pub usage: Option<Usage>,
    /// What an agent received: its first message as the model got it (for a reused
    /// node, the input it had in the earlier run).
    #[serde(default)]
    pub input: Option<String>,
    /// Answers the model gave: those that failed validation, plus the accepted one.
    #[serde(default)]
    pub attempts: u32,
    /// When it started, in Unix milliseconds.
    #[serde(default)]
    pub started_ms: Option<u64>,
    /// When it ended (succeeded, failed, reused, or stopped with the run).
    #[serde(default)]
    pub finished_ms: Option<u64>,
    /// The earlier run whose output it reused instead of running.
    #[serde(default)]
    pub reused_from: Option<String>,
    /// The run whose cached output it took instead of running ("cached").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_from: Option<String>,
    /// For a node of a loop's body: the iteration this entry is (an entry
    /// `loop/<iteration>/<node>`), or the one the body's own node last ran in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iteration: Option<u32>,
    /// Skipped because a route took another branch: "skipped (route)", not a failure.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub routed_out: bool,
}

impl NodeSummary {
    /// A node that has not started.
    pub fn queued(node_id: impl Into<String>) -> NodeSummary {
        NodeSummary {
            node_id: node_id.into(),
            state: NodeState::Queued,
            output: None,
            error: None,
            usage: None,
            input: None,
            attempts: 0,
            started_ms: None,
            finished_ms: None,
            reused_from: None,
            cached_from: None,
            iteration: None,
            routed_out: false,
        }
    }

    /// Applies one change made at `at_ms`. Every store and the editor change a node
    /// through this one definition.
    pub fn apply(&mut self, change: NodeChange, at_ms: u64) {
        match change {
            NodeChange::Started { input } => {
                *self = NodeSummary {
                    state: NodeState::Running,
                    input,
                    started_ms: Some(at_ms),
                    ..NodeSummary::queued(&self.node_id)
                };
            }
            NodeChange::AttemptFailed { attempt, usage } => {
                self.attempts = self.attempts.max(attempt);
                self.usage.get_or_insert_with(Usage::default).add(&usage);
            }
            NodeChange::Succeeded { output, usage } => {
                self.state = NodeState::Succeeded;
                self.output = Some(output);
                self.usage = Some(usage);
                self.attempts += 1;
                self.finished_ms = Some(at_ms);
            }
            NodeChange::Waiting => {
                self.state = NodeState::Waiting;
                self.started_ms = Some(at_ms);
            }
            NodeChange::Failed { error } => {
                self.state = NodeState::Failed;
                self.error = Some(error);
                self.finished_ms = Some(at_ms);
            }
            NodeChange::Skipped { error, route } => {
                self.state = NodeState::Skipped;
                self.error = Some(error);
                self.routed_out = route;
            }
            NodeChange::Cached { output, input, from_run } => {
                *self = NodeSummary {
                    state: NodeState::Succeeded,
                    output: Some(output),
                    input,
                    usage: Some(Usage::default()),
                    started_ms: Some(at_ms),
                    finished_ms: Some(at_ms),
                    cached_from: Some(from_run),
                    ..NodeSummary::queued(&self.node_id)
                };
            }
            NodeChange::Reused { output, input, from_run } => {
                *self = NodeSummary {
                    state: NodeState::Succeeded,
                    output: Some(output),
                    input,
                    started_ms: Some(at_ms),
                    finished_ms: Some(at_ms),
                    reused_from: Some(from_run),
                    ..NodeSummary::queued(&self.node_id)
                };
            }
        }
    }

    /// Ends a node still queued or running when its run ends at `at_ms`: it takes
    /// `unfinished`, and a running one's time ends there.
    pub fn end_unfinished(&mut self, unfinished: NodeState, at_ms: u64) {
        match self.state {
            // An approval still waiting ends with the run, as a running node does.
            NodeState::Running | NodeState::Waiting => {
                self.state = unfinished;
                self.finished_ms = Some(at_ms);
            }
            NodeState::Queued => self.state = unfinished,
            _ => {}
        }
    }
}

/// Everything stored about a run except its events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RunRecord {
    /// Summary fields.
    #[serde(flatten)]
    pub summary: RunSummary,
    /// The conclave exactly as it ran.
    pub conclave: Conclave,
    /// The run input.
    pub input: Value,
    /// Per-node results, in the conclave's node order.
    pub nodes: Vec<NodeSummary>,
}

/// What an event changes in a run record. Every store and the editor apply events
/// through this one definition, so they always agree.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Nothing beyond the event log.
    None,
    /// The run's status changes (it is parked for a decision, or taken up again).
    RunStatus(RunStatus),
    /// One node changes (see [`NodeSummary::apply`]).
    Node {
        /// The node.
        node_id: String,
        /// How.
        change: NodeChange,
    },
    /// The run ends; nodes still queued or running take `unfinished`.
    RunEnd {
        /// Final status.
        status: RunStatus,
        /// The first failing node.
        failed_node: Option<String>,
        /// Why it failed or stopped.
        error: Option<String>,
        /// The state given to nodes that never finished.
        unfinished: NodeState,
    },
}

/// How one event changes one node.
#[derive(Debug, Clone, PartialEq)]
pub enum NodeChange {
    /// It began work on this input: running, timed from now, earlier results cleared.
    Started {
        /// What an agent received.
        input: Option<String>,
    },
    /// An answer failed validation: one more attempt, and its tokens.
    AttemptFailed {
        /// The attempt's number.
        attempt: u32,
        /// Its tokens and cost.
        usage: Usage,
    },
    /// It succeeded: its output, its total usage, one more (accepted) attempt.
    Succeeded {
        /// The output.
        output: NodeOutput,
        /// Tokens and cost over every attempt.
        usage: Usage,
    },
    /// It waits for a person's decision.
    Waiting,
    /// It failed.
    Failed {
        /// Error class and message.
        error: String,
    },
    /// It did not run because something upstream did not succeed, or (`route`)
    /// because a route took another branch.
    Skipped {
        /// Which upstream node.
        error: String,
        /// Whether a route's choice skipped it.
        route: bool,
    },
    /// Its output was taken from the cache: succeeded at once, costing nothing.
    Cached {
        /// The cached output.
        output: NodeOutput,
        /// The input it would have received.
        input: Option<String>,
        /// The run that stored it.
        from_run: String,
    },
    /// Its output was taken from an earlier run: succeeded at once, costing nothing.
    Reused {
        /// The earlier output.
        output: NodeOutput,
        /// The earlier input.
        input: Option<String>,
        /// The earlier run.
        from_run: String,
    },
}

/// The effect of `event` on its run's record.
pub fn effect_of(event: &RunEvent) -> Effect {
    let node = |node_id: &str, change| Effect::Node { node_id: node_id.to_string(), change };
    match &event.kind {
        EventKind::NodeStarted { node_id, input } => node(node_id, NodeChange::Started { input: input.clone() }),
        EventKind::NodeReused { node_id, from_run, output, input } => node(
            node_id,
            NodeChange::Reused { output: output.clone(), input: input.clone(), from_run: from_run.clone() },
        ),
        EventKind::NodeCached { node_id, from_run, output, input } => node(
            node_id,
            NodeChange::Cached { output: output.clone(), input: input.clone(), from_run: from_run.clone() },
        ),
        EventKind::AttemptFailed { node_id, attempt, usage, .. } => {
            node(node_id, NodeChange::AttemptFailed { attempt: *attempt, usage: usage.clone() })
        }
        EventKind::NodeCompleted { node_id, output, usage, .. } => {
            node(node_id, NodeChange::Succeeded { output: output.clone(), usage: usage.clone() })
        }
        EventKind::NodeFailed { node_id, error_kind, message } => {
            node(node_id, NodeChange::Failed { error: format!("{error_kind}: {message}") })
        }
        EventKind::NodeSkipped { node_id, because_of, route: false } => node(
            node_id,
            NodeChange::Skipped { error: format!("skipped because `{because_of}` did not succeed"), route: false },
        ),
        EventKind::NodeSkipped { node_id, because_of, route: true } => node(
            node_id,
            NodeChange::Skipped { error: format!("skipped (route): `{because_of}` took another branch"), route: true },
        ),
        EventKind::RunFinished { status, failed_node, error } => Effect::RunEnd {
            status: *status,
            failed_node: failed_node.clone(),
            error: error.clone(),
            unfinished: if *status == RunStatus::Interrupted { NodeState::Interrupted } else { NodeState::Cancelled },
        },
        EventKind::ApprovalRequested { node_id, .. } => node(node_id, NodeChange::Waiting),
        EventKind::ApprovalDecided { node_id, approved: true, by, comment } => node(
            node_id,
            NodeChange::Succeeded {
                output: NodeOutput::Json(serde_json::json!({"approved": true, "by": by, "comment": comment})),
                usage: Usage::default(),
            },
        ),
        EventKind::ApprovalDecided { node_id, approved: false, by, comment } => {
            let said = comment.as_ref().map(|c| format!(": {c}")).unwrap_or_default();
            node(node_id, NodeChange::Failed { error: format!("rejected by {by}{said}") })
        }
        EventKind::RunWaiting { .. } => Effect::RunStatus(RunStatus::Waiting),
        EventKind::RunResumed { .. } => Effect::RunStatus(RunStatus::Running),
        EventKind::RunStarted { .. }
        | EventKind::TextDelta { .. }
        | EventKind::ToolCall { .. }
        | EventKind::ToolResult { .. }
        | EventKind::SchemaLowered { .. }
        | EventKind::DialectDowngraded { .. }
        | EventKind::CacheOrder { .. }
        | EventKind::ProviderRetry { .. }
        | EventKind::FindingsChecked { .. }
        | EventKind::ContradictionDetected { .. }
        | EventKind::InputFitted { .. }
        | EventKind::CountMismatch { .. }
        | EventKind::CommandExited { .. } => Effect::None,
    }
}

/// The iteration, and the id of the body's own node, of a node of a loop's body as
/// events name it: `loop/<iteration>/<node>` is iteration `<iteration>` of `<node>`,
/// and `lane/loop/2/check` (a loop inside the conclave node `lane`) is iteration 2
/// of `lane/check`. `None` for any other id.
pub fn iteration_of(node_id: &str) -> Option<(u32, String)> {
    let (scope, node) = node_id.rsplit_once('/')?;
    let (loop_scope, iteration) = scope.rsplit_once('/')?;
    let iteration = iteration.parse().ok()?;
    let outer = loop_scope.rsplit_once('/').map_or(String::new(), |(outer, _)| format!("{outer}/"));
    Some((iteration, format!("{outer}{node}")))
}

impl RunRecord {
    /// A new run: `running`, every node `queued`.
    pub fn new(id: String, conclave: Conclave, input: Value, created_ms: u64) -> RunRecord {
        let nodes = conclave.nodes.iter().map(|n| NodeSummary::queued(&n.id)).collect();
        let summary = RunSummary {
            id,
            conclave_id: conclave.id.clone(),
            status: RunStatus::Running,
            created_ms,
            finished_ms: None,
            failed_node: None,
            error: None,
            pull_request: crate::delivery::PullRequestRef::of_input(&input).map(|pr| pr.label()),
        };
        RunRecord { summary, conclave, input, nodes }
    }

    /// Applies one event to the record.
    pub fn apply(&mut self, event: &RunEvent) {
        self.apply_located(event, None);
    }

    /// Applies one event, finding nodes by `positions` (node id to index in `nodes`),
    /// for callers that keep such an index; an entry the event adds (an iteration of
    /// a loop's body) is added to it.
    pub fn apply_indexed(&mut self, event: &RunEvent, positions: &mut HashMap<String, usize>) {
        self.apply_located(event, Some(positions));
    }

    fn apply_located(&mut self, event: &RunEvent, mut positions: Option<&mut HashMap<String, usize>>) {
        let locate = |nodes: &[NodeSummary], positions: &Option<&mut HashMap<String, usize>>, id: &str| match positions
        {
            Some(positions) => positions.get(id).copied(),
            None => nodes.iter().position(|n| n.node_id == id),
        };
        match effect_of(event) {
            Effect::None => {}
            Effect::RunStatus(status) => self.summary.status = status,
            Effect::Node { node_id, change } => {
                let iteration = iteration_of(&node_id);
                let at = match locate(&self.nodes, &positions, &node_id) {
                    Some(i) => Some(i),
                    // Each iteration of a loop's body, and each node of a conclave a
                    // node runs, adds its entry: `loop/2/node`, `lane/node`.
                    None if node_id.contains('/') => {
                        let entry =
                            NodeSummary { iteration: iteration.as_ref().map(|i| i.0), ..NodeSummary::queued(&node_id) };
                        self.nodes.push(entry);
                        if let Some(positions) = positions.as_deref_mut() {
                            positions.insert(node_id.clone(), self.nodes.len() - 1);
                        }
                        Some(self.nodes.len() - 1)
                    }
                    None => None,
                };
                // The body's own node shows the iteration it last ran in.
                if let Some((n, base)) = &iteration
                    && let Some(template) = locate(&self.nodes, &positions, base).and_then(|i| self.nodes.get_mut(i))
                {
                    template.apply(change.clone(), event.at_ms);
                    template.iteration = Some(*n);
                }
                if let Some(node) = at.and_then(|i| self.nodes.get_mut(i)) {
                    node.apply(change, event.at_ms);
                    node.iteration = iteration.map(|(n, _)| n);
                }
            }
            Effect::RunEnd { status, failed_node, error, unfinished } => {
                let summary = &mut self.summary;
                summary.status = status;
                summary.finished_ms = Some(event.at_ms);
                summary.failed_node = failed_node;
                summary.error = error;
                for node in &mut self.nodes {
                    node.end_unfinished(unfinished, event.at_ms);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conclave::{Edge, Node, NodeKind, Settings};
    use serde_json::json;

    fn record() -> RunRecord {
        let node = |id: &str, kind| Node::new(id, kind);
        let conclave = Conclave {
            version: 1,
            id: "c".into(),
            name: "C".into(),
            description: String::new(),
            settings: Settings::default(),
            nodes: vec![node("in", NodeKind::Trigger), node("a", NodeKind::Output), node("b", NodeKind::Output)],
            edges: vec![
                Edge { from: "in".into(), to: "a".into(), case: None },
                Edge { from: "in".into(), to: "b".into(), case: None },
            ],
        };
        RunRecord::new("r2".into(), conclave, json!("hi"), 100)
    }

    fn at(seq: u64, at_ms: u64, kind: EventKind) -> RunEvent {
        RunEvent { run_id: "r2".into(), seq, at_ms, kind }
    }

    #[test]
    fn a_reused_node_succeeds_at_once_with_its_earlier_output_and_input_and_costs_nothing() {
        let event = at(
            2,
            150,
            EventKind::NodeReused {
                node_id: "a".into(),
                from_run: "r1".into(),
                output: NodeOutput::Text("earlier".into()),
                input: Some("earlier input".into()),
            },
        );
        assert_eq!(
            effect_of(&event),
            Effect::Node {
                node_id: "a".into(),
                change: NodeChange::Reused {
                    output: NodeOutput::Text("earlier".into()),
                    input: Some("earlier input".into()),
                    from_run: "r1".into(),
                },
            }
        );
        let mut run = record();
        run.apply(&event);
        let expected = NodeSummary {
            state: NodeState::Succeeded,
            output: Some(NodeOutput::Text("earlier".into())),
            input: Some("earlier input".into()),
            started_ms: Some(150),
            finished_ms: Some(150),
            reused_from: Some("r1".into()),
            ..NodeSummary::queued("a")
        };
        assert_eq!(run.nodes[1], expected);
    }

    #[test]
    fn a_node_keeps_its_input_timing_attempts_and_usage() {
        let mut run = record();
        let failed_usage = Usage::tokens(5, 1);
        let total = Usage { cost_usd: Some(0.5), ..Usage::tokens(12, 3) };
        for event in [
            at(1, 110, EventKind::NodeStarted { node_id: "a".into(), input: Some("## Run input".into()) }),
            at(
                2,
                120,
                EventKind::AttemptFailed {
                    node_id: "a".into(),
                    attempt: 1,
                    errors: vec!["/x: missing".into()],
                    raw: "{}".into(),
                    usage: failed_usage.clone(),
                },
            ),
        ] {
            run.apply(&event);
        }
        let live = &run.nodes[1];
        assert_eq!(
            (live.state, live.attempts, live.started_ms, live.finished_ms, live.usage.clone()),
            (NodeState::Running, 1, Some(110), None, Some(failed_usage)),
            "a running node shows its failed attempts and their tokens"
        );
        let done = EventKind::NodeCompleted {
            node_id: "a".into(),
            output: NodeOutput::Json(json!({"x": 1})),
            usage: total.clone(),
            duration_ms: 30,
        };
        run.apply(&at(3, 140, done));
        let expected = NodeSummary {
            state: NodeState::Succeeded,
            output: Some(NodeOutput::Json(json!({"x": 1}))),
            usage: Some(total),
            input: Some("## Run input".into()),
            attempts: 2,
            started_ms: Some(110),
            finished_ms: Some(140),
            ..NodeSummary::queued("a")
        };
        assert_eq!(run.nodes[1], expected);
    }

    #[test]
    fn a_cancelled_run_ends_its_running_nodes_at_the_cancellation() {
        let mut run = record();
        run.apply(&at(1, 110, EventKind::NodeStarted { node_id: "a".into(), input: None }));
        let finished = EventKind::RunFinished {
            status: RunStatus::Cancelled,
            failed_node: None,
            error: Some("cancelled by request".into()),
        };
        run.apply(&at(2, 170, finished));
        let ends: Vec<(NodeState, Option<u64>)> = run.nodes.iter().map(|n| (n.state, n.finished_ms)).collect();
        assert_eq!(
            ends,
            vec![(NodeState::Cancelled, None), (NodeState::Cancelled, Some(170)), (NodeState::Cancelled, None)]
        );
        assert_eq!(run.summary.finished_ms, Some(170));
    }

    #[test]
    fn a_node_started_again_clears_its_earlier_results() {
        let mut node = NodeSummary::queued("a");
        node.apply(NodeChange::Failed { error: "provider: down".into() }, 5);
        node.apply(NodeChange::Started { input: Some("again".into()) }, 9);
        assert_eq!(
            node,
            NodeSummary {
                state: NodeState::Running,
                input: Some("again".into()),
                started_ms: Some(9),
                ..NodeSummary::queued("a")
            }
        );
    }

    #[test]
    fn records_stored_before_timing_was_kept_still_parse() {
        let node: NodeSummary = serde_json::from_value(
            json!({"node_id": "a", "state": "succeeded", "output": null, "error": null, "usage": null}),
        )
        .expect("parses");
        assert_eq!(node, NodeSummary { state: NodeState::Succeeded, ..NodeSummary::queued("a") });
    }
}
