//! Run records as the store keeps them and the API and CLI show them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::conclave::Conclave;
use crate::events::{EventKind, NodeOutput, RunEvent, Usage};
use std::collections::HashMap;
use std::fmt;

/// Where a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// In progress.
    Running,
    /// Every node completed or was legitimately skipped, none failed.
    Succeeded,
    /// At least one node failed.
    Failed,
    /// Stopped on request.
    Cancelled,
    /// The process running it died before it finished.
    Interrupted,
}

impl RunStatus {
    /// The name used in storage and on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Succeeded => "succeeded",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
            RunStatus::Interrupted => "interrupted",
        }
    }

    /// Parses a stored name.
    pub fn parse(s: &str) -> Option<RunStatus> {
        [RunStatus::Running, RunStatus::Succeeded, RunStatus::Failed, RunStatus::Cancelled, RunStatus::Interrupted]
            .into_iter()
            .find(|st| st.as_str() == s)
    }

    /// True once the run can no longer change.
    pub fn is_terminal(self) -> bool {
        self != RunStatus::Running
    }
}

/// Where a node stands within a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum NodeState {
    /// Waiting for its inputs.
    Queued,
    /// Working.
    Running,
    /// Done with an output.
    Succeeded,
    /// Failed.
    Failed,
    /// Not run because something upstream failed.
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
    /// Tokens and cost.
    pub usage: Option<Usage>,
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

/// Why a node (or a run) failed, as a class a caller can act on: the CLI maps it to
/// an exit code, reports and the editor show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The provider is not set up (not logged in, a missing key or binary), found
    /// when it was called.
    Config,
    /// The provider failed (after retries of faults that may pass).
    Provider,
    /// The node ran past its timeout.
    Timeout,
    /// The answer still did not match the output schema after every attempt.
    InvalidOutput,
    /// The run store failed.
    Store,
    /// Anything else inside Conclave.
    Internal,
}

impl ErrorKind {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Config => "config",
            ErrorKind::Provider => "provider",
            ErrorKind::Timeout => "timeout",
            ErrorKind::InvalidOutput => "invalid_output",
            ErrorKind::Store => "store",
            ErrorKind::Internal => "internal",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What an event changes in a run record. Every store and the editor apply events
/// through this one definition, so they always agree.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Nothing beyond the event log.
    None,
    /// One node's state changes.
    Node {
        /// The node.
        node_id: String,
        /// Its new state.
        state: NodeState,
        /// Its output, when it succeeded.
        output: Option<NodeOutput>,
        /// Its error (or the upstream node it was skipped for).
        error: Option<String>,
        /// Its usage, when it succeeded.
        usage: Option<Usage>,
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

/// The effect of `event` on its run's record.
pub fn effect_of(event: &RunEvent) -> Effect {
    let node = |node_id: &str, state, output, error, usage| Effect::Node {
        node_id: node_id.to_string(),
        state,
        output,
        error,
        usage,
    };
    match &event.kind {
        EventKind::NodeStarted { node_id } => node(node_id, NodeState::Running, None, None, None),
        EventKind::NodeCompleted { node_id, output, usage, .. } => {
            node(node_id, NodeState::Succeeded, Some(output.clone()), None, Some(usage.clone()))
        }
        EventKind::NodeFailed { node_id, error_kind, message } => {
            node(node_id, NodeState::Failed, None, Some(format!("{error_kind}: {message}")), None)
        }
        EventKind::NodeSkipped { node_id, because_of } => node(
            node_id,
            NodeState::Skipped,
            None,
            Some(format!("skipped because `{because_of}` did not succeed")),
            None,
        ),
        EventKind::RunFinished { status, failed_node, error } => Effect::RunEnd {
            status: *status,
            failed_node: failed_node.clone(),
            error: error.clone(),
            unfinished: if *status == RunStatus::Interrupted { NodeState::Interrupted } else { NodeState::Cancelled },
        },
        EventKind::RunStarted { .. }
        | EventKind::TextDelta { .. }
        | EventKind::ToolCall { .. }
        | EventKind::SchemaLowered { .. }
        | EventKind::ProviderRetry { .. }
        | EventKind::FindingsChecked { .. }
        | EventKind::ContradictionDetected { .. }
        | EventKind::CountMismatch { .. }
        | EventKind::AttemptFailed { .. } => Effect::None,
    }
}

impl RunRecord {
    /// A new run: `running`, every node `queued`.
    pub fn new(id: String, conclave: Conclave, input: Value, created_ms: u64) -> RunRecord {
        let nodes = conclave
            .nodes
            .iter()
            .map(|n| NodeSummary {
                node_id: n.id.clone(),
                state: NodeState::Queued,
                output: None,
                error: None,
                usage: None,
            })
            .collect();
        let summary = RunSummary {
            id,
            conclave_id: conclave.id.clone(),
            status: RunStatus::Running,
            created_ms,
            finished_ms: None,
            failed_node: None,
            error: None,
        };
        RunRecord { summary, conclave, input, nodes }
    }

    /// Applies one event to the record.
    pub fn apply(&mut self, event: &RunEvent) {
        self.apply_located(event, |nodes, id| nodes.iter().position(|n| n.node_id == id));
    }

    /// Applies one event, finding nodes by `positions` (node id to index in `nodes`),
    /// for callers that keep such an index.
    pub fn apply_indexed(&mut self, event: &RunEvent, positions: &HashMap<String, usize>) {
        self.apply_located(event, |_, id| positions.get(id).copied());
    }

    fn apply_located(&mut self, event: &RunEvent, locate: impl Fn(&[NodeSummary], &str) -> Option<usize>) {
        match effect_of(event) {
            Effect::None => {}
            Effect::Node { node_id, state, output, error, usage } => {
                if let Some(node) = locate(&self.nodes, &node_id).and_then(|i| self.nodes.get_mut(i)) {
                    *node = NodeSummary { node_id, state, output, error, usage };
                }
            }
            Effect::RunEnd { status, failed_node, error, unfinished } => {
                let summary = &mut self.summary;
                summary.status = status;
                summary.finished_ms = Some(event.at_ms);
                summary.failed_node = failed_node;
                summary.error = error;
                for node in &mut self.nodes {
                    if matches!(node.state, NodeState::Queued | NodeState::Running) {
                        node.state = unfinished;
                    }
                }
            }
        }
    }
}
