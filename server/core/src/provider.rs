//! The provider boundary: one trait every LLM backend implements, the conversation it
//! is asked to continue, and typed errors. The registry the engine looks providers up
//! in is `registry.rs`.
//!
//! **Invariant:** the engine sees only [`Provider`]; vendor wire formats live in the
//! `conclave-providers` crate. Keys come from the environment only and never reach
//! events, errors or logs.

use async_trait::async_trait;
use conclave_shared::{AgentConfig, DialectSetting, LowerTarget, OutputDialect, Usage};
use serde_json::Value;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::sink::StreamSink;

/// One turn of an agent's conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// Text from the user side (the input, feedback after a failed attempt).
    User(String),
    /// What the model said, with any tool calls it made.
    Assistant {
        /// Text of the answer.
        text: String,
        /// Tool calls, answered by the `ToolResult`s that follow.
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call.
    ToolResult {
        /// The call this answers.
        call_id: String,
        /// The tool's name.
        name: String,
        /// The tool's output (or error message).
        content: String,
        /// Whether the tool failed.
        is_error: bool,
    },
}

/// A tool call made by the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The provider's id for the call.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Arguments as JSON.
    pub arguments: Value,
}

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// Tool name.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of its arguments (closed objects, every property required).
    pub parameters: Value,
}

/// A schema sent through the provider's native structured-output feature.
#[derive(Debug, Clone, PartialEq)]
pub struct SchemaSpec {
    /// A name for the schema (OpenAI requires one).
    pub name: String,
    /// The schema, lowered for this provider.
    pub schema: Arc<Value>,
}

/// One call to a model on behalf of an agent node.
#[derive(Debug, Clone)]
pub struct AgentRequest {
    /// The run.
    pub run_id: String,
    /// The agent node.
    pub node_id: String,
    /// Model name as configured.
    pub model: String,
    /// What every agent of the run is told first, the same for each: the conclave's
    /// shared instructions and the run input. Providers put it before
    /// `system_prompt`, so it is a prefix the vendor can cache (or an embedded model
    /// decode once) for every agent. Empty when the agent has none.
    pub shared_prefix: String,
    /// The agent's instructions (with the prompt contract appended when used).
    pub system_prompt: String,
    /// The agent's input as JSON: run input, upstream outputs, engine findings.
    pub input: Value,
    /// The conversation so far; the first message carries the input.
    pub messages: Vec<Message>,
    /// Tools offered in this request. For a provider that caches prompts the
    /// engine offers the agent's tools in every call, so the cached prefix holds;
    /// `tool_calls_allowed` then says whether the model may call them.
    pub tools: Vec<ToolSpec>,
    /// Whether the model may call `tools` in this turn (false in the turn that asks
    /// for the final answer).
    pub tool_calls_allowed: bool,
    /// Native structured output, when used.
    pub output_schema: Option<SchemaSpec>,
    /// Most tokens to generate.
    pub max_tokens: u32,
    /// The agent's settings as its conclave gives them, for the options only its
    /// provider reads (such as which of a vendor's APIs to call).
    pub agent: Arc<AgentConfig>,
    /// For providers whose servers differ in how they take a schema (see
    /// [`Provider::dialects`]): the dialect of this call. `None` for the others.
    pub dialect: Option<OutputDialect>,
    /// Attempt number (schema retries), starting at 1.
    pub attempt: u32,
    /// The agent's turn limit (for providers that run their own tool loop).
    pub max_turns: u32,
    /// The directory the agent works in (the repository under review), if any.
    pub workdir: Option<std::path::PathBuf>,
}

impl AgentRequest {
    /// The shared prefix and the agent's own instructions as one system text, for
    /// providers that take the system prompt as a single string.
    pub fn system_text(&self) -> String {
        match (self.shared_prefix.is_empty(), self.system_prompt.is_empty()) {
            (true, _) => self.system_prompt.clone(),
            (false, true) => self.shared_prefix.clone(),
            (false, false) => format!("{}\n\n{}", self.shared_prefix, self.system_prompt),
        }
    }

