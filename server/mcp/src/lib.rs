//! The MCP servers a conclave's agents call, on the official SDK (`rmcp`):
//! [`McpHost`] implements `conclave_core::ToolServers`, connecting to a stdio server
//! (`stdio.rs`: the command started in the command sandbox, its process group killed
//! when it stops) or a Streamable HTTP one (`http.rs`: over the workspace's HTTP
//! client, with headers from the environment). `session.rs` is what both share: the
//! handshake, the tool listing, calls and how their answers read for a model.
//! [`list_tools`] is the one path the API, `conclave validate` and runs take to ask a
//! server for its tools.
//!
//! **Invariant:** nothing here knows the engine's runs or agents beyond the command
//! sandbox; header values from the environment never leave the HTTP requests.

pub mod http;
pub mod session;
pub mod stdio;

use async_trait::async_trait;
use conclave_core::{ServerPlace, ToolServer, ToolServerError, ToolServers};
use conclave_shared::McpServerConfig;
use conclave_shared::mcp::McpToolInfo;
use std::sync::Arc;

pub use session::{MAX_OUTPUT_BYTES, START_TIMEOUT, Session};

/// Connects to MCP servers as conclave files declare them.
#[derive(Debug, Clone, Default)]
pub struct McpHost;

impl McpHost {
    /// A host.
    pub fn new() -> McpHost {
        McpHost
    }
}

#[async_trait]
impl ToolServers for McpHost {
    async fn connect(
        &self,
        name: &str,
        config: &McpServerConfig,
        place: &ServerPlace,
    ) -> Result<Arc<dyn ToolServer>, ToolServerError> {
        let refuse = |reason: String| ToolServerError::Start { server: name.to_string(), reason };
        if let Some(problem) = entry_problem(config) {
            return Err(refuse(problem));
        }
        match &config.url {
            Some(url) => Ok(Arc::new(http::connect(name, url, config, place).await?)),
            None => Ok(Arc::new(stdio::start(name, config, place).await?)),
        }
    }
}

/// What is wrong with an entry before anything is started: not exactly one
/// transport, or a `url` that is not an HTTP(S) URL.
pub fn entry_problem(config: &McpServerConfig) -> Option<String> {
    if let Some(problem) = config.problem() {
        return Some(problem.to_string());
    }
    let url = config.url.as_deref()?;
    match reqwest::Url::parse(url) {
        Ok(parsed) if matches!(parsed.scheme(), "http" | "https") => None,
        Ok(parsed) => Some(format!(
            "`{url}` is not an HTTP URL (its scheme is `{}`): an MCP server's `url` starts with http:// or https://",
            parsed.scheme()
        )),
        Err(e) => {
            Some(format!("`{url}` is not a URL ({e}): write the server's endpoint, as `https://tracker.example/mcp`"))
        }
    }
}

/// The tools of the server `name` declared as `config`: connected through
/// `servers`, listed, and stopped.
pub async fn list_tools(
    servers: &dyn ToolServers,
    name: &str,
    config: &McpServerConfig,
    place: &ServerPlace,
) -> Result<Vec<McpToolInfo>, ToolServerError> {
    let server = servers.connect(name, config, place).await?;
    let tools = server.tools().to_vec();
    server.stop().await;
    Ok(tools)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(url: &str) -> McpServerConfig {
        McpServerConfig { url: Some(url.into()), ..McpServerConfig::default() }
    }

    #[test]
    fn an_entry_names_an_http_endpoint_or_says_why_not() {
        assert_eq!(entry_problem(&at("https://tracker.example/mcp")), None);
        assert_eq!(entry_problem(&at("http://127.0.0.1:7700/mcp")), None);
        let scheme = entry_problem(&at("file:///etc/passwd")).expect("refused");
        assert!(scheme.contains("its scheme is `file`"), "{scheme}");
        let garbage = entry_problem(&at("not a url")).expect("refused");
        assert!(garbage.contains("`not a url` is not a URL"), "{garbage}");
        assert!(entry_problem(&McpServerConfig::default()).is_some());
    }
}
