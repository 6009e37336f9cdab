//! The `local` provider: an embedded model (any GGUF llama.cpp loads; by default
//! SmolLM2-135M-Instruct) with decoding constrained to the agent's JSON Schema, so
//! Conclave works offline with no key. `model.rs` finds and checks model files,
//! `generate.rs` runs llama.cpp with the llguidance grammar.
//!
//! Settings come from the environment: `CONCLAVE_MODEL_DIR` (the model cache),
//! `CONCLAVE_LOCAL_THREADS` and `CONCLAVE_LOCAL_CONTEXT`.

pub mod generate;
pub mod model;

use async_trait::async_trait;
use conclave_shared::Usage;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::dialect::Dialect;
use conclave_core::StreamSink;
use conclave_core::{AgentReply, AgentRequest, Capabilities, Message, Provider, ProviderError, StopReason};
use generate::{LoadedModel, RunSettings};

/// Default context size, in tokens (the default model's training context).
pub const DEFAULT_CONTEXT: u32 = 8192;

/// The local provider.
#[derive(Debug)]
pub struct LocalProvider {
    dir: PathBuf,
    settings: RunSettings,
    loaded: ModelCache,
}

/// Models loaded so far, by file: loading takes a moment, so it happens once.
type ModelCache = Arc<Mutex<HashMap<PathBuf, Arc<LoadedModel>>>>;

impl LocalProvider {
    /// Configured from the environment.
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> LocalProvider {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get()).min(8) as i32;
        LocalProvider {
            dir: model::model_dir(env),
            settings: RunSettings {
                threads: env("CONCLAVE_LOCAL_THREADS").and_then(|v| v.parse().ok()).filter(|&t| t > 0).unwrap_or(cores),
                context: env("CONCLAVE_LOCAL_CONTEXT")
                    .and_then(|v| v.parse().ok())
                    .filter(|&c| c >= 512)
                    .unwrap_or(DEFAULT_CONTEXT),
            },
            loaded: ModelCache::default(),
        }
    }

    /// The model cache directory.
    pub fn model_dir(&self) -> &std::path::Path {
        &self.dir
    }
}

/// The loaded model for `path`, loading it on first use (blocking).
fn cached_model(cache: &ModelCache, path: &std::path::Path) -> Result<Arc<LoadedModel>, ProviderError> {
    let mut loaded = cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(model) = loaded.get(path) {
        return Ok(model.clone());
    }
    let model = Arc::new(generate::load(path)?);
    loaded.insert(path.to_path_buf(), model.clone());
    Ok(model)
}

/// The conversation as (role, text) turns for the chat template.
fn turns(request: &AgentRequest) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if !request.system_prompt.is_empty() {
        out.push(("system".to_string(), request.system_prompt.clone()));
    }
    for message in &request.messages {
        match message {
            Message::User(text) => out.push(("user".into(), text.clone())),
            Message::Assistant { text, .. } => out.push(("assistant".into(), text.clone())),
            Message::ToolResult { name, content, .. } => {
                out.push(("user".into(), format!("Result of {name}:\n{content}")))
            }
        }
    }
    out
}

/// Sets the flag when dropped: an aborted node stops its generation thread.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

#[async_trait]
impl Provider for LocalProvider {
    fn name(&self) -> &str {
        "local"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities { native_schema: Some(Dialect::Local.target()), tools: false }
    }

    fn default_model(&self) -> &str {
        model::DEFAULT_MODEL_NAME
    }

    fn check_model(&self, model: &str) -> Result<(), ProviderError> {
        model::resolve(model, &self.dir).map(|_| ())
    }

    /// The grammar holds every answer to the schema: a probe needs no generation.
    fn enforces_schema_itself(&self) -> bool {
        true
    }

    async fn call(&self, request: &AgentRequest, stream: &dyn StreamSink) -> Result<AgentReply, ProviderError> {
        let (model_name, dir) = (request.model.clone(), self.dir.clone());
        let cache = self.loaded.clone();
        let messages = turns(request);
        let schema = request.output_schema.as_ref().map(|s| (*s.schema).clone());
        let settings = self.settings;
        let max_tokens = request.max_tokens as usize;
        let cancelled = Arc::new(AtomicBool::new(false));
        let _guard = StopOnDrop(cancelled.clone());
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
        let flag = cancelled.clone();
        let job = tokio::task::spawn_blocking(move || {
            // Finding the model may hash it (once): off the async threads too.
            let path = model::resolve(&model_name, &dir)?;
            let loaded = cached_model(&cache, &path)?;
            let mut send = |piece: &str| {
                let _ = tx.send(piece.to_string());
            };
            generate::generate(&loaded, settings, &messages, schema.as_ref(), max_tokens, &flag, &mut send)
        });
        while let Some(piece) = rx.recv().await {
            stream.text(&piece).await;
        }
        let generate::Generation { text, timings, finished } =
            job.await.map_err(|e| ProviderError::Malformed(format!("the local model's thread failed: {e}")))??;
        if !finished && timings.generated_tokens < max_tokens {
            // The budget was what the context had left, not the agent's `max_tokens`.
            return Err(ProviderError::Truncated(format!(
                "the local model stopped after {} tokens, below the agent's `max_tokens` of {max_tokens}: the prompt \
                 ({} tokens) and the answer filled its context window of {} tokens; raise CONCLAVE_LOCAL_CONTEXT or \
                 review a smaller change",
                timings.generated_tokens, timings.prompt_tokens, settings.context
            )));
        }
        if !finished {
            return Err(ProviderError::Truncated(format!(
                "the local model reached its budget of {} tokens without finishing; raise `max_tokens` on the agent",
                timings.generated_tokens
            )));
        }
        let usage = Usage {
            input_tokens: timings.prompt_tokens as u64,
            output_tokens: timings.generated_tokens as u64,
            cost_usd: None,
        };
        tracing::debug!(
            prompt = timings.prompt_tokens,
            generated = timings.generated_tokens,
            prefill_ms = timings.prefill.as_millis() as u64,
            decode_ms = timings.decode.as_millis() as u64,
            "local generation"
        );
        Ok(AgentReply { text, json: None, tool_calls: Vec::new(), usage, stop: StopReason::EndTurn })
    }
}
