//! Recording MCP servers' answers, and answering them again from the recordings,
//! beside the provider calls of `record.rs` in the same directory.
//!
//! `--record DIR` wraps the registry's [`ToolServers`] in [`RecordingToolServers`]:
//! each server's tool listing and each tool call it answered is written to
//! `mcp-<hash>.json`. `--replay DIR` uses [`ReplayingToolServers`] instead, which
//! starts no server and connects to none: listings and calls are answered from those
//! files, and one no file answers fails with [`ToolServerError::NotRecorded`].
//!
//! **The format** (`format: 1`): `{"format", "hash", "server", "request",
//! "response"}`. A listing's `request` is `{"server", "command", "url"}` and its
//! `response` the tools (`name`, `id`, `description`, `input_schema`); a call's
//! `request` is `{"server", "tool", "arguments"}` and its `response` `{"content",
//! "is_error"}`. Every string of a request and a response is redacted. The hash is
//! the SHA-256 of the request with sorted keys, as for provider calls.

use async_trait::async_trait;
use conclave_shared::McpServerConfig;
use conclave_shared::mcp::McpToolInfo;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::record::{RECORDING_FORMAT, request_hash, write_whole};
use crate::redact::Redactor;
use crate::tool_servers::{ServerPlace, ToolServer, ToolServerError, ToolServers};
use crate::tools::ToolOutcome;

/// One recorded listing or call of an MCP server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolServerRecording {
    /// [`RECORDING_FORMAT`].
    pub format: u32,
    /// The SHA-256 of the request, the file's name after `mcp-`.
    pub hash: String,
    /// The server's name in the conclave.
    pub server: String,
    /// What was asked.
    pub request: Value,
    /// What the server answered.
    pub response: Value,
}

/// The request of a server's tool listing.
pub fn listing_request(name: &str, config: &McpServerConfig) -> Value {
    json!({"server": name, "command": config.command, "url": config.url})
}

/// The request of one tool call.
pub fn call_request(name: &str, tool: &str, arguments: &Value) -> Value {
    json!({"server": name, "tool": tool, "arguments": arguments})
}

/// The file a server's request is recorded in.
pub fn tool_recording_path(dir: &Path, hash: &str) -> PathBuf {
    dir.join(format!("mcp-{hash}.json"))
}

/// `request` redacted, and its hash.
fn canonical(request: Value, redactor: Option<&Redactor>) -> (Value, String) {
    let request = redacted(request, redactor);
    let sorted: Value = serde_json::from_str(&sorted_text(&request)).unwrap_or(Value::Null);
    let hash = request_hash(&sorted);
    (request, hash)
}

fn sorted_text(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let members: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::String(k.clone()), sorted_text(&map[k.as_str()])))
                .collect();
            format!("{{{}}}", members.join(","))
        }
        Value::Array(items) => format!("[{}]", items.iter().map(sorted_text).collect::<Vec<_>>().join(",")),
        other => other.to_string(),
    }
}

fn redacted(value: Value, redactor: Option<&Redactor>) -> Value {
    let Some(redactor) = redactor else { return value };
    match value {
        Value::String(s) => Value::String(redactor.redact(&s)),
        Value::Array(items) => Value::Array(items.into_iter().map(|v| redacted(v, Some(redactor))).collect()),
        Value::Object(map) => Value::Object(map.into_iter().map(|(k, v)| (k, redacted(v, Some(redactor)))).collect()),
        other => other,
    }
}

async fn write(dir: &Path, server: &str, request: Value, response: Value, redactor: Option<&Redactor>) {
    let (request, hash) = canonical(request, redactor);
    let recording = ToolServerRecording {
        format: RECORDING_FORMAT,
        hash: hash.clone(),
        server: server.to_string(),
        request,
        response: redacted(response, redactor),
    };
    let path = tool_recording_path(dir, &hash);
    let text = serde_json::to_string_pretty(&recording).unwrap_or_default();
    if let Err(error) = write_whole(dir, &path, text).await {
        tracing::warn!(path = %path.display(), "could not write an MCP recording: {error}");
    }
}

async fn read(
    dir: &Path,
    server: &str,
    what: String,
    request: Value,
    redactor: Option<&Redactor>,
) -> Result<Value, ToolServerError> {
    let (_, hash) = canonical(request, redactor);
    let path = tool_recording_path(dir, &hash);
    let missing =
        || ToolServerError::NotRecorded { server: server.to_string(), what: what.clone(), hash: hash.clone() };
    let text = tokio::fs::read_to_string(&path).await.map_err(|_| missing())?;
    let recording: ToolServerRecording = serde_json::from_str(&text).map_err(|_| missing())?;
    Ok(recording.response)
}

