//! The LLM providers built into Conclave, each behind `conclave_core::Provider`:
//! Anthropic's Messages API (`anthropic.rs`), OpenAI's Chat Completions and Responses
//! APIs and any server that speaks them (`openai/`), Ollama (`ollama.rs`), the Claude
//! Code CLI as a subprocess (`claude_code.rs`, its output read within the caps of
//! `cli_output.rs`), and, with the `local` feature, an embedded GGUF model with
//! schema-constrained decoding (`local/`). `dialect.rs` says how each of them
//! receives an output schema; `cutoff.rs` tells a full context window from a spent
//! `max_tokens`. `http.rs` holds what the HTTP vendors share: the
//! client, status mapping, `retry-after`, error bodies read up to a cap, and the SSE
//! and NDJSON readers.
//!
//! **Invariant:** vendor wire formats live here and nowhere else. Keys come from the
//! environment only and are held as `Secret`s; every built-in provider is wrapped in
//! `conclave_core::RedactingProvider`, the one point where what it says is redacted.

pub mod anthropic;
pub mod claude_code;
pub mod cli_output;
pub mod cutoff;
pub mod dialect;
pub mod http;
#[cfg(feature = "local")]
pub mod local;
pub mod ollama;
pub mod openai;
pub mod prompt_cache;

use conclave_core::{ProviderRegistry, Redactor};
use std::sync::Arc;

pub use prompt_cache::PromptCache;

/// The names of the built-in providers, in the order they are listed to users; a
/// conclave may name `local` even in a build without it (it is then reported as not
/// compiled in).
pub const BUILTIN_PROVIDERS: &[&str] = &["anthropic", "openai", "ollama", "claude-code", "local"];

/// Environment variables holding the built-in providers' keys.
pub const KEY_VARIABLES: &[&str] = &["ANTHROPIC_API_KEY", "OPENAI_API_KEY"];

/// Environment variables holding the built-in providers' URLs, whose credentials are
/// secrets.
pub const URL_VARIABLES: &[&str] = &["ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "OLLAMA_HOST"];

/// The providers built into this build of Conclave, configured from the process
/// environment. What they say is redacted of their keys, of their URLs' credentials
/// and of the values of `other_secrets`, the caller's variables that hold secrets.
pub fn builtin(other_secrets: &[&str]) -> ProviderRegistry {
    builtin_with_env(&|name| std::env::var(name).ok().filter(|v| !v.is_empty()), other_secrets)
}

/// The built-in providers, configured from `env` (a variable's value, if set), with
/// the values of `other_secrets` redacted too.
pub fn builtin_with_env(env: &dyn Fn(&str) -> Option<String>, other_secrets: &[&str]) -> ProviderRegistry {
    let mut registry = ProviderRegistry::default();
    registry.know(BUILTIN_PROVIDERS);
    registry.register(Arc::new(anthropic::AnthropicProvider::from_env(env)));
    registry.register(Arc::new(openai::OpenAiProvider::from_env(env)));
    registry.register(Arc::new(ollama::OllamaProvider::from_env(env)));
    registry.register(Arc::new(claude_code::ClaudeCodeProvider::from_env(env)));
    #[cfg(feature = "local")]
    registry.register(Arc::new(local::LocalProvider::from_env(env)));
    let secrets: Vec<&str> = KEY_VARIABLES.iter().chain(other_secrets).copied().collect();
    registry.redacted(Arc::new(Redactor::from_env(env, &secrets, URL_VARIABLES)))
}
