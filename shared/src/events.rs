//! Typed run events: every step of a run, in order, with a sequence number per run.
//!
//! The engine emits these to subscribers and to the run store; the API streams them
//! as Server-Sent Events; the editor and the CLI render them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::lowering::{LoweringNote, OutputDialect};
use crate::outcome::{ErrorKind, RunStatus};
use crate::review::{CountMismatch, FindingGroup, FindingsCheck};
use crate::sandbox::SandboxRecord;

/// One event of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RunEvent {
    /// The run this event belongs to.
    pub run_id: String,
    /// Position in the run's event sequence, starting at 1, strictly increasing.
    pub seq: u64,
    /// Milliseconds since the Unix epoch when the event was emitted.
    pub at_ms: u64,
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
}

/// What happened, tagged by `type` on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    /// The run began.
    RunStarted {
        /// Conclave being run.
        conclave_id: String,
        /// Number of nodes in the graph.
        node_count: usize,
    },
    /// The run was taken up again after the process running it stopped: the nodes
    /// in `kept` had succeeded and keep their outputs; the others run again.
    RunResumed {
        /// The nodes whose outputs are kept.
        kept: Vec<String>,
    },
    /// A node's inputs are all ready and it began work.
    NodeStarted {
        /// The node.
        node_id: String,
        /// What an agent received: its first message, built from the run input and
        /// its upstream outputs, exactly as the model got it. Absent for triggers and
        /// outputs, whose output shows everything they received.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        input: Option<String>,
    },
    /// A node was not run: its output is taken from an earlier run of the same
    /// conclave (running from a node re-runs only it and its descendants). It ends
    /// succeeded with that output and costs nothing in this run.
    NodeReused {
        /// The node.
        node_id: String,
        /// The earlier run whose output is reused.
        from_run: String,
        /// The output it had there.
        output: NodeOutput,
        /// The input it had there.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        input: Option<String>,
    },
    /// A node was not run: its output is taken from the cache, where an earlier run
    /// stored it under the hash of everything that determines it (the node's
    /// settings, its schema, provider and model, and its input). It ends succeeded
    /// with that output, with no tokens and no cost.
    NodeCached {
        /// The node.
        node_id: String,
        /// The run that stored the output.
        from_run: String,
        /// The output.
        output: NodeOutput,
        /// What the node would have received (the same as when it was stored).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        input: Option<String>,
    },
    /// A piece of streamed model text.
    TextDelta {
        /// The node.
        node_id: String,
        /// The text received.
        text: String,
    },
    /// The model asked for a tool.
    ToolCall {
        /// The node.
        node_id: String,
        /// Tool id.
        tool: String,
        /// Arguments as the model sent them.
        arguments: Value,
    },
    /// A tool call was answered (what the model reads next).
    ToolResult {
        /// The node.
        node_id: String,
        /// Tool id, as in its `tool_call` (`read_file`, `mcp:docs/git_log`).
        tool: String,
        /// Whether the call failed; the model reads the error and the run goes on.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
        /// The result as the model reads it, cut to its first 2,000 characters here
        /// (the model reads it whole, within the tool's own cap).
        content: String,
        /// The result's length in characters, before the cut.
        chars: u64,
        /// How long the call took, in milliseconds.
        duration_ms: u64,
    },
    /// A node's output schema was adapted to its provider (sent once per agent with a
    /// schema, before the run's first node starts).
    SchemaLowered {
        /// The node.
        node_id: String,
        /// The provider's schema dialect, or `prompt` for the prompt contract.
        target: String,
        /// Whether the provider's native structured output is used.
        native: bool,
        /// Every change made.
        notes: Vec<LoweringNote>,
        /// The root property holding findings, when the output is findings-shaped.
        /// Decided once, here; reports and comparisons read it rather than guess.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        findings_field: Option<String>,
        /// For providers whose servers differ in how they take a schema (OpenAI-
        /// compatible ones): the dialect the agent starts with, the one cached for its
        /// server when an earlier run had to step down.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dialect: Option<OutputDialect>,
    },
    /// A server rejected an agent's structured-output dialect, so the agent's provider
    /// steps down to the next one for the rest of the run (and the store remembers it
    /// for later runs against the same server).
    DialectDowngraded {
        /// The agent whose call was rejected.
        node_id: String,
        /// The provider.
        provider: String,
        /// The server's base URL.
        endpoint: String,
        /// The rejected dialect.
        from: OutputDialect,
        /// The dialect used from now on.
        to: OutputDialect,
        /// The lowering note the report shows: what the server said and what changed.
        note: LoweringNote,
    },
    /// How an agent's first call was ordered for the vendor's prompt cache: it led
    /// (first to send the prefix its siblings share), followed (waited until the
    /// leader's response began, so the prefix was in the cache, or the leader
    /// failed), or went unordered, and why.
    CacheOrder {
        /// The agent.
        node_id: String,
        /// Led, followed or unordered.
        role: CacheRole,
        /// Why.
        reason: CacheOrderReason,
        /// How long a follower waited for its leader, in milliseconds.
        #[serde(default)]
        waited_ms: u64,
        /// The agent a follower waited for.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        leader: Option<String>,
    },
    /// A provider call failed in a way that may pass and is being retried.
    ProviderRetry {
        /// The node.
        node_id: String,
        /// Retry number, starting at 1.
        retry: u32,
        /// What went wrong.
        error: String,
        /// The wait before the retry.
        delay_ms: u64,
    },
    /// An attempt produced an answer that failed validation; another may follow.
    AttemptFailed {
        /// The node.
        node_id: String,
        /// Attempt number, starting at 1.
        attempt: u32,
        /// What was wrong, one line each (instance path and message).
        errors: Vec<String>,
        /// The raw answer that failed.
        raw: String,
        /// Tokens (and cost) this attempt used.
        #[serde(default)]
        usage: Usage,
    },
    /// The engine compared the findings of a node's sibling reviewers before running it.
    FindingsChecked {
        /// The node about to receive the findings.
        node_id: String,
        /// What the comparison found.
        check: FindingsCheck,
    },
    /// One contradiction among sibling reviewers (also part of `findings_checked`).
    ContradictionDetected {
        /// The node about to receive the findings.
        node_id: String,
        /// The contradicting findings.
        contradiction: FindingGroup,
    },
    /// An agent's input did not fit its provider's context window (the embedded
    /// model's) with room for its answer, so the findings it was given were cut in a
    /// fixed order (the longest descriptions shortened, then the lowest severities left
    /// out) until it did; the agent's input says so too.
    InputFitted {
        /// The agent.
        node_id: String,
        /// The window, the prompt's size before and after, and what was cut.
        fit: crate::fit::InputFit,
    },
    /// An agent's `counts` disagree with its own `findings`.
    CountMismatch {
        /// The agent.
        node_id: String,
        /// Each severity whose count is wrong.
        mismatches: Vec<CountMismatch>,
    },
    /// A command node's program ended: how, and what it printed (each stream up to
    /// the node's cap; what was cut is counted).
    CommandExited {
        /// The node.
        node_id: String,
        /// The program and its arguments, as run.
        argv: Vec<String>,
        /// Its exit code; absent when a signal ended it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
        /// What it printed to stdout, up to the cap.
        stdout: String,
        /// What it printed to stderr, up to the cap.
        stderr: String,
        /// Bytes of stdout beyond the cap, dropped.
        #[serde(default)]
        stdout_cut_bytes: u64,
        /// Bytes of stderr beyond the cap, dropped.
        #[serde(default)]
        stderr_cut_bytes: u64,
        /// How long it ran.
        duration_ms: u64,
        /// What confined it; absent in runs stored before commands were sandboxed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sandbox: Option<SandboxRecord>,
    },
    /// An approval node asks a person to approve or reject; it waits for them.
    ApprovalRequested {
        /// The node.
        node_id: String,
        /// What the approver is asked.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        prompt: String,
        /// When the time to decide runs out, in Unix milliseconds.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expires_ms: Option<u64>,
    },
    /// A person approved or rejected at an approval node (or its time ran out).
    ApprovalDecided {
        /// The node.
        node_id: String,
        /// Approved, or not.
        approved: bool,
        /// Who decided (`timeout` when the time ran out).
        by: String,
        /// What they said.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        comment: Option<String>,
    },
    /// Nothing can run until people decide at these approval nodes: the run is parked
    /// (`waiting`) and no process holds it.
    RunWaiting {
        /// The approval nodes waiting for a decision.
        nodes: Vec<String>,
    },
    /// A node finished with its output.
    NodeCompleted {
        /// The node.
        node_id: String,
        /// What it produced.
        output: NodeOutput,
        /// Tokens used, summed over attempts.
        usage: Usage,
        /// Wall time of the node.
        duration_ms: u64,
    },
    /// A node failed; its descendants will be skipped.
    NodeFailed {
        /// The node.
        node_id: String,
        /// Error class, such as `timeout`, `provider` or `invalid_output`.
        error_kind: ErrorKind,
        /// What went wrong and what to do.
        message: String,
    },
    /// A node did not run: an upstream node failed or was skipped, or (with
    /// `route`) no input reached it because a route took another branch. A node
    /// skipped by a route is not a failure.
    NodeSkipped {
        /// The node.
        node_id: String,
        /// The upstream node that caused the skip.
        because_of: String,
        /// True when the skip is a route's choice: every input of the node is on a
        /// branch a route did not take.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        route: bool,
    },
    /// The run ended.
    RunFinished {
        /// Final status.
        status: RunStatus,
        /// For failed runs, the first node that failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        failed_node: Option<String>,
        /// For failed or cancelled runs, why.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
}

