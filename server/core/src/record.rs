//! Recording provider calls, and answering them again from the recordings.
//!
//! `--record DIR` wraps every provider of a registry in a [`RecordingProvider`]: each
//! call that a provider answers is written to one file in `DIR`, named by the SHA-256
//! of the canonical request (`<hash>.json`). `--replay DIR` wraps them in a
//! [`ReplayingProvider`] instead, which answers every call from those files and never
//! calls the provider behind it, so it opens no connection, loads no model and needs no
//! key. A call with no recording fails with [`ProviderError::NotRecorded`].
//!
//! **The format** (`format: 1`, documented in docs/eval.md): one JSON object per call,
//! `{"format", "hash", "provider", "request", "response"}`.
//! - `request` is the call as the provider receives it, after lowering: the node, the
//!   model, the system prompt (with the prompt contract when one is used), the input,
//!   the conversation, the tools, the lowered output schema, the token limit, the
//!   structured-output dialect, the attempt and the turn limit. Every string in it is
//!   redacted, and the directory the agent works in is written `$WORKDIR`, so a change
//!   reviewed in another checkout asks the same question.
//! - `response` is the whole answer: the pieces streamed (`text` and `tool_call`, in
//!   order), the text, the structured answer, the tool calls, the usage and why the
//!   model stopped.
//!
//! **The hash** is the SHA-256 (hex) of the request serialized with every object's
//! keys sorted, so the same question always has the same name. Calls that failed are
//! not recorded: a retry that succeeded records the answer under the same name.

use async_trait::async_trait;
use conclave_shared::{OutputDialect, Usage};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use crate::provider::{
    AgentReply, AgentRequest, Capabilities, EndpointDialects, Message, Provider, ProviderError, StopReason, ToolCall,
};
use crate::redact::Redactor;
use crate::sink::StreamSink;

/// The version of the recording format this build writes and reads.
pub const RECORDING_FORMAT: u32 = 1;

/// What `$WORKDIR` stands for in a recorded request.
pub const WORKDIR_PLACEHOLDER: &str = "$WORKDIR";

/// One recorded call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recording {
    /// [`RECORDING_FORMAT`].
    pub format: u32,
    /// The SHA-256 of the canonical request, the file's name.
    pub hash: String,
    /// The provider that answered.
    pub provider: String,
    /// The request, redacted, with the working directory as `$WORKDIR`.
    pub request: Value,
    /// The whole answer.
    pub response: RecordedReply,
}

/// A provider's answer as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedReply {
    /// What was streamed, in order.
    pub stream: Vec<Piece>,
    /// The answer's text.
    pub text: String,
    /// The structured answer, when the provider gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json: Option<Value>,
    /// Tool calls the model made.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<RecordedToolCall>,
    /// Tokens (and cost) of the call.
    pub usage: Usage,
    /// Why the model stopped: `end_turn`, `tool_use`, or what the provider said.
    pub stop: String,
}

/// One streamed piece.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Piece {
    /// Streamed text.
    Text {
        /// The text.
        text: String,
    },
    /// A streamed tool call.
    ToolCall {
        /// The tool.
        tool: String,
        /// Its arguments.
        arguments: Value,
    },
}

/// A tool call as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedToolCall {
    /// The provider's id for the call.
    pub id: String,
    /// The tool.
    pub name: String,
    /// Its arguments.
    pub arguments: Value,
}

