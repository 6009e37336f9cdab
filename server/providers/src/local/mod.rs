//! The `local` provider: an embedded model (any GGUF llama.cpp loads; by default
//! SmolLM2-135M-Instruct) with decoding constrained to the agent's JSON Schema, so
//! Conclave works offline with no key. `model.rs` finds and checks model files,
//! `generate.rs` runs llama.cpp with the llguidance grammar, and `batch.rs` runs one
//! worker thread per model that decodes concurrent calls together in one context
//! (`shared_context.rs`, one `sequence.rs` per call, sharing their common prompt
//! prefix). The provider states its window and counts a prompt's tokens, so the
//! engine can fit a Writer's input to the window.
//!
//! Settings come from the environment: `CONCLAVE_MODEL_DIR` (the model cache),
//! `CONCLAVE_LOCAL_THREADS`, `CONCLAVE_LOCAL_CONTEXT` (the context of one call) and
//! `CONCLAVE_LOCAL_BATCH` (`off` runs calls one at a time).

pub mod batch;
pub mod generate;
pub mod job;
pub mod model;
mod sequence;
mod shared_context;

use async_trait::async_trait;
use conclave_shared::Usage;
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot};

use crate::dialect::Dialect;
use batch::Batcher;
use conclave_core::StreamSink;
use conclave_core::{AgentReply, AgentRequest, Capabilities, Message, Provider, ProviderError, StopReason};
use generate::{Generation, RunSettings};
use job::{Counters, Job, PromptCounts};

/// Default context size, in tokens (the default model's training context).
pub const DEFAULT_CONTEXT: u32 = 8192;

/// The local provider.
#[derive(Debug)]
pub struct LocalProvider {
    dir: PathBuf,
    settings: RunSettings,
    batched: bool,
    loaded: ModelCache,
    counters: Arc<Counters>,
}

/// Each model loaded so far and its worker, by file: loading takes a moment, so it
/// happens once.
type ModelCache = Arc<Mutex<HashMap<PathBuf, Loaded>>>;

/// A loaded model (which also counts prompts' tokens) and its worker.
#[derive(Debug, Clone)]
struct Loaded {
    model: Arc<generate::LoadedModel>,
    batcher: Arc<Batcher>,
}

/// One generation asked of the local model, as `call` asks it.
#[derive(Debug, Clone)]
pub struct LocalRequest {
    /// The agent's `model`: empty or the default's name, or a GGUF path.
    pub model: String,
    /// The conversation as (role, text) turns for the chat template.
    pub turns: Vec<(String, String)>,
    /// The answer's JSON Schema, lowered for the local model, if any.
    pub schema: Option<Value>,
    /// Most tokens to generate.
    pub max_tokens: usize,
}

/// A submitted generation: its streamed text, then its outcome. Dropping it cancels
/// the generation, which frees its place in the batch.
#[derive(Debug)]
pub struct Running {
    /// The answer's text, piece by piece; closes when the generation ends.
    pub pieces: mpsc::UnboundedReceiver<String>,
    outcome: oneshot::Receiver<Result<Generation, ProviderError>>,
    _stop: StopOnDrop,
}

