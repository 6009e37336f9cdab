//! A Streamable HTTP MCP server, reached with the workspace's HTTP client: the
//! transport is the SDK's, over [`HttpClient`], this crate's implementation of its
//! `StreamableHttpClient`. The entry's `headers_from_env` are read from the Conclave
//! process's environment when connecting and go into the requests only.

use async_trait::async_trait;
use conclave_core::{ServerPlace, ToolOutcome, ToolServer, ToolServerError};
use conclave_shared::McpServerConfig;
use conclave_shared::mcp::McpToolInfo;
use serde_json::Value;

use crate::session::{CallFailure, Session};

/// A connected HTTP server.
#[derive(Debug)]
pub struct HttpServer {
    name: String,
    session: Session,
}

/// Connects to the server `name` at `url` and lists its tools.
pub async fn connect(
    name: &str,
    url: &str,
    config: &McpServerConfig,
    _place: &ServerPlace,
) -> Result<HttpServer, ToolServerError> {
    let refuse = |reason: String| ToolServerError::Start { server: name.to_string(), reason };
    let _ = (url, config);
    Err(refuse("HTTP servers are not available yet".into()))
}

#[async_trait]
impl ToolServer for HttpServer {
    fn tools(&self) -> &[McpToolInfo] {
        &self.session.tools
    }

    async fn call(&self, tool: &str, arguments: &Value) -> Result<ToolOutcome, ToolServerError> {
        self.session
            .call(tool, arguments)
            .await
            .map_err(|CallFailure::Gone(reason)| ToolServerError::Died { server: self.name.clone(), reason })
    }

    async fn stop(&self) {
        self.session.close().await;
    }
}
