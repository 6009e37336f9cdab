//! The provider boundary: one trait every LLM backend implements, its request and
//! reply types, typed errors, and the registry the engine looks providers up in.
//!
//! **Invariant:** the engine sees only [`Provider`]; vendor wire formats live in the
//! files beside this one.

pub mod fake;

use async_trait::async_trait;
use conclave_shared::Usage;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::engine::StreamSink;

/// Provider names a conclave may use, in the order they are listed to users.
pub const KNOWN_PROVIDERS: &[&str] = &["anthropic", "openai", "ollama", "claude-code", "local"];

/// One call to a model on behalf of an agent node.
#[derive(Debug, Clone)]
pub struct AgentRequest {
    /// The run.
    pub run_id: String,
    /// The agent node.
    pub node_id: String,
    /// Model name as configured.
    pub model: String,
    /// The agent's instructions.
    pub system_prompt: String,
    /// Everything the agent receives: run input, upstream outputs and engine findings.
    pub input: Value,
    /// The schema the answer must satisfy, as lowered for this provider.
    pub output_schema: Option<Arc<Value>>,
    /// Attempt number, starting at 1.
    pub attempt: u32,
    /// Validation errors of the previous attempt, one per line, to feed back.
    pub feedback: Vec<String>,
}

/// What a provider answered.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentReply {
    /// The answer's text, as received.
    pub text: String,
    /// The answer as JSON, when the provider delivered it structured.
    pub json: Option<Value>,
    /// Tokens used by this call.
    pub usage: Usage,
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
    #[error("rate limited by the provider{}", .retry_after.map(|d| format!(" (retry after {}s)", d.as_secs())).unwrap_or_default())]
    RateLimited {
        /// How long the service asked us to wait.
        retry_after: Option<Duration>,
    },
    /// The service failed (5xx).
    #[error("provider server error (HTTP {status}): {message}")]
    Server {
        /// HTTP status.
        status: u16,
        /// Body excerpt.
        message: String,
    },
    /// The key was refused (401/403).
    #[error("authentication failed: {0}")]
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
        }
    }
}

/// An LLM backend.
#[async_trait]
pub trait Provider: Send + Sync + fmt::Debug {
    /// The name agents use to pick this provider.
    fn name(&self) -> &str;

    /// Checks configuration (keys, binaries) before a run starts.
    fn check_config(&self) -> Result<(), ProviderError> {
        Ok(())
    }

    /// Answers one request, streaming text and tool calls through `stream` as they arrive.
    async fn call(&self, request: &AgentRequest, stream: &StreamSink) -> Result<AgentReply, ProviderError>;
}

/// The providers available to a run, by name.
#[derive(Debug, Clone, Default)]
pub struct ProviderRegistry {
    providers: BTreeMap<String, Arc<dyn Provider>>,
}

impl ProviderRegistry {
    /// The providers built into Conclave.
    pub fn builtin() -> ProviderRegistry {
        ProviderRegistry::default()
    }

    /// Adds (or replaces) a provider.
    pub fn register(&mut self, provider: Arc<dyn Provider>) {
        self.providers.insert(provider.name().to_string(), provider);
    }

    /// Looks a provider up.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Provider>> {
        self.providers.get(name).cloned()
    }

    /// Names a conclave may use: the known built-ins plus anything registered.
    pub fn known_names(&self) -> Vec<String> {
        let mut names: Vec<String> = KNOWN_PROVIDERS.iter().map(|s| s.to_string()).collect();
        for name in self.providers.keys() {
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
        names
    }
}