impl Running {
    /// The outcome (after `pieces` closed).
    pub async fn outcome(self) -> Result<Generation, ProviderError> {
        let Running { outcome, _stop, .. } = self;
        outcome.await.map_err(|_| ProviderError::Malformed("the local model's thread failed".into()))?
    }
}

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
            batched: !env("CONCLAVE_LOCAL_BATCH").is_some_and(|v| v.trim().eq_ignore_ascii_case("off")),
            loaded: ModelCache::default(),
            counters: Arc::default(),
        }
    }

    /// Whether concurrent calls decode together (`CONCLAVE_LOCAL_BATCH` is not `off`).
    pub fn batched(&self) -> bool {
        self.batched
    }

    /// The prompt tokens read so far: how many were decoded, and how many copied
    /// from a prefix another call had decoded.
    pub fn prompt_counts(&self) -> PromptCounts {
        self.counters.snapshot()
    }

    /// Submits a generation to the model's worker, loading the model on first use.
    pub async fn submit(&self, request: LocalRequest) -> Result<Running, ProviderError> {
        let (dir, cache, settings, batched) = (self.dir.clone(), self.loaded.clone(), self.settings, self.batched);
        let counters = self.counters.clone();
        let model_name = request.model.clone();
        let batcher = tokio::task::spawn_blocking(move || {
            // Finding the model may hash it (once), and loading it reads the file.
            let path = model::resolve(&model_name, &dir)?;
            cached(&cache, &path, settings, batched, counters).map(|loaded| loaded.batcher)
        })
        .await
        .map_err(|e| ProviderError::Malformed(format!("the local model's loading failed: {e}")))??;
        let cancelled = Arc::new(AtomicBool::new(false));
        let (pieces_tx, pieces) = mpsc::unbounded_channel();
        let (done, outcome) = oneshot::channel();
        let stop = StopOnDrop(cancelled.clone());
        batcher.submit(Job {
            messages: request.turns,
            schema: request.schema,
            max_tokens: request.max_tokens,
            cancelled,
            pieces: pieces_tx,
            done,
        })?;
        Ok(Running { pieces, outcome, _stop: stop })
    }

    /// The model cache directory.
    pub fn model_dir(&self) -> &std::path::Path {
        &self.dir
    }

    /// The window of one generation in tokens (`CONCLAVE_LOCAL_CONTEXT`): its prompt
    /// and its answer.
    pub fn context_window(&self) -> u32 {
        self.settings.context
    }

    /// How many tokens the conversation `turns` takes in `model`'s chat template,
    /// loading the model on first use (blocking: call it off the async threads).
    pub fn count_tokens(&self, model: &str, turns: &[(String, String)]) -> Result<usize, ProviderError> {
        let path = model::resolve(model, &self.dir)?;
        let loaded = cached(&self.loaded, &path, self.settings, self.batched, self.counters.clone())?;
        Ok(generate::prompt_tokens(loaded.model.model(), turns)?.len())
    }
}

/// The model at `path` and its worker, loading it and starting the worker on first
/// use (blocking).
fn cached(
    cache: &ModelCache,
    path: &std::path::Path,
    settings: RunSettings,
    batched: bool,
    counters: Arc<Counters>,
) -> Result<Loaded, ProviderError> {
    let mut loaded = cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(found) = loaded.get(path) {
        return Ok(found.clone());
    }
    let model = Arc::new(generate::load(path)?);
    let batcher = Arc::new(Batcher::start(model.clone(), settings, batched, counters)?);
    let found = Loaded { model, batcher };
    loaded.insert(path.to_path_buf(), found.clone());
    Ok(found)
}

/// The conversation as (role, text) turns for the chat template. The system turn
/// opens with the run's shared prefix, so sibling agents' prompts share their first
/// tokens and the batcher decodes them once.
fn turns(request: &AgentRequest) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let system = request.system_text();
    if !system.is_empty() {
        out.push(("system".to_string(), system));
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

/// Sets the flag when dropped: an aborted node ends its generation, freeing its sequence.
#[derive(Debug)]
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

    /// Its window is small (8,192 tokens by default): the engine fits a Writer's
    /// input to it, counting tokens with the model's own tokenizer.
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            native_schema: Some(Dialect::Local.target()),
            tools: false,
            context_window: Some(self.settings.context),
        }
    }

    fn count_prompt_tokens(&self, request: &AgentRequest) -> Option<Result<usize, ProviderError>> {
        Some(self.count_tokens(&request.model, &turns(request)))
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
        let max_tokens = request.max_tokens as usize;
        let mut running = self
            .submit(LocalRequest {
                model: request.model.clone(),
                turns: turns(request),
                schema: request.output_schema.as_ref().map(|s| (*s.schema).clone()),
                max_tokens,
            })
            .await?;
        while let Some(piece) = running.pieces.recv().await {
            stream.text(&piece).await;
        }
        let Generation { text, timings, finished } = running.outcome().await?;
        let settings = self.settings;
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
        let usage = Usage::tokens(timings.prompt_tokens as u64, timings.generated_tokens as u64);
        tracing::debug!(
            prompt = timings.prompt_tokens,
            generated = timings.generated_tokens,
            reused = timings.reused_tokens,
            prefill_ms = timings.prefill.as_millis() as u64,
            decode_ms = timings.decode.as_millis() as u64,
            "local generation"
        );
        Ok(AgentReply { text, json: None, tool_calls: Vec::new(), usage, stop: StopReason::EndTurn })
    }
}
