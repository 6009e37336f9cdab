//! The two ways in: stdio (`conclave mcp`, one client, until it closes its end) and
//! Streamable HTTP (`/mcp` on `conclave serve`), stateless: every request gets a
//! fresh handler over the server's state, no session is kept in memory, so several
//! servers on one store behind one address answer alike. The API's guard admits
//! `/mcp` requests (token, Host, Origin) before they reach it, so rmcp's own Host
//! check is off rather than a second, narrower list.

use rmcp::ServiceExt;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::path::PathBuf;
use std::sync::Arc;

use super::context::{McpContext, Transport};
use super::server::ConclaveMcp;
use crate::api::{AppState, BODY_LIMIT};

/// The `/mcp` service of a server.
pub type McpService = StreamableHttpService<ConclaveMcp, NeverSessionManager>;

/// Serves MCP on standard input and output until the client closes them.
pub async fn serve_stdio(state: AppState, workdir: PathBuf) -> Result<(), String> {
    let server = ConclaveMcp::new(McpContext { state, transport: Transport::Stdio { workdir } });
    let running = server.serve(rmcp::transport::stdio()).await.map_err(|e| format!("MCP over stdio: {e}"))?;
    running.waiting().await.map_err(|e| format!("MCP over stdio stopped: {e}"))?;
    Ok(())
}

/// The stateless Streamable HTTP service answering from `state`.
pub fn http_service(state: AppState) -> McpService {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_max_request_body_bytes(BODY_LIMIT)
        .disable_allowed_hosts();
    let context = McpContext { state, transport: Transport::Http };
    StreamableHttpService::new(
        move || Ok(ConclaveMcp::new(context.clone())),
        Arc::new(NeverSessionManager::default()),
        config,
    )
}
