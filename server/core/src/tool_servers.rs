//! The boundary of MCP servers, the tool servers a conclave declares in
//! `settings.mcp_servers`: [`ToolServers`] connects to one (starting it, when it is a
//! command) and gives a [`ToolServer`] that lists its tools and answers calls until
//! it is stopped. The engine starts each server its agents use once per run and
//! stops it with the run; `conclave-mcp` implements these traits on the MCP SDK.
//!
//! **Invariant:** nothing here speaks MCP or starts a process; a tool's failure the
//! model should read is a [`ToolOutcome`], and only a server that cannot answer at
//! all (it did not start, or it died) is a [`ToolServerError`].

use async_trait::async_trait;
use conclave_shared::McpServerConfig;
use conclave_shared::mcp::McpToolInfo;
use serde_json::Value;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use crate::redact::Redactor;
use crate::tools::ToolOutcome;

/// Where a run's stdio servers run and what they may reach.
#[derive(Debug, Clone, Default)]
pub struct ServerPlace {
    /// Their directory: the repository under review, else the workspace.
    pub workdir: Option<PathBuf>,
    /// The workspace, readable too.
    pub workspace: Option<PathBuf>,
    /// Whether a server may run unconfined where the kernel cannot confine it.
    pub allow_unsandboxed: bool,
    /// Takes the process's secrets out of what a server prints before it is shown.
    pub redactor: Option<Arc<Redactor>>,
    /// The node the server is started for, to label its scratch directory.
    pub label: String,
}

/// Why a server cannot answer at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolServerError {
    /// It did not start, or did not finish the MCP handshake or its tool listing.
    #[error("the MCP server `{server}` could not start: {reason}")]
    Start {
        /// The server's name in the conclave.
        server: String,
        /// Why, with its exit status and the last line of its stderr when it exited.
        reason: String,
    },
    /// It stopped answering during the run.
    #[error("the MCP server `{server}` stopped during the run: {reason}")]
    Died {
        /// The server's name in the conclave.
        server: String,
        /// Why, with its exit status and the last line of its stderr when it exited.
        reason: String,
    },
    /// A replayed run asked for a listing or a call no recording answers.
    #[error(
        "no recording answers the MCP server `{server}`'s {what} (hash {hash}); record the run again with --record"
    )]
    NotRecorded {
        /// The server's name in the conclave.
        server: String,
        /// `tool listing` or `call of TOOL`.
        what: String,
        /// The hash the recording would be named by.
        hash: String,
    },
}

/// Connects to tool servers.
#[async_trait]
pub trait ToolServers: Send + Sync + fmt::Debug {
    /// Connects to the server `name` declared as `config` (starting it, when it is a
    /// command, in `place`'s sandbox) and lists its tools.
    async fn connect(
        &self,
        name: &str,
        config: &McpServerConfig,
        place: &ServerPlace,
    ) -> Result<Arc<dyn ToolServer>, ToolServerError>;
}

/// One connected server, answering until it is stopped (or dropped: a started
/// process is killed with every process it started).
#[async_trait]
pub trait ToolServer: Send + Sync + fmt::Debug {
    /// Its tools, as it listed them when it was connected.
    fn tools(&self) -> &[McpToolInfo];

    /// Calls `tool` with `arguments`. A tool's own error (`isError`, or a JSON-RPC
    /// error) is an error outcome; the error is the server no longer answering.
    async fn call(&self, tool: &str, arguments: &Value) -> Result<ToolOutcome, ToolServerError>;

    /// Ends the connection; a started process is killed with its process group.
    async fn stop(&self);
}