    /// The tools the model may call in this turn.
    pub fn callable_tools(&self) -> &[ToolSpec] {
        if self.tool_calls_allowed { &self.tools } else { &[] }
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// It finished its answer.
    EndTurn,
    /// It wants tool results.
    ToolUse,
    /// Anything else the provider reported.
    Other(String),
}

/// What a provider answered.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentReply {
    /// The answer's text, as received.
    pub text: String,
    /// The answer as JSON, when the provider delivered it structured.
    pub json: Option<Value>,
    /// Tool calls the model made.
    pub tool_calls: Vec<ToolCall>,
    /// Tokens used by this call.
    pub usage: Usage,
    /// Why the model stopped.
    pub stop: StopReason,
}

impl AgentReply {
    /// A finished text answer.
    pub fn text(text: impl Into<String>, usage: Usage) -> AgentReply {
        AgentReply { text: text.into(), json: None, tool_calls: Vec::new(), usage, stop: StopReason::EndTurn }
    }
}

/// What a provider can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// The schema dialect of its native structured output, if it has one.
    pub native_schema: Option<LowerTarget>,
    /// Whether it can offer tools to the model.
    pub tools: bool,
    /// The context window of one call (prompt and answer), in tokens, when it is small
    /// enough that the engine fits an agent's input to it: an embedded model's, which
    /// can also count a prompt's tokens ([`Provider::count_prompt_tokens`]). `None`
    /// for the vendors: their windows are large, and an input is sent as it is.
    pub context_window: Option<u32>,
}

/// Why a provider call failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProviderError {
    /// Missing key, base URL or binary; found before any call.
    #[error("{provider} is not configured: {message}")]
    Config {
        /// Provider name.
        provider: String,
        /// What is missing and how to provide it.
        message: String,
    },
    /// The service asked us to slow down.
    #[error("rate limited by the provider{}", .retry_after.map(|d| format!(" (asked to retry after {}s)", d.as_secs())).unwrap_or_default())]
    RateLimited {
        /// How long the service asked us to wait.
        retry_after: Option<Duration>,
    },
    /// The service failed (5xx or overloaded).
    #[error("provider server error (HTTP {status}): {message}")]
    Server {
        /// HTTP status.
        status: u16,
        /// What the service said.
        message: String,
    },
    /// The key was refused (401/403).
    #[error("authentication failed: {0}; check the API key variable")]
    Auth(String),
    /// The request was refused as invalid (other 4xx).
    #[error("request rejected by the provider: {0}")]
    BadRequest(String),
    /// Connection failure, reset or timeout.
    #[error("could not reach the provider: {0}")]
    Transport(String),
    /// The model declined to answer.
    #[error("the model refused: {0}")]
    Refusal(String),
    /// The answer was cut off (token limit or a stream that ended early).
    #[error("the answer was cut off: {0}")]
    Truncated(String),
    /// The provider sent something that does not follow its own protocol.
    #[error("malformed response from the provider: {0}")]
    Malformed(String),
    /// The server rejected how the schema was sent (its structured-output dialect);
    /// another dialect may be accepted. Never retried as it is.
    #[error("the server rejected the `{dialect}` structured-output dialect (HTTP {status}): {message}")]
    DialectRejected {
        /// The rejected dialect.
        dialect: OutputDialect,
        /// HTTP status.
        status: u16,
        /// What the server said, with what to try.
        message: String,
    },
    /// The provider's own structured-output retries ran out (Claude Code).
    #[error("the provider could not produce output matching the schema: {0}")]
    SchemaExhausted(String),
    /// A replayed run (`--replay DIR`) asked a question no recording answers.
    #[error(
        "no recording answers node `{node}`'s call (request {hash}) in {dir}; the conclave, its input or Conclave \
         changed since it was recorded: record it again with --record {dir}"
    )]
    NotRecorded {
        /// The node that asked.
        node: String,
        /// The SHA-256 of the canonical request: the recording's missing file name.
        hash: String,
        /// The recordings' directory.
        dir: String,
    },
    /// A recorded run (`--record DIR`) could not write a call's recording; the call
    /// itself succeeded.
    #[error(
        "cannot write the recording {path}: {message}; check that the recordings directory exists and can be written"
    )]
    Recording {
        /// The recording's file.
        path: String,
        /// What the file system said.
        message: String,
    },
}

impl ProviderError {
    /// Whether the same request may succeed if sent again after a pause.
    pub fn is_retryable(&self) -> bool {
        matches!(self, ProviderError::RateLimited { .. } | ProviderError::Server { .. } | ProviderError::Transport(_))
    }