impl EventKind {
    /// Every event type's wire name (the SSE event name), in the order of the enum.
    pub const TYPE_NAMES: [&'static str; 25] = [
        "run_started",
        "run_resumed",
        "node_started",
        "node_reused",
        "node_cached",
        "text_delta",
        "tool_call",
        "tool_result",
        "schema_lowered",
        "dialect_downgraded",
        "cache_order",
        "provider_retry",
        "attempt_failed",
        "findings_checked",
        "contradiction_detected",
        "input_fitted",
        "count_mismatch",
        "command_exited",
        "approval_requested",
        "approval_decided",
        "run_waiting",
        "node_completed",
        "node_failed",
        "node_skipped",
        "run_finished",
    ];

    /// The wire name of the event type.
    pub fn type_name(&self) -> &'static str {
        match self {
            EventKind::RunStarted { .. } => "run_started",
            EventKind::RunResumed { .. } => "run_resumed",
            EventKind::NodeStarted { .. } => "node_started",
            EventKind::NodeReused { .. } => "node_reused",
            EventKind::NodeCached { .. } => "node_cached",
            EventKind::TextDelta { .. } => "text_delta",
            EventKind::ToolCall { .. } => "tool_call",
            EventKind::ToolResult { .. } => "tool_result",
            EventKind::SchemaLowered { .. } => "schema_lowered",
            EventKind::DialectDowngraded { .. } => "dialect_downgraded",
            EventKind::CacheOrder { .. } => "cache_order",
            EventKind::ProviderRetry { .. } => "provider_retry",
            EventKind::AttemptFailed { .. } => "attempt_failed",
            EventKind::FindingsChecked { .. } => "findings_checked",
            EventKind::ContradictionDetected { .. } => "contradiction_detected",
            EventKind::InputFitted { .. } => "input_fitted",
            EventKind::CountMismatch { .. } => "count_mismatch",
            EventKind::CommandExited { .. } => "command_exited",
            EventKind::ApprovalRequested { .. } => "approval_requested",
            EventKind::ApprovalDecided { .. } => "approval_decided",
            EventKind::RunWaiting { .. } => "run_waiting",
            EventKind::NodeCompleted { .. } => "node_completed",
            EventKind::NodeFailed { .. } => "node_failed",
            EventKind::NodeSkipped { .. } => "node_skipped",
            EventKind::RunFinished { .. } => "run_finished",
        }
    }

    /// The node the event is about, if any.
    pub fn node_id(&self) -> Option<&str> {
        match self {
            EventKind::NodeStarted { node_id, .. }
            | EventKind::NodeReused { node_id, .. }
            | EventKind::NodeCached { node_id, .. }
            | EventKind::TextDelta { node_id, .. }
            | EventKind::ToolCall { node_id, .. }
            | EventKind::ToolResult { node_id, .. }
            | EventKind::SchemaLowered { node_id, .. }
            | EventKind::DialectDowngraded { node_id, .. }
            | EventKind::CacheOrder { node_id, .. }
            | EventKind::ProviderRetry { node_id, .. }
            | EventKind::FindingsChecked { node_id, .. }
            | EventKind::ContradictionDetected { node_id, .. }
            | EventKind::InputFitted { node_id, .. }
            | EventKind::CountMismatch { node_id, .. }
            | EventKind::CommandExited { node_id, .. }
            | EventKind::ApprovalRequested { node_id, .. }
            | EventKind::ApprovalDecided { node_id, .. }
            | EventKind::AttemptFailed { node_id, .. }
            | EventKind::NodeCompleted { node_id, .. }
            | EventKind::NodeFailed { node_id, .. }
            | EventKind::NodeSkipped { node_id, .. } => Some(node_id),
            EventKind::RunStarted { .. }
            | EventKind::RunResumed { .. }
            | EventKind::RunWaiting { .. }
            | EventKind::RunFinished { .. } => None,
        }
    }
}

