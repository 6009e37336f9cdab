//! Why a node failed, typed: the provider's error, a timeout, output still invalid
//! after every attempt, or a bug; and the class of failure the run records.

use conclave_core::ProviderError;

use crate::budget_exceeded::BudgetExceeded;
use crate::policy_call::PolicyFailure;
use conclave_shared::ErrorKind;
use std::time::Duration;

/// Why a node failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NodeError {
    /// The provider failed.
    #[error("{0}")]
    Provider(#[from] ProviderError),
    /// The node ran past its timeout.
    #[error("timed out after {}; raise `timeout_secs` on the agent or `settings.node_timeout_secs`", humanize(*.0))]
    Timeout(Duration),
    /// Every attempt produced output that failed the schema.
    #[error("output still invalid after {attempts} attempt(s): {}", .errors.join("; "))]
    InvalidOutput {
        /// Attempts made.
        attempts: u32,
        /// The last attempt's validation errors.
        errors: Vec<String>,
        /// The last attempt's raw answer.
        raw: String,
    },
    /// The run's output policy failed (a hook panicked): the answer was not checked,
    /// so it is not passed on.
    #[error("{0}")]
    Policy(#[from] PolicyFailure),
    /// A command node's program could not start or did not succeed.
    #[error("{0}")]
    Command(String),
    /// A command node's program ran past its timeout and was killed with every
    /// process it started.
    #[error("`{program}` ran past its timeout of {} and was killed with every process it started; raise the node's `timeout_secs`", humanize(*.limit))]
    CommandTimeout {
        /// The program.
        program: String,
        /// The timeout.
        limit: Duration,
    },
    /// A command node was not run: the kernel cannot confine it, and running
    /// commands unconfined was not allowed.
    #[error(
        "`{program}` was not run: the sandbox is unavailable here ({reason}); `conclave sandbox check` tells more, and `--allow-unsandboxed` runs commands unconfined"
    )]
    SandboxUnavailable {
        /// The program.
        program: String,
        /// Why the kernel cannot confine it.
        reason: String,
    },
    /// A node of a loop's body failed, and with it the loop.
    #[error("`{node_id}` failed: {message}")]
    Body {
        /// The body's node, as its events name it (`loop/<iteration>/<node>`).
        node_id: String,
        /// Its error class.
        kind: ErrorKind,
        /// Its error.
        message: String,
    },
    /// A provider call could not fit in what was left of the run's budget (or the
    /// agent's `max_cost`), so it was not made.
    #[error("{0}")]
    Budget(#[from] BudgetExceeded),
    /// An MCP server the agent calls could not start, stopped during the run, or
    /// has not the tool the agent lists.
    #[error("{0}")]
    ToolServer(String),
    /// A bug in Conclave (a task panicked).
    #[error("internal error: {0}")]
    Internal(String),
}

impl NodeError {
    /// The class stored with the failure.
    pub fn kind(&self) -> ErrorKind {
        match self {
            NodeError::Provider(ProviderError::SchemaExhausted(_)) => ErrorKind::InvalidOutput,
            NodeError::Provider(
                ProviderError::Config { .. } | ProviderError::NotRecorded { .. } | ProviderError::Recording { .. },
            ) => ErrorKind::Config,
            NodeError::Provider(_) => ErrorKind::Provider,
            NodeError::Timeout(_) | NodeError::CommandTimeout { .. } => ErrorKind::Timeout,
            NodeError::Command(_) | NodeError::ToolServer(_) => ErrorKind::Command,
            NodeError::SandboxUnavailable { .. } => ErrorKind::Config,
            NodeError::Body { kind, .. } => *kind,
            NodeError::InvalidOutput { .. } => ErrorKind::InvalidOutput,
            NodeError::Budget(_) => ErrorKind::Budget,
            NodeError::Policy(_) | NodeError::Internal(_) => ErrorKind::Internal,
        }
    }
}

fn humanize(d: Duration) -> String {
    if d.as_millis().is_multiple_of(1000) { format!("{}s", d.as_secs()) } else { format!("{}ms", d.as_millis()) }
}
