//! One MCP client session, whatever its transport: the handshake, the tool listing
//! as Conclave describes tools (`McpToolInfo`), and calls, whose answers are turned
//! into the text a model reads, capped like the built-in tools' output.

use conclave_core::ToolOutcome;
use conclave_shared::mcp::{MCP_TOOL_PREFIX, McpToolInfo};
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{Peer, RunningService};
use rmcp::transport::IntoTransport;
use rmcp::{RoleClient, ServiceError, ServiceExt};
use serde_json::Value;
use std::time::Duration;
use tokio::sync::Mutex;

/// How long a server has to start (or answer at its URL), finish the handshake and
/// list its tools.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);

/// The most of a tool's answer a model reads, in bytes, as for `read_file`; the rest
/// is cut with a note.
pub const MAX_OUTPUT_BYTES: usize = 64 * 1024;

/// An open session with a server, and the tools it listed.
#[derive(Debug)]
pub struct Session {
    peer: Peer<RoleClient>,
    running: Mutex<Option<RunningService<RoleClient, ()>>>,
    /// The server's tools, in its order.
    pub tools: Vec<McpToolInfo>,
}

/// Why a call got no answer.
#[derive(Debug)]
pub enum CallFailure {
    /// The connection is gone (the server exited or hung up).
    Gone(String),
}

impl Session {
    /// Opens a session over `transport` as the server `name`, and lists its tools,
    /// within `timeout`.
    pub async fn open<T, E, A>(name: &str, transport: T, timeout: Duration) -> Result<Session, String>
    where
        T: IntoTransport<RoleClient, E, A> + Send + 'static,
        E: std::error::Error + Send + Sync + 'static,
    {
        let opening = async {
            let running = ().serve(transport).await.map_err(|e| format!("the MCP handshake failed: {e}"))?;
            let listed = running.peer().list_all_tools().await.map_err(|e| format!("listing its tools failed: {e}"))?;
            Ok::<_, String>((running, listed))
        };
        let (running, listed) = match tokio::time::timeout(timeout, opening).await {
            Ok(opened) => opened?,
            Err(_) => {
                return Err(format!("it did not finish its handshake and tool listing within {}s", timeout.as_secs()));
            }
        };
        let tools = listed
            .into_iter()
            .map(|tool| McpToolInfo {
                id: format!("{MCP_TOOL_PREFIX}{name}/{}", tool.name),
                name: tool.name.to_string(),
                description: tool.description.map(|d| d.to_string()).unwrap_or_default(),
                input_schema: Value::Object((*tool.input_schema).clone()),
            })
            .collect();
        Ok(Session { peer: running.peer().clone(), running: Mutex::new(Some(running)), tools })
    }

    /// Calls `tool`: the tool's answer or its error (`isError`, a JSON-RPC error) as
    /// the model will read it, or why the server gave no answer at all.
    pub async fn call(&self, tool: &str, arguments: &Value) -> Result<ToolOutcome, CallFailure> {
        let mut params = CallToolRequestParams::new(tool.to_string());
        params.arguments = match arguments {
            Value::Object(map) => Some(map.clone()),
            Value::Null => None,
            other => {
                return Ok(ToolOutcome::error(format!("the arguments of `{tool}` must be a JSON object, not {other}")));
            }
        };
        match self.peer.call_tool(params).await {
            Ok(result) => Ok(outcome(&result)),
            Err(ServiceError::McpError(error)) => Ok(ToolOutcome::error(cap(format!("error: {}", error.message)))),
            Err(ServiceError::TransportClosed) => Err(CallFailure::Gone("the connection closed".into())),
            Err(ServiceError::TransportSend(error)) => Err(CallFailure::Gone(format!("sending failed: {error}"))),
            Err(other) => Ok(ToolOutcome::error(format!("the call failed: {other}"))),
        }
    }

    /// Ends the session.
    pub async fn close(&self) {
        if let Some(running) = self.running.lock().await.take() {
            let _ = tokio::time::timeout(Duration::from_secs(2), running.cancel()).await;
        }
    }
}

/// A call's answer as a model reads it: its text blocks, other blocks described,
/// the structured answer when there is no content, capped.
fn outcome(result: &CallToolResult) -> ToolOutcome {
    let mut parts: Vec<String> =
        result.content.iter().map(|block| block_text(&serde_json::to_value(block).unwrap_or_default())).collect();
    if parts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        parts.push(structured.to_string());
    }
    let content = cap(parts.join("\n"));
    ToolOutcome { content, is_error: result.is_error.unwrap_or(false) }
}

/// One content block's text: text as it is, an embedded resource's text, and other
/// kinds (images, audio, links) named rather than pasted.
fn block_text(block: &Value) -> String {
    let field = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
    match block.get("type").and_then(Value::as_str) {
        Some("text") => field(block, "text").unwrap_or_default(),
        Some("resource") => {
            let resource = block.get("resource").cloned().unwrap_or_default();
            field(&resource, "text").unwrap_or_else(|| {
                format!("[a binary resource {} not shown]", field(&resource, "uri").unwrap_or_default())
            })
        }
        Some("resource_link") => format!("[a link to the resource {}]", field(block, "uri").unwrap_or_default()),
        Some(kind) => format!("[{} content ({}) not shown]", kind, field(block, "mimeType").unwrap_or_default()),
        None => block.to_string(),
    }
}

/// `text` within [`MAX_OUTPUT_BYTES`], cut at a character boundary with a note.
pub fn cap(text: String) -> String {
    if text.len() <= MAX_OUTPUT_BYTES {
        return text;
    }
    let mut end = MAX_OUTPUT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[cut: the answer was {} bytes; a tool's answer is shown up to 64 KiB: ask for less]",
        &text[..end],
        text.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_answers_are_cut_with_a_note() {
        let long = "é".repeat(MAX_OUTPUT_BYTES);
        let cut = cap(long);
        assert!(cut.len() < MAX_OUTPUT_BYTES + 200);
        assert!(cut.ends_with("ask for less]"), "{}", &cut[cut.len() - 100..]);
        assert_eq!(cap("short".into()), "short");
    }

    #[test]
    fn blocks_read_as_text() {
        assert_eq!(block_text(&serde_json::json!({"type": "text", "text": "hi"})), "hi");
        let image = serde_json::json!({"type": "image", "data": "AAAA", "mimeType": "image/png"});
        assert_eq!(block_text(&image), "[image content (image/png) not shown]");
    }
}
