//! One job's sequence in the batcher's shared context: its prompt as tokens, its own
//! grammar-constrained greedy sampler, and the checks that end it (end of turn, its
//! token budget, cancellation), the same as a generation alone.

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use std::time::Instant;

use super::generate::{Generation, LoadedModel, RunSettings, TextOut, Timings, failed, prompt_tokens, sampler_for};
use super::job::Job;
use conclave_core::ProviderError;

/// A job whose prompt is tokenized and whose grammar is compiled, waiting for a sequence.
pub struct Prepared {
    /// The job.
    pub job: Job,
    /// The prompt, chat template applied.
    pub tokens: Vec<LlamaToken>,
    /// Tokens it may generate: its `max_tokens`, or what its context room leaves.
    pub budget: usize,
    sampler: LlamaSampler,
}

impl Prepared {
    /// Tokenizes `job`'s prompt and compiles its grammar; a prompt that does not fit
    /// `settings.context` (the room of one sequence) is refused as today, ending the job.
    pub fn new(loaded: &LoadedModel, settings: RunSettings, job: Job) -> Option<Prepared> {
        match read(loaded, settings, &job) {
            Ok((tokens, budget, sampler)) => Some(Prepared { job, tokens, budget, sampler }),
            Err(e) => {
                job.finish(Err(e));
                None
            }
        }
    }
}

/// `job`'s prompt as tokens, its budget and its sampler.
fn read(
    loaded: &LoadedModel,
    settings: RunSettings,
    job: &Job,
) -> Result<(Vec<LlamaToken>, usize, LlamaSampler), ProviderError> {
    let tokens = prompt_tokens(loaded.model(), &job.messages)?;
    let room = settings.context as usize;
    if tokens.is_empty() {
        return Err(failed("read the conversation", "the prompt has no tokens"));
    }
    if tokens.len() + 16 >= room {
        return Err(ProviderError::BadRequest(format!(
            "the input is {} tokens and the local model's context holds {room}; raise CONCLAVE_LOCAL_CONTEXT or \
             review a smaller change",
            tokens.len()
        )));
    }
    let sampler = sampler_for(loaded, job.schema.as_ref())?;
    let budget = job.max_tokens.min(room - tokens.len() - 1);
    Ok((tokens, budget, sampler))
}

/// Why a sequence stopped.
#[derive(Debug)]
pub enum Ended {
    /// The model ended its turn (true) or the budget ran out (false).
    Done(bool),
    /// The caller is gone.
    Cancelled,
}

/// A live sequence: its tokens in the context, and the token sampled but not yet decoded.
pub struct Sequence {
    /// Its llama.cpp sequence id.
    pub id: i32,
    /// The tokens decoded into the context for it, by position.
    pub tokens: Vec<LlamaToken>,
    /// Context cells counted for it (its own prompt tokens and its budget).
    pub reserved: usize,
    /// Whether a later sequence copied part of its cache (its cells may outlive it).
    pub shared: bool,
    /// The sampled token the next step decodes.
    pub next: Option<LlamaToken>,
    prompt_len: usize,
    budget: usize,
    sampler: LlamaSampler,
    out: TextOut,
    timings: Timings,
    decode_started: Instant,
    job: Job,
}

impl Sequence {
    /// A sequence for `prepared` whose prompt is in the context: `reused` tokens copied,
    /// the rest decoded in `prefill`.
    pub fn new(id: i32, prepared: Prepared, reused: usize, reserved: usize, prefill: std::time::Duration) -> Sequence {
        let Prepared { job, tokens, budget, sampler } = prepared;
        let timings = Timings { prompt_tokens: tokens.len(), reused_tokens: reused, prefill, ..Timings::default() };
        Sequence {
            id,
            prompt_len: tokens.len(),
            tokens,
            reserved,
            shared: false,
            next: None,
            budget,
            sampler,
            out: TextOut::default(),
            timings,
            decode_started: Instant::now(),
            job,
        }
    }

    /// The position of the next token to decode.
    pub fn position(&self) -> i32 {
        self.tokens.len() as i32
    }

    /// The prompt's length in tokens.
    pub fn prompt_len(&self) -> usize {
        self.prompt_len
    }

    /// Records that `next` was decoded (it is now in the context).
    pub fn decoded(&mut self) {
        if let Some(token) = self.next.take() {
            self.tokens.push(token);
        }
    }

    /// Whether the caller is gone.
    pub fn is_cancelled(&self) -> bool {
        self.job.is_cancelled()
    }

    /// Picks the next token from the logits at batch index `index`, as a generation
    /// alone does: stop when cancelled or out of budget, else sample; the end of turn
    /// ends it, any other token is streamed and becomes `next`.
    pub fn sample(&mut self, loaded: &LoadedModel, ctx: &LlamaContext<'_>, index: i32) -> Option<Ended> {
        if self.job.is_cancelled() {
            return Some(Ended::Cancelled);
        }
        if self.timings.generated_tokens >= self.budget {
            return Some(Ended::Done(false));
        }
        let sampled = Instant::now();
        let token = self.sampler.sample(ctx, index);
        self.timings.constraint += sampled.elapsed();
        let vocab = loaded.model().vocab();
        if vocab.is_eog(token) {
            return Some(Ended::Done(true));
        }
        self.timings.generated_tokens += 1;
        let job = &self.job;
        self.out.push(&vocab.token_to_piece(token, false, None), &mut |piece| job.send(piece));
        self.next = Some(token);
        None
    }

    /// Ends the job: its generation when done, an error when cancelled.
    pub fn end(self, ended: Ended) {
        let Sequence { job, out, mut timings, decode_started, .. } = self;
        let result = match ended {
            Ended::Cancelled => Err(super::job::cancelled()),
            Ended::Done(finished) => {
                timings.decode = decode_started.elapsed();
                let text = out.finish(&mut |piece| job.send(piece));
                Ok(Generation { text, timings, finished })
            }
        };
        job.finish(result);
    }

    /// Ends the job with `error`.
    pub fn fail(self, error: ProviderError) {
        self.job.finish(Err(error));
    }
}