/// Tool servers whose every listing and answered call is written to a directory.
#[derive(Debug)]
pub struct RecordingToolServers {
    inner: Arc<dyn ToolServers>,
    dir: PathBuf,
    redactor: Option<Arc<Redactor>>,
}

impl RecordingToolServers {
    /// Records what `inner`'s servers answer into `dir` (which must exist).
    pub fn new(inner: Arc<dyn ToolServers>, dir: PathBuf, redactor: Option<Arc<Redactor>>) -> RecordingToolServers {
        RecordingToolServers { inner, dir, redactor }
    }
}

#[async_trait]
impl ToolServers for RecordingToolServers {
    async fn connect(
        &self,
        name: &str,
        config: &McpServerConfig,
        place: &ServerPlace,
    ) -> Result<Arc<dyn ToolServer>, ToolServerError> {
        let inner = self.inner.connect(name, config, place).await?;
        let tools = serde_json::to_value(inner.tools()).unwrap_or_default();
        write(&self.dir, name, listing_request(name, config), tools, self.redactor.as_deref()).await;
        Ok(Arc::new(RecordingServer {
            inner,
            name: name.to_string(),
            dir: self.dir.clone(),
            redactor: self.redactor.clone(),
        }))
    }
}

#[derive(Debug)]
struct RecordingServer {
    inner: Arc<dyn ToolServer>,
    name: String,
    dir: PathBuf,
    redactor: Option<Arc<Redactor>>,
}

#[async_trait]
impl ToolServer for RecordingServer {
    fn tools(&self) -> &[McpToolInfo] {
        self.inner.tools()
    }

    async fn call(&self, tool: &str, arguments: &Value) -> Result<ToolOutcome, ToolServerError> {
        let outcome = self.inner.call(tool, arguments).await?;
        let response = json!({"content": outcome.content, "is_error": outcome.is_error});
        write(&self.dir, &self.name, call_request(&self.name, tool, arguments), response, self.redactor.as_deref())
            .await;
        Ok(outcome)
    }

    async fn stop(&self) {
        self.inner.stop().await;
    }
}

/// Tool servers answered from a directory of recordings: no server is started or
/// reached.
#[derive(Debug)]
pub struct ReplayingToolServers {
    dir: PathBuf,
    redactor: Option<Arc<Redactor>>,
}

impl ReplayingToolServers {
    /// Answers from the recordings in `dir`.
    pub fn new(dir: PathBuf, redactor: Option<Arc<Redactor>>) -> ReplayingToolServers {
        ReplayingToolServers { dir, redactor }
    }
}

#[async_trait]
impl ToolServers for ReplayingToolServers {
    async fn connect(
        &self,
        name: &str,
        config: &McpServerConfig,
        _place: &ServerPlace,
    ) -> Result<Arc<dyn ToolServer>, ToolServerError> {
        let request = listing_request(name, config);
        let listed = read(&self.dir, name, "tool listing".into(), request, self.redactor.as_deref()).await?;
        let tools: Vec<McpToolInfo> = serde_json::from_value(listed).unwrap_or_default();
        Ok(Arc::new(ReplayingServer {
            name: name.to_string(),
            tools,
            dir: self.dir.clone(),
            redactor: self.redactor.clone(),
        }))
    }
}

#[derive(Debug)]
struct ReplayingServer {
    name: String,
    tools: Vec<McpToolInfo>,
    dir: PathBuf,
    redactor: Option<Arc<Redactor>>,
}

#[async_trait]
impl ToolServer for ReplayingServer {
    fn tools(&self) -> &[McpToolInfo] {
        &self.tools
    }

    async fn call(&self, tool: &str, arguments: &Value) -> Result<ToolOutcome, ToolServerError> {
        let request = call_request(&self.name, tool, arguments);
        let what = format!("call of `{tool}`");
        let answer = read(&self.dir, &self.name, what, request, self.redactor.as_deref()).await?;
        let content = answer.get("content").and_then(Value::as_str).unwrap_or_default().to_string();
        let is_error = answer.get("is_error").and_then(Value::as_bool).unwrap_or(false);
        Ok(ToolOutcome { content, is_error })
    }

    async fn stop(&self) {}
}
