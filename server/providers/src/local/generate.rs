//! Generation with llama.cpp: the model's chat template, prefill, then token by token
//! under a JSON-Schema grammar (llguidance), so only tokens that keep the answer
//! inside the schema can be picked. Runs on a blocking thread. `generate` is one
//! generation in a context of its own (`CONCLAVE_LOCAL_BATCH=off`); the pieces it is
//! made of (the prompt's tokens, the sampler, the text out) serve the batcher too.

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llguidance::api::TopLevelGrammar;
use llguidance::{Matcher, ParserFactory};
use serde_json::{Value, json};
use std::num::NonZeroU32;
use std::path::Path;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use conclave_core::ProviderError;

/// Prompt tokens decoded per batch.
pub const BATCH: usize = 512;

/// A model loaded once and shared by every call.
pub struct LoadedModel {
    model: LlamaModel,
    factory: ParserFactory,
}

impl LoadedModel {
    /// The llama.cpp model.
    pub fn model(&self) -> &LlamaModel {
        &self.model
    }
}

impl std::fmt::Debug for LoadedModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LoadedModel")
    }
}

/// How to run the model.
#[derive(Debug, Clone, Copy)]
pub struct RunSettings {
    /// CPU threads.
    pub threads: i32,
    /// Context size in tokens.
    pub context: u32,
}

/// One generation's figures.
#[derive(Debug, Clone, Copy, Default)]
pub struct Timings {
    /// Prompt tokens.
    pub prompt_tokens: usize,
    /// Generated tokens.
    pub generated_tokens: usize,
    /// Time to decode the prompt.
    pub prefill: Duration,
    /// Time to generate.
    pub decode: Duration,
    /// Time spent computing the grammar's token masks (inside sampling).
    pub constraint: Duration,
    /// Prompt tokens read from another sequence's cache instead of decoded (batched runs).
    pub reused_tokens: usize,
}

/// What one generation produced.
#[derive(Debug, Clone)]
pub struct Generation {
    /// The text, as streamed.
    pub text: String,
    /// Its figures.
    pub timings: Timings,
    /// False when the token budget ran out before the model stopped.
    pub finished: bool,
}

/// The llama.cpp backend, started once per process (it can only be started once).
pub fn backend() -> Result<&'static LlamaBackend, ProviderError> {
    static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();
    let backend = BACKEND.get_or_init(|| {
        let mut backend = LlamaBackend::init().map_err(|e| e.to_string())?;
        backend.void_logs();
        Ok(backend)
    });
    backend.as_ref().map_err(|e| ProviderError::Config {
        provider: "local".into(),
        message: format!("llama.cpp did not start: {e}"),
    })
}

/// A llama.cpp failure as a provider error.
pub fn failed(what: &str, e: impl std::fmt::Display) -> ProviderError {
    ProviderError::Malformed(format!("the local model failed to {what}: {e}"))
}

/// Loads a GGUF file.
pub fn load(path: &Path) -> Result<LoadedModel, ProviderError> {
    let model = LlamaModel::load_from_file(backend()?, path, &LlamaModelParams::default()).map_err(|e| {
        ProviderError::Config {
            provider: "local".into(),
            message: format!("cannot load {} as a GGUF model: {e}", path.display()),
        }
    })?;
    let tok_env = LlamaSampler::llguidance_tok_env(&model);
    let factory = ParserFactory::new_simple(&tok_env).map_err(|e| failed("prepare constrained decoding", e))?;
    Ok(LoadedModel { model, factory })
}

/// Generates an answer to `messages` (role, text), constrained to `schema` when given,
/// calling `on_text` with each piece. Stops at `max_tokens` (a typed error) or when
/// `cancelled` is set.
pub fn generate(
    loaded: &LoadedModel,
    settings: RunSettings,
    messages: &[(String, String)],
    schema: Option<&Value>,
    max_tokens: usize,
    cancelled: &AtomicBool,
    on_text: &mut dyn FnMut(&str),
) -> Result<Generation, ProviderError> {
    let model = &loaded.model;
    let tokens = prompt_tokens(model, messages)?;
    let room = settings.context as usize;
    if tokens.len() + 16 >= room {
        return Err(ProviderError::BadRequest(format!(
            "the input is {} tokens and the local model's context holds {room}; raise CONCLAVE_LOCAL_CONTEXT or review a smaller change",
            tokens.len()
        )));
    }
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(settings.context))
        .with_n_batch(BATCH as u32)
        .with_n_threads(settings.threads)
        .with_n_threads_batch(settings.threads);
    let mut ctx = model.new_context(backend()?, params).map_err(|e| failed("create a context", e))?;
    let mut timings = Timings { prompt_tokens: tokens.len(), ..Timings::default() };
    let started = Instant::now();
    let batch = prefill(&mut ctx, &tokens, cancelled)?;
    timings.prefill = started.elapsed();
    let decoder = Decoder {
        model,
        ctx,
        batch,
        sampler: sampler_for(loaded, schema)?,
        position: tokens.len(),
        max_tokens: max_tokens.min(room - tokens.len() - 1),
    };
    let decode_started = Instant::now();
    let (text, finished) = decoder.run(&mut timings, cancelled, on_text)?;
    timings.decode = decode_started.elapsed();
    Ok(Generation { text, timings, finished })
}