/// How an agent's first call was ordered for the vendor's prompt cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum CacheRole {
    /// Sent first; its siblings waited until its response began.
    Led,
    /// Waited for the sibling that led.
    Followed,
    /// Went at once, in no order.
    Unordered,
}

/// Why an agent's first call was ordered as it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum CacheOrderReason {
    /// Its provider does not cache prompts, or `CONCLAVE_PROMPT_CACHE` is `off`.
    NotCaching,
    /// The prefix its siblings share is shorter than the model's minimum cacheable
    /// length (unknown models: the largest documented minimum).
    ShortPrefix,
    /// No other agent of the run calls its provider and model.
    NoSibling,
    /// It was the first to send the shared prefix, writing it to the cache.
    FirstToWrite,
    /// The leader's response began, so the prefix was read from the cache.
    PrefixCached,
    /// The leader failed before its response began; it went without the cache.
    LeaderFailed,
}

impl CacheOrderReason {
    /// The reason as people read it.
    pub fn describe(self) -> &'static str {
        match self {
            CacheOrderReason::NotCaching => "the provider does not cache prompts",
            CacheOrderReason::ShortPrefix => "the shared prefix is below the model's minimum cacheable length",
            CacheOrderReason::NoSibling => "no other agent shares the prefix",
            CacheOrderReason::FirstToWrite => "first to write the shared prefix",
            CacheOrderReason::PrefixCached => "the leader's response began, so the prefix was cached",
            CacheOrderReason::LeaderFailed => "the leader failed before its response began",
        }
    }
}