/// The request as recorded and hashed: everything that decides the answer, and
/// nothing that changes from run to run (the run id) or from checkout to checkout
/// (the working directory, written `$WORKDIR`). Redacted by `redactor` when given.
pub fn canonical_request(provider: &str, request: &AgentRequest, redactor: Option<&Redactor>) -> Value {
    let messages: Vec<Value> = request.messages.iter().map(message_json).collect();
    let tools: Vec<Value> = request
        .tools
        .iter()
        .map(|t| serde_json::json!({"name": t.name, "description": t.description, "parameters": t.parameters}))
        .collect();
    let mut value = serde_json::json!({
        "provider": provider,
        "node_id": request.node_id,
        "model": request.model,
        "shared_prefix": request.shared_prefix,
        "system_prompt": request.system_prompt,
        "input": request.input,
        "messages": messages,
        "tools": tools,
        "tool_calls_allowed": request.tool_calls_allowed,
        "output_schema": request.output_schema.as_ref().map(|s| serde_json::json!({"name": s.name, "schema": *s.schema})),
        "max_tokens": request.max_tokens,
        "dialect": request.dialect.map(OutputDialect::as_str),
        "attempt": request.attempt,
        "max_turns": request.max_turns,
    });
    let workdir = request.workdir.as_ref().map(|w| w.display().to_string()).filter(|w| !w.is_empty());
    map_strings(&mut value, &|s| {
        let s = match &workdir {
            Some(w) if s.contains(w.as_str()) => s.replace(w.as_str(), WORKDIR_PLACEHOLDER),
            _ => s.to_string(),
        };
        match redactor {
            Some(r) => r.redact(&s),
            None => s,
        }
    });
    sorted(value)
}

/// The SHA-256 (hex) of a canonical request, serialized compactly with sorted keys.
pub fn request_hash(canonical: &Value) -> String {
    hex::encode(Sha256::digest(canonical.to_string().as_bytes()))
}

fn message_json(message: &Message) -> Value {
    match message {
        Message::User(text) => serde_json::json!({"role": "user", "text": text}),
        Message::Assistant { text, tool_calls } => serde_json::json!({
            "role": "assistant",
            "text": text,
            "tool_calls": tool_calls.iter().map(tool_call_json).collect::<Vec<_>>(),
        }),
        Message::ToolResult { call_id, name, content, is_error } => serde_json::json!({
            "role": "tool", "call_id": call_id, "name": name, "content": content, "is_error": is_error,
        }),
    }
}

fn tool_call_json(call: &ToolCall) -> Value {
    serde_json::json!({"id": call.id, "name": call.name, "arguments": call.arguments})
}

/// Applies `f` to every string of `value`, keys excepted.
fn map_strings(value: &mut Value, f: &dyn Fn(&str) -> String) {
    match value {
        Value::String(s) => *s = f(s),
        Value::Array(items) => items.iter_mut().for_each(|v| map_strings(v, f)),
        Value::Object(map) => map.values_mut().for_each(|v| map_strings(v, f)),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// `value` with every object's keys in sorted order.
fn sorted(value: Value) -> Value {
    match value {
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect::<Map<_, _>>())
        }
        other => other,
    }
}

/// The file a request's recording is kept in.
pub fn recording_path(dir: &Path, hash: &str) -> PathBuf {
    dir.join(format!("{hash}.json"))
}

/// Reads one recording, checking its format.
pub fn read_recording(path: &Path) -> Result<Recording, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let value: Value = serde_json::from_str(&text).map_err(|e| format!("{} is not JSON: {e}", path.display()))?;
    match value.get("format").and_then(Value::as_u64) {
        Some(f) if f == u64::from(RECORDING_FORMAT) => {}
        Some(f) => {
            return Err(format!(
                "{} is a recording of format {f}; this build reads format {RECORDING_FORMAT}: record it again",
                path.display()
            ));
        }
        None => return Err(format!("{} has no `format`: it is not a Conclave recording", path.display())),
    }
    serde_json::from_value(value).map_err(|e| format!("{} is not a valid recording: {e}", path.display()))
}

/// A provider whose every answered call is written to a directory.
#[derive(Debug)]
pub struct RecordingProvider {
    inner: Arc<dyn Provider>,
    dir: PathBuf,
    redactor: Option<Arc<Redactor>>,
}

