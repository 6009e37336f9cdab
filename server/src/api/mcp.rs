//! `POST /api/mcp/tools`: the tools of an MCP server as a conclave's settings declare
//! it, for the editor's palette. The server is connected (a stdio server started in
//! the command sandbox, as a run would start it), listed and stopped; a stdio
//! server's program must be one `--allow-commands` allows, and its sandbox may open
//! no more than the same server's entry in a conclave file on disk.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use conclave_core::{ServerPlace, ToolServerError};
use conclave_shared::mcp::{McpToolsRequest, McpToolsResponse, is_name};
use conclave_shared::{Conclave, McpServerConfig};
use std::path::Path;
use std::time::Duration;

use super::blocking::blocking;
use super::error::parse_json;
use super::{ApiError, AppState, body_bytes};

/// The longest a listing may take, the server's start included.
const LIST_TIMEOUT: Duration = Duration::from_secs(40);

/// Lists a server's tools.
#[utoipa::path(post, path = "/api/mcp/tools", request_body = McpToolsRequest,
    responses(
        (status = 200, body = McpToolsResponse),
        (status = 400, description = "The body is not JSON, or not a server entry"),
        (status = 422, description = "The name is not a server name, the entry is not exactly one transport, or its `url` is not an HTTP(S) URL"),
        (status = 403, description = "A stdio server runs a program the server was not told to allow (`--allow-commands`), or opens its sandbox beyond the same entry in a conclave file on disk"),
        (status = 502, description = "The MCP server could not be started or asked (its exit status and the last line of its stderr when it exited)"),
    ))]
pub async fn list_tools(
    State(state): State<AppState>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<McpToolsResponse>, ApiError> {
    let request: McpToolsRequest = parse_json(&body_bytes(body)?)?;
    let (name, server) = (request.name, request.server);
    if !is_name(&name) {
        return Err(invalid(
            "/name",
            format!("`{name}` is not a server name: use letters, digits, `-` and `_` (at most 64)"),
        ));
    }
    if let Some(problem) = conclave_mcp::entry_problem(&server) {
        return Err(invalid("/server", problem));
    }
    if let Some(program) = server.program() {
        refuse_stdio(&state, &name, &server, program).await?;
    }
    let Some(servers) = state.workspace.providers.tool_servers() else {
        return Err(ApiError::Internal("this server was built without MCP servers".into()));
    };
    let place = ServerPlace {
        workdir: state.workspace.commands().workspace.clone(),
        workspace: state.workspace.commands().workspace.clone(),
        allow_unsandboxed: state.engine.allows_unsandboxed(),
        redactor: state.workspace.providers.redactor(),
        label: "tools".into(),
    };
    let listing = conclave_mcp::list_tools(servers.as_ref(), &name, &server, &place);
    let tools = match tokio::time::timeout(LIST_TIMEOUT, listing).await {
        Ok(Ok(tools)) => tools,
        Ok(Err(error)) => return Err(unavailable(error)),
        Err(_) => {
            return Err(ApiError::Unavailable(format!(
                "the MCP server `{name}` did not list its tools within {}s",
                LIST_TIMEOUT.as_secs()
            )));
        }
    };
    Ok(Json(McpToolsResponse { name, tools }))
}

/// A 422: the body has the right shape, but the entry is not one a conclave may hold.
fn invalid(path: &str, message: String) -> ApiError {
    ApiError::Invalid { message, path: Some(path.to_string()), diagnostics: Vec::new() }
}

fn unavailable(error: ToolServerError) -> ApiError {
    ApiError::Unavailable(error.to_string())
}

/// 403 for a stdio program `--allow-commands` does not list, or a sandbox wider than
/// the same server's entry in a conclave file on disk.
async fn refuse_stdio(state: &AppState, name: &str, server: &McpServerConfig, program: &str) -> Result<(), ApiError> {
    if !state.security.allowed_programs.iter().any(|p| p == program) {
        return Err(ApiError::Forbidden(format!(
            "the MCP server `{name}` runs `{program}`, which this server was not told to allow: a stdio MCP server is a \
             command, and the API starts only the programs `conclave serve --allow-commands PROGRAM...` lists. Restart \
             the server with --allow-commands {program}"
        )));
    }
    let Some(asked) = &server.sandbox else { return Ok(()) };
    let dir = state.workspace.catalog_dir.clone();
    let (name_owned, command) = (name.to_string(), server.command.clone());
    let on_disk = blocking(move || entry_on_disk(&dir, &name_owned, &command)).await?;
    let widened = asked.widened_beyond(on_disk.as_ref().and_then(|s| s.sandbox.as_ref()));
    if widened.is_empty() {
        return Ok(());
    }
    Err(ApiError::Forbidden(format!(
        "the MCP server `{name}` opens its sandbox beyond its entry in the conclave files on disk ({}): through the API, \
         a server's sandbox may not open the network or more paths than a conclave file in conclaves/ gives it",
        widened.join(", ")
    )))
}

/// The entry of a server named `name` with this `command` in a conclave file of
/// `dir`, if one declares it.
fn entry_on_disk(dir: &Path, name: &str, command: &[String]) -> Option<McpServerConfig> {
    let files = std::fs::read_dir(dir).ok()?;
    for file in files.flatten() {
        let path = file.path();
        if !path.to_string_lossy().ends_with(".conclave.json") {
            continue;
        }
        let Some(conclave) = std::fs::read(&path).ok().and_then(|b| serde_json::from_slice::<Conclave>(&b).ok()) else {
            continue;
        };
        if let Some(entry) = conclave.settings.mcp_servers.get(name).filter(|e| e.command == command) {
            return Some(entry.clone());
        }
    }
    None
}