    /// Short class name used in events and stored errors.
    pub fn class(&self) -> &'static str {
        match self {
            ProviderError::Config { .. } => "config",
            ProviderError::RateLimited { .. } => "rate_limited",
            ProviderError::Server { .. } => "server",
            ProviderError::Auth(_) => "auth",
            ProviderError::BadRequest(_) => "bad_request",
            ProviderError::Transport(_) => "transport",
            ProviderError::Refusal(_) => "refusal",
            ProviderError::Truncated(_) => "truncated",
            ProviderError::Malformed(_) => "malformed",
            ProviderError::SchemaExhausted(_) => "schema_exhausted",
            ProviderError::DialectRejected { .. } => "dialect_rejected",
            ProviderError::NotRecorded { .. } => "not_recorded",
            ProviderError::Recording { .. } => "recording",
        }
    }
}

/// How a provider's server takes an output schema, for providers whose servers
/// differ (OpenAI-compatible ones).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointDialects {
    /// The server's base URL: what a dialect is remembered by.
    pub endpoint: String,
    /// The dialect its agents use unless they set one (from the environment).
    pub setting: DialectSetting,
    /// The lowering of a schema sent in the `json_object_schema` dialect, which the
    /// server turns into a grammar of its own.
    pub object_schema: LowerTarget,
}

/// An LLM backend.
#[async_trait]
pub trait Provider: Send + Sync + fmt::Debug {
    /// The name agents use to pick this provider.
    fn name(&self) -> &str;

    /// What the provider supports.
    fn capabilities(&self) -> Capabilities;

    /// Checks configuration (keys, binaries) before a run starts. It reads only what
    /// the provider found when it was built, never the file system or the network,
    /// so async code may call it.
    fn check_config(&self) -> Result<(), ProviderError> {
        Ok(())
    }

    /// Checks that `model` (an agent's model setting) can be used, before a run starts.
    /// It may read the file system (a model file), so async code calls it on a
    /// blocking thread (`Engine::plan_off_thread` does).
    fn check_model(&self, _model: &str) -> Result<(), ProviderError> {
        Ok(())
    }

    /// For providers whose servers differ in how they take a schema: the server and
    /// the provider-wide dialect setting. The engine then picks each call's
    /// [`AgentRequest::dialect`], and steps down when the call fails with
    /// [`ProviderError::DialectRejected`].
    fn dialects(&self) -> Option<EndpointDialects> {
        None
    }

    /// The model agents use when a run is switched onto this provider without naming one.
    fn default_model(&self) -> &str;

    /// Whether this provider decodes every answer under the schema itself (an embedded
    /// model with a grammar), so the dialect it speaks is known without asking the
    /// model: a probe then answers at once instead of loading it.
    fn enforces_schema_itself(&self) -> bool {
        false
    }

    /// Whether the provider caches prompt prefixes across calls (a vendor's prompt
    /// cache). The engine then lays calls out for it: the agent's tools in every
    /// call, and the first call of sibling agents sharing a prefix sent before the
    /// others, so theirs read what it wrote.
    fn caches_prompts(&self) -> bool {
        false
    }

    /// For a provider whose capabilities give a `context_window`: how many tokens
    /// `request`'s prompt takes, as the provider would send it. It may read a model
    /// file, so async code calls it on a blocking thread. `None` when the provider
    /// does not count.
    fn count_prompt_tokens(&self, _request: &AgentRequest) -> Option<Result<usize, ProviderError>> {
        None
    }

    /// Whether a call of `request` writes a prefix its siblings' calls could read
    /// from the vendor's cache: the provider caches prompts and the request's shared
    /// prefix (after the tools sent before it) is long enough for the model to cache
    /// it. Only then does the engine send one sibling's first call before the
    /// others'; otherwise they all start together. Providers that know their
    /// model's minimum cacheable length say so by the same rule that places their
    /// cache marks.
    fn caches_prefix(&self, request: &AgentRequest) -> bool {
        self.caches_prompts() && !request.shared_prefix.is_empty()
    }

    /// Answers one request, streaming text and tool calls through `stream` as they arrive.
    async fn call(&self, request: &AgentRequest, stream: &dyn StreamSink) -> Result<AgentReply, ProviderError>;
}