impl RecordingProvider {
    /// Records `inner`'s calls into `dir` (which must exist), redacting requests with `redactor`.
    pub fn new(inner: Arc<dyn Provider>, dir: PathBuf, redactor: Option<Arc<Redactor>>) -> RecordingProvider {
        RecordingProvider { inner, dir, redactor }
    }
}

/// A sink that passes pieces on and keeps them.
struct KeepingSink<'a> {
    inner: &'a dyn StreamSink,
    kept: Mutex<Vec<Piece>>,
}

#[async_trait]
impl StreamSink for KeepingSink<'_> {
    fn began(&self) {
        self.inner.began();
    }

    async fn text(&self, text: &str) {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner).push(Piece::Text { text: text.to_string() });
        self.inner.text(text).await;
    }

    async fn tool_call(&self, tool: &str, arguments: Value) {
        let piece = Piece::ToolCall { tool: tool.to_string(), arguments: arguments.clone() };
        self.kept.lock().unwrap_or_else(PoisonError::into_inner).push(piece);
        self.inner.tool_call(tool, arguments).await;
    }
}

fn stop_name(stop: &StopReason) -> String {
    match stop {
        StopReason::EndTurn => "end_turn".into(),
        StopReason::ToolUse => "tool_use".into(),
        StopReason::Other(other) => other.clone(),
    }
}

fn stop_of(name: &str) -> StopReason {
    match name {
        "end_turn" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        other => StopReason::Other(other.to_string()),
    }
}

#[async_trait]
impl Provider for RecordingProvider {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    fn check_config(&self) -> Result<(), ProviderError> {
        self.inner.check_config()
    }

    fn check_model(&self, model: &str) -> Result<(), ProviderError> {
        self.inner.check_model(model)
    }

    fn dialects(&self) -> Option<EndpointDialects> {
        self.inner.dialects()
    }

    fn default_model(&self) -> &str {
        self.inner.default_model()
    }

    fn enforces_schema_itself(&self) -> bool {
        self.inner.enforces_schema_itself()
    }

    fn caches_prompts(&self) -> bool {
        self.inner.caches_prompts()
    }

    /// Counted as the provider it stands for counts, so the input it fits (and the
    /// request recorded or replayed) is the same.
    fn count_prompt_tokens(&self, request: &AgentRequest) -> Option<Result<usize, ProviderError>> {
        self.inner.count_prompt_tokens(request)
    }

    fn caches_prefix(&self, request: &AgentRequest) -> bool {
        self.inner.caches_prefix(request)
    }

    async fn call(&self, request: &AgentRequest, stream: &dyn StreamSink) -> Result<AgentReply, ProviderError> {
        let sink = KeepingSink { inner: stream, kept: Mutex::default() };
        let reply = self.inner.call(request, &sink).await?;
        let canonical = canonical_request(self.name(), request, self.redactor.as_deref());
        let hash = request_hash(&canonical);
        let recording = Recording {
            format: RECORDING_FORMAT,
            hash: hash.clone(),
            provider: self.name().to_string(),
            request: canonical,
            response: RecordedReply {
                stream: sink.kept.into_inner().unwrap_or_else(PoisonError::into_inner),
                text: reply.text.clone(),
                json: reply.json.clone(),
                tool_calls: reply
                    .tool_calls
                    .iter()
                    .map(|c| RecordedToolCall {
                        id: c.id.clone(),
                        name: c.name.clone(),
                        arguments: c.arguments.clone(),
                    })
                    .collect(),
                usage: reply.usage.clone(),
                stop: stop_name(&reply.stop),
            },
        };
        let path = recording_path(&self.dir, &hash);
        let text = serde_json::to_string_pretty(&recording).map_err(|e| ProviderError::Malformed(e.to_string()))?;
        write_whole(&self.dir, &path, text + "\n")
            .await
            .map_err(|e| ProviderError::Recording { path: path.display().to_string(), message: e.to_string() })?;
        Ok(reply)
    }
}

