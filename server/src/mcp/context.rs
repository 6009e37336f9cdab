//! What one MCP server answers from: the API's state (workspace, engine, store, live
//! runs, allowed repository roots) and the transport it was reached over, which
//! decides the default repository and whether the roots apply. Nothing here lives
//! beyond a request: every answer is read from the store and the catalog.

use std::path::PathBuf;

use crate::api::{ApiError, AppState};

/// How the client reached this server.
#[derive(Debug, Clone)]
pub enum Transport {
    /// `conclave mcp`: the client's own process, in its working directory; any
    /// repository the user can read may be reviewed, as with `conclave review`.
    Stdio {
        /// The working directory, the default repository.
        workdir: PathBuf,
    },
    /// `/mcp` on `conclave serve`: behind the API's guard, reviews only under the
    /// server's allowed repository roots.
    Http,
}

/// The state an MCP request is answered from.
#[derive(Debug, Clone)]
pub struct McpContext {
    /// What the API serves from; the same engine, store and live runs.
    pub state: AppState,
    /// How the client reached this server.
    pub transport: Transport,
}

/// A tool's refusal: its message is what the client shows, as a tool error.
pub type Refusal = String;

impl McpContext {
    /// The repository a review names (relative paths read from the working directory
    /// over stdio), refused over HTTP when it is outside the allowed roots with the
    /// API's message.
    pub async fn repository(&self, given: Option<&str>) -> Result<PathBuf, Refusal> {
        let repository = match (&self.transport, given) {
            (Transport::Stdio { workdir }, Some(path)) => workdir.join(path),
            (Transport::Stdio { workdir }, None) => workdir.clone(),
            (Transport::Http, Some(path)) => PathBuf::from(path),
            (Transport::Http, None) => {
                return Err("give `repository`: the path of a git repository under this server's allowed roots".into());
            }
        };
        if matches!(self.transport, Transport::Http) {
            crate::api::runs::check_repository(&self.state, &repository).await.map_err(message)?;
        }
        Ok(repository)
    }

    /// Whether a conclave may be named by a file path (stdio, as the CLI takes it) or
    /// only by a catalog id (HTTP: a path on the server's disk is not the caller's).
    pub fn takes_paths(&self) -> bool {
        matches!(self.transport, Transport::Stdio { .. })
    }
}

/// The message of an API error, as a tool error says it.
pub fn message(error: ApiError) -> Refusal {
    match error {
        ApiError::Invalid { message, diagnostics, .. } if !diagnostics.is_empty() => {
            let listed: Vec<String> = diagnostics.iter().map(ToString::to_string).collect();
            format!("{message}:\n{}", listed.join("\n"))
        }
        other => other.to_string(),
    }
}
