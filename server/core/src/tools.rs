//! The tool boundary: what the engine calls when a model asks for a tool.
//!
//! **Invariant:** the engine knows [`ToolRunner`] only; what a tool may touch is the
//! runner's business (the built-in repository tools in `conclave-review` are confined
//! to a repository root).

use async_trait::async_trait;
use std::fmt;

use crate::provider::{ToolCall, ToolSpec};

/// The result of one tool call, as the model will see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutcome {
    /// The output, or the error message.
    pub content: String,
    /// Whether the call failed (the run goes on; the model sees the error).
    pub is_error: bool,
}

impl ToolOutcome {
    /// A successful result.
    pub fn ok(content: impl Into<String>) -> ToolOutcome {
        ToolOutcome { content: content.into(), is_error: false }
    }

    /// A failed call with a message for the model.
    pub fn error(message: impl Into<String>) -> ToolOutcome {
        ToolOutcome { content: message.into(), is_error: true }
    }
}

/// Runs the tools agents may call.
#[async_trait]
pub trait ToolRunner: Send + Sync + fmt::Debug {
    /// The specs of the tools with these ids, or the first unknown id.
    fn specs(&self, tool_ids: &[String]) -> Result<Vec<ToolSpec>, String>;

    /// Runs one call. Failures are outcomes, not errors: the model sees them.
    async fn run(&self, call: &ToolCall) -> ToolOutcome;
}