/// Writes `text` to `path` whole: into a temporary file of its own in `dir`, then
/// renamed over `path`, so a reader never sees half a recording and calls recording
/// the same request at once (an eval's cases, samples) never share a temporary file.
/// Both write the same request's answer; the last rename stands.
pub(crate) async fn write_whole(dir: &Path, path: &Path, text: String) -> std::io::Result<()> {
    let (dir, path) = (dir.to_path_buf(), path.to_path_buf());
    let written = tokio::task::spawn_blocking(move || {
        let mut file = tempfile::Builder::new().prefix(".recording.").suffix(".partial").tempfile_in(&dir)?;
        std::io::Write::write_all(&mut file, text.as_bytes())?;
        file.persist(&path).map(drop).map_err(|e| e.error)
    });
    written.await.map_err(std::io::Error::other)?
}

/// A provider that answers every call from recordings and never calls the one it
/// stands for (it keeps it for its name, capabilities and dialects only).
#[derive(Debug)]
pub struct ReplayingProvider {
    inner: Arc<dyn Provider>,
    dir: PathBuf,
    redactor: Option<Arc<Redactor>>,
}

impl ReplayingProvider {
    /// Answers `inner`'s calls from the recordings in `dir`.
    pub fn new(inner: Arc<dyn Provider>, dir: PathBuf, redactor: Option<Arc<Redactor>>) -> ReplayingProvider {
        ReplayingProvider { inner, dir, redactor }
    }
}

#[async_trait]
impl Provider for ReplayingProvider {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    /// A replay needs no key, server or binary.
    fn check_config(&self) -> Result<(), ProviderError> {
        Ok(())
    }

    /// Nor a model file.
    fn check_model(&self, _model: &str) -> Result<(), ProviderError> {
        Ok(())
    }

    fn dialects(&self) -> Option<EndpointDialects> {
        self.inner.dialects()
    }

    fn default_model(&self) -> &str {
        self.inner.default_model()
    }

    fn enforces_schema_itself(&self) -> bool {
        self.inner.enforces_schema_itself()
    }

    fn caches_prompts(&self) -> bool {
        self.inner.caches_prompts()
    }

    /// Counted as the provider it stands for counts, so the input it fits (and the
    /// request recorded or replayed) is the same.
    fn count_prompt_tokens(&self, request: &AgentRequest) -> Option<Result<usize, ProviderError>> {
        self.inner.count_prompt_tokens(request)
    }

    fn caches_prefix(&self, request: &AgentRequest) -> bool {
        self.inner.caches_prefix(request)
    }

    async fn call(&self, request: &AgentRequest, stream: &dyn StreamSink) -> Result<AgentReply, ProviderError> {
        let canonical = canonical_request(self.name(), request, self.redactor.as_deref());
        let hash = request_hash(&canonical);
        let path = recording_path(&self.dir, &hash);
        let read = path.clone();
        let found = tokio::task::spawn_blocking(move || read.exists().then(|| read_recording(&read)))
            .await
            .map_err(|e| ProviderError::Malformed(format!("reading {}: {e}", path.display())))?;
        let Some(recording) = found else {
            return Err(ProviderError::NotRecorded {
                node: request.node_id.clone(),
                hash,
                dir: self.dir.display().to_string(),
            });
        };
        let recording = recording.map_err(ProviderError::Malformed)?;
        let response = recording.response;
        stream.began();
        for piece in response.stream {
            match piece {
                Piece::Text { text } => stream.text(&text).await,
                Piece::ToolCall { tool, arguments } => stream.tool_call(&tool, arguments).await,
            }
        }
        Ok(AgentReply {
            text: response.text,
            json: response.json,
            tool_calls: response
                .tool_calls
                .into_iter()
                .map(|c| ToolCall { id: c.id, name: c.name, arguments: c.arguments })
                .collect(),
            usage: response.usage,
            stop: stop_of(&response.stop),
        })
    }
}