/// The conversation in the model's chat template, as tokens.
pub fn prompt_tokens(model: &LlamaModel, messages: &[(String, String)]) -> Result<Vec<LlamaToken>, ProviderError> {
    let template = model.chat_template(None).map_err(|e| failed("find its chat template", e))?;
    let chat: Vec<LlamaChatMessage> = messages
        .iter()
        .map(|(role, text)| LlamaChatMessage::new(role.clone(), text.clone()))
        .collect::<Result<_, _>>()
        .map_err(|e| failed("read the conversation", e))?;
    let prompt = model.apply_chat_template(&template, &chat, true).map_err(|e| failed("apply its chat template", e))?;
    Ok(model.vocab().tokenize(prompt.as_bytes(), model.vocab().should_add_bos(), true))
}

/// Decodes the prompt in batches; returns the batch holding its last token.
fn prefill(
    ctx: &mut LlamaContext<'_>,
    tokens: &[LlamaToken],
    cancelled: &AtomicBool,
) -> Result<LlamaBatch<'static>, ProviderError> {
    let mut batch = LlamaBatch::new(BATCH, 1);
    for (chunk_index, chunk) in tokens.chunks(BATCH).enumerate() {
        batch.clear();
        for (i, token) in chunk.iter().enumerate() {
            let position = chunk_index * BATCH + i;
            batch
                .add(*token, position as i32, &[0], position == tokens.len() - 1)
                .map_err(|e| failed("batch the prompt", e))?;
        }
        ctx.decode(&mut batch).map_err(|e| failed("read the prompt", e))?;
        if cancelled.load(Ordering::Relaxed) {
            return Err(ProviderError::Transport("cancelled".into()));
        }
    }
    Ok(batch)
}

/// Greedy sampling, behind the schema's grammar when there is a schema.
pub fn sampler_for(loaded: &LoadedModel, schema: Option<&Value>) -> Result<LlamaSampler, ProviderError> {
    let Some(schema) = schema else { return Ok(LlamaSampler::greedy()) };
    let mut bounded = schema.clone();
    if let Some(obj) = bounded.as_object_mut() {
        // Compact JSON, and keywords the grammar cannot express are left to validation.
        obj.insert(
            "x-guidance".into(),
            json!({"whitespace_flexible": false, "item_separator": ",", "key_separator": ":", "lenient": true}),
        );
    }
    let parser = loaded
        .factory
        .create_parser(TopLevelGrammar::from_json_schema(bounded))
        .map_err(|e| failed("compile the schema into a grammar", e))?;
    Ok(LlamaSampler::chain_simple([LlamaSampler::from(Matcher::new(Ok(parser))), LlamaSampler::greedy()]))
}

/// The token-by-token generation after the prompt.
struct Decoder<'m> {
    model: &'m LlamaModel,
    ctx: LlamaContext<'m>,
    batch: LlamaBatch<'static>,
    sampler: LlamaSampler,
    position: usize,
    max_tokens: usize,
}

impl Decoder<'_> {
    /// Generates until the model ends its turn (true) or the budget is spent (false).
    fn run(
        mut self,
        timings: &mut Timings,
        cancelled: &AtomicBool,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<(String, bool), ProviderError> {
        let mut out = TextOut::default();
        let mut finished = true;
        loop {
            if cancelled.load(Ordering::Relaxed) {
                return Err(ProviderError::Transport("cancelled".into()));
            }
            if timings.generated_tokens >= self.max_tokens {
                finished = false;
                break;
            }
            let sampled = Instant::now();
            let token = self.sampler.sample(&self.ctx, self.batch.n_tokens() - 1);
            timings.constraint += sampled.elapsed();
            if self.model.vocab().is_eog(token) {
                break;
            }
            timings.generated_tokens += 1;
            out.push(&self.model.vocab().token_to_piece(token, false, None), on_text);
            self.batch.clear();
            self.batch.add(token, self.position as i32, &[0], true).map_err(|e| failed("batch a token", e))?;
            self.position += 1;
            self.ctx.decode(&mut self.batch).map_err(|e| failed("generate", e))?;
        }
        Ok((out.finish(on_text), finished))
    }
}

/// The answer's text as tokens arrive: pieces may split a UTF-8 character, so only
/// complete characters are emitted.
#[derive(Debug, Default)]
pub struct TextOut {
    text: String,
    pending: Vec<u8>,
}

impl TextOut {
    /// Adds a token's bytes, emitting what forms complete characters.
    pub fn push(&mut self, bytes: &[u8], on_text: &mut dyn FnMut(&str)) {
        self.pending.extend_from_slice(bytes);
        let valid = match std::str::from_utf8(&self.pending) {
            Ok(s) => s.len(),
            Err(e) => e.valid_up_to(),
        };
        if valid > 0 {
            let piece = String::from_utf8_lossy(&self.pending[..valid]).into_owned();
            self.pending.drain(..valid);
            self.text.push_str(&piece);
            on_text(&piece);
        }
    }

    /// The whole text, after emitting any bytes left.
    pub fn finish(mut self, on_text: &mut dyn FnMut(&str)) -> String {
        if !self.pending.is_empty() {
            let piece = String::from_utf8_lossy(&self.pending).into_owned();
            self.text.push_str(&piece);
            on_text(&piece);
        }
        self.text
    }
}
