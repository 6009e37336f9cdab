//! Run records as the store keeps them and the API and CLI show them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::conclave::Conclave;
use crate::events::{NodeOutput, Usage};

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
