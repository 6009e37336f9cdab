//! Why a run could not start: each reason is found before any provider is called,
//! and says which node it is on.

use conclave_core::{ProviderError, StoreError};
use conclave_schema::ContractError;
use conclave_shared::NodeState;

use crate::policy_call::PolicyFailure;

/// Why a run could not start. Each variant is found before any provider is called.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The agent's provider is a known name but not compiled into this build.
    #[error("node `{node_id}`: provider `{provider}` is not available in this build of Conclave")]
    ProviderUnavailable {
        /// The agent node.
        node_id: String,
        /// The provider.
        provider: String,
    },
    /// The agent's provider or model is not usable (a missing key, binary or model file).
    #[error("node `{node_id}`: {error}")]
    ProviderConfig {
        /// The agent node.
        node_id: String,
        /// What is missing and how to provide it.
        error: ProviderError,
    },
    /// The agent's output schema cannot be used with its provider.
    #[error("node `{node_id}`: {error}")]
    Contract {
        /// The agent node.
        node_id: String,
        /// Why.
        error: ContractError,
    },
    /// The agent lists tools but the run offers none.
    #[error(
        "invalid conclave: agent `{node_id}` lists tools ({}) but this run has no tool sandbox; remove `tools` or run it where tools are available",
        .tools.join(", ")
    )]
    NoTools {
        /// The agent node.
        node_id: String,
        /// The tools it lists.
        tools: Vec<String>,
    },
    /// The agent lists a tool the run's tools do not have.
    #[error("invalid conclave: agent `{node_id}`: unknown tool `{tool}`")]
    UnknownTool {
        /// The agent node.
        node_id: String,
        /// The tool.
        tool: String,
    },
    /// The run to reuse is of another conclave.
    #[error("run `{run_id}` is a run of conclave `{run_conclave}`, not `{conclave}`; reuse a run of `{conclave}`")]
    ReuseOtherConclave {
        /// The earlier run.
        run_id: String,
        /// Its conclave.
        run_conclave: String,
        /// The conclave about to run.
        conclave: String,
    },
    /// The node to run from is not in the conclave.
    #[error("conclave `{conclave}` has no node `{node_id}` to run from; give the id of one of its nodes")]
    UnknownFromNode {
        /// The node named.
        node_id: String,
        /// The conclave.
        conclave: String,
    },
    /// The node to run from is in a loop's body, which runs only with its loop.
    #[error("`{node_id}` is in the body of loop `{loop_id}`, which runs only as a whole; run from `{loop_id}` instead")]
    FromLoopBody {
        /// The node named.
        node_id: String,
        /// Its loop.
        loop_id: String,
    },
    /// A node whose output would be reused did not succeed in the earlier run.
    #[error(
        "node `{node_id}` did not succeed in run `{run_id}` (it ended `{}` there), so it has no output to reuse; run from `{node_id}` instead",
        .state.as_str()
    )]
    ReuseNotSucceeded {
        /// The node.
        node_id: String,
        /// The earlier run.
        run_id: String,
        /// Its state there.
        state: NodeState,
    },
    /// A node whose output would be reused is defined differently now.
    #[error(
        "node `{node_id}` changed since run `{run_id}` ({what}), so its output there may not hold any more; run from `{node_id}` instead"
    )]
    ReuseChanged {
        /// The node.
        node_id: String,
        /// The earlier run.
        run_id: String,
        /// What differs.
        what: &'static str,
    },
    /// A `conclave` node's conclave was not loaded with the conclave that runs it.
    #[error(
        "node `{node_id}` runs conclave `{conclave}`, which was not loaded with this one; load conclaves from the catalog"
    )]
    ChildNotLoaded {
        /// The node.
        node_id: String,
        /// The conclave it runs.
        conclave: String,
    },
    /// A command node may not run here.
    #[error("command node `{node_id}` cannot run: {reason}")]
    Command {
        /// The command node.
        node_id: String,
        /// Why, and what to do.
        reason: String,
    },
    /// An agent lists an MCP tool the run cannot offer: its server is not declared,
    /// or is a program the run may not start, or the run connects to no MCP server.
    #[error("node `{node_id}`: {reason}")]
    McpServer {
        /// The agent node.
        node_id: String,
        /// Why, and what to do.
        reason: String,
    },
    /// The run's output policy failed while shaping an agent's schema (it panicked).
    #[error("{0}")]
    Policy(#[from] PolicyFailure),
    /// `samples` names an agent that cannot be sampled, or asks for too many.
    #[error("cannot sample {target}: {reason}")]
    Samples {
        /// The node, or the sample count.
        target: String,
        /// Why, and what to do.
        reason: String,
    },
    /// The run has a cost budget (or the agent a `max_cost`) and the agent's model
    /// has no price, so its calls cannot be checked against it.
    #[error(
        "node `{node_id}`: the run has a cost budget, but model `{model}` of provider `{provider}` has no price, so \
         its calls cannot be checked against it; add its price in dollars per million tokens to \
         $CONCLAVE_CONFIG_DIR/pricing.json, such as {{\"{provider}\": {{\"{model}\": {{\"input\": 3.0, \"output\": 15.0}}}}}}, \
         or limit the run by tokens only"
    )]
    Unpriced {
        /// The agent node.
        node_id: String,
        /// Its provider.
        provider: String,
        /// Its model (the provider's default when it names none).
        model: String,
    },
    /// The run cannot be taken up again.
    #[error("cannot resume run `{run_id}`: {reason}")]
    CannotResume {
        /// The run.
        run_id: String,
        /// Why.
        reason: String,
    },
    /// The run could not be recorded.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Planning stopped on its blocking thread (a panic): a fault of Conclave's, not
    /// of the conclave.
    #[error("planning the run stopped: {0}")]
    Internal(String),
}

impl StartError {
    /// The node the problem is on, if any.
    pub fn node_id(&self) -> Option<&str> {
        match self {
            StartError::ProviderUnavailable { node_id, .. }
            | StartError::ProviderConfig { node_id, .. }
            | StartError::Contract { node_id, .. }
            | StartError::NoTools { node_id, .. }
            | StartError::UnknownTool { node_id, .. }
            | StartError::UnknownFromNode { node_id, .. }
            | StartError::FromLoopBody { node_id, .. }
            | StartError::ReuseNotSucceeded { node_id, .. }
            | StartError::ReuseChanged { node_id, .. }
            | StartError::Command { node_id, .. }
            | StartError::McpServer { node_id, .. }
            | StartError::ChildNotLoaded { node_id, .. }
            | StartError::Unpriced { node_id, .. } => Some(node_id),
            StartError::ReuseOtherConclave { .. }
            | StartError::Samples { .. }
            | StartError::CannotResume { .. }
            | StartError::Policy(_)
            | StartError::Store(_)
            | StartError::Internal(_) => None,
        }
    }
}
