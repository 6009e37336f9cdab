//! How a run stands and why a node failed: the run's status and the class of a
//! failure, which events carry and run records keep.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Where a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Waiting in the run queue for a worker.
    Queued,
    /// In progress.
    Running,
    /// Parked until a person approves or rejects (an approval node); nothing runs
    /// and no process holds it.
    Waiting,
    /// Every node completed or was legitimately skipped, none failed.
    Succeeded,
    /// At least one node failed.
    Failed,
    /// Stopped on request.
    Cancelled,
    /// Stopped because a person rejected it at an approval node.
    Rejected,
    /// The process running it died before it finished.
    Interrupted,
}

impl RunStatus {
    /// The name used in storage and on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Queued => "queued",
            RunStatus::Running => "running",
            RunStatus::Waiting => "waiting",
            RunStatus::Succeeded => "succeeded",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
            RunStatus::Rejected => "rejected",
            RunStatus::Interrupted => "interrupted",
        }
    }

    /// Parses a stored name.
    pub fn parse(s: &str) -> Option<RunStatus> {
        [
            RunStatus::Queued,
            RunStatus::Running,
            RunStatus::Waiting,
            RunStatus::Succeeded,
            RunStatus::Failed,
            RunStatus::Cancelled,
            RunStatus::Rejected,
            RunStatus::Interrupted,
        ]
        .into_iter()
        .find(|st| st.as_str() == s)
    }

    /// True once the run can no longer change.
    pub fn is_terminal(self) -> bool {
        !matches!(self, RunStatus::Queued | RunStatus::Running | RunStatus::Waiting)
    }
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
    /// A command node's program could not start, or exited with a code that is not
    /// success.
    Command,
    /// A person rejected the run at an approval node (or its time to decide ran out).
    Rejected,
    /// A provider call could not fit in what was left of the run's budget (or the
    /// agent's `max_cost`), so it was not made.
    Budget,
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
            ErrorKind::Command => "command",
            ErrorKind::Rejected => "rejected",
            ErrorKind::Budget => "budget",
            ErrorKind::Internal => "internal",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