/// A node's output as handed downstream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "format", content = "value", rename_all = "snake_case")]
pub enum NodeOutput {
    /// Validated structured output.
    Json(Value),
    /// Free text.
    Text(String),
}

impl NodeOutput {
    /// The value placed in a downstream node's input: JSON as is, text as a string.
    pub fn to_input_value(&self) -> Value {
        match self {
            NodeOutput::Json(v) => v.clone(),
            NodeOutput::Text(t) => Value::String(t.clone()),
        }
    }
}

/// Token usage and cost of one node.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Cost in US dollars, when the model's price is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Prompt tokens read from the provider's prompt cache (not in `input_tokens`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_read_tokens: u64,
    /// Prompt tokens written to the provider's prompt cache (not in `input_tokens`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_tokens: u64,
    /// What the prompt cache saved, in US dollars, against paying every cached token
    /// at the input price (negative when writes cost more than reads saved).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_savings_usd: Option<f64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Usage {
    /// Usage of `input` prompt tokens and `output` generated ones, nothing cached.
    pub fn tokens(input: u64, output: u64) -> Usage {
        Usage { input_tokens: input, output_tokens: output, ..Usage::default() }
    }

    /// Every prompt token: those paid in full, read from the cache and written to it.
    pub fn prompt_tokens(&self) -> u64 {
        self.input_tokens + self.cache_read_tokens + self.cache_write_tokens
    }

    /// Adds another attempt's usage to this one.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        self.cost_usd = add_money(self.cost_usd, other.cost_usd);
        self.cache_savings_usd = add_money(self.cache_savings_usd, other.cache_savings_usd);
    }

    /// This usage less `earlier` (what was added since `earlier` was taken).
    pub fn since(&self, earlier: &Usage) -> Usage {
        Usage {
            input_tokens: self.input_tokens.saturating_sub(earlier.input_tokens),
            output_tokens: self.output_tokens.saturating_sub(earlier.output_tokens),
            cost_usd: self.cost_usd.map(|c| c - earlier.cost_usd.unwrap_or(0.0)),
            cache_read_tokens: self.cache_read_tokens.saturating_sub(earlier.cache_read_tokens),
            cache_write_tokens: self.cache_write_tokens.saturating_sub(earlier.cache_write_tokens),
            cache_savings_usd: self.cache_savings_usd.map(|c| c - earlier.cache_savings_usd.unwrap_or(0.0)),
        }
    }
}

fn add_money(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_tagged_by_type_and_flattened() {
        let ev = RunEvent {
            run_id: "r1".into(),
            seq: 3,
            at_ms: 10,
            kind: EventKind::NodeSkipped { node_id: "d".into(), because_of: "b".into(), route: false },
        };
        let v = serde_json::to_value(&ev).expect("serializes");
        assert_eq!(
            v,
            serde_json::json!({"run_id":"r1","seq":3,"at_ms":10,"type":"node_skipped","node_id":"d","because_of":"b"})
        );
        let back: RunEvent = serde_json::from_value(v).expect("parses");
        assert_eq!(back, ev);
        assert_eq!(back.kind.type_name(), "node_skipped");
        assert_eq!(back.kind.node_id(), Some("d"));
    }

    #[test]
    fn every_type_name_is_listed_in_enum_order() {
        let output = NodeOutput::Text("x".into());
        let kinds = [
            EventKind::RunStarted { conclave_id: "c".into(), node_count: 1 },
            EventKind::RunResumed { kept: Vec::new() },
            EventKind::NodeStarted { node_id: "a".into(), input: None },
            EventKind::NodeReused { node_id: "a".into(), from_run: "r0".into(), output: output.clone(), input: None },
        ];
        for (kind, name) in kinds.iter().zip(EventKind::TYPE_NAMES) {
            assert_eq!(kind.type_name(), name);
        }
        assert_eq!(EventKind::TYPE_NAMES.len(), 25);
    }

    #[test]
    fn cache_order_says_the_role_the_reason_and_the_wait() {
        let kind = EventKind::CacheOrder {
            node_id: "b".into(),
            role: CacheRole::Followed,
            reason: CacheOrderReason::PrefixCached,
            waited_ms: 310,
            leader: Some("a".into()),
        };
        let v = serde_json::to_value(&kind).expect("serializes");
        assert_eq!(
            v,
            serde_json::json!({"type":"cache_order","node_id":"b","role":"followed","reason":"prefix_cached","waited_ms":310,"leader":"a"})
        );
        assert_eq!(serde_json::from_value::<EventKind>(v).expect("parses"), kind);
        let unordered: EventKind =
            serde_json::from_str(r#"{"type":"cache_order","node_id":"a","role":"unordered","reason":"short_prefix"}"#)
                .expect("a wait and a leader are optional");
        assert_eq!(unordered.node_id(), Some("a"));
    }

    #[test]
    fn node_reused_round_trips_with_its_earlier_input_and_output() {
        let ev = RunEvent {
            run_id: "r2".into(),
            seq: 4,
            at_ms: 7,
            kind: EventKind::NodeReused {
                node_id: "security".into(),
                from_run: "r1".into(),
                output: NodeOutput::Json(serde_json::json!({"findings": []})),
                input: Some("## Run input".into()),
            },
        };
        let v = serde_json::to_value(&ev).expect("serializes");
        assert_eq!(
            v,
            serde_json::json!({"run_id":"r2","seq":4,"at_ms":7,"type":"node_reused","node_id":"security","from_run":"r1",
                "output":{"format":"json","value":{"findings":[]}},"input":"## Run input"})
        );
        assert_eq!(serde_json::from_value::<RunEvent>(v).expect("parses"), ev);
        let started: RunEvent =
            serde_json::from_str(r#"{"run_id":"r","seq":1,"at_ms":1,"type":"node_started","node_id":"a"}"#)
                .expect("an event stored before inputs were recorded still parses");
        assert_eq!(started.kind, EventKind::NodeStarted { node_id: "a".into(), input: None });
    }

    #[test]
    fn usage_adds_cost_only_where_known() {
        let mut u = Usage::tokens(1, 2);
        u.add(&Usage { cost_usd: Some(0.5), cache_read_tokens: 7, ..Usage::tokens(10, 20) });
        assert_eq!(u, Usage { cost_usd: Some(0.5), cache_read_tokens: 7, ..Usage::tokens(11, 22) });
        assert_eq!(u.prompt_tokens(), 18);
        assert_eq!(
            u.since(&Usage::tokens(1, 2)),
            Usage { cost_usd: Some(0.5), cache_read_tokens: 7, ..Usage::tokens(10, 20) }
        );
    }
}
