//! The batcher's one llama.cpp context, shared by every running job as separate
//! sequences, each in a KV stream of its own (llama.cpp's non-unified cache) that
//! holds a whole window (`CONCLAVE_LOCAL_CONTEXT`): a new job copies the stream of the
//! sequence whose prompt shares the longest prefix with its own, cut to that prefix,
//! and decodes only the rest; each step decodes one token per live sequence in one
//! batch, each attending over its own stream only, so a step of several sequences
//! costs no more per sequence than one alone. The last finished prompt stays cached
//! for the next job (the Writer after the specialists).

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::token::LlamaToken;
use std::collections::VecDeque;
use std::num::NonZeroU32;
use std::time::Instant;

use super::generate::{BATCH, LoadedModel, RunSettings, backend, failed};
use super::job::{Counters, cancelled};
use super::sequence::{Ended, Prepared, Sequence};
use conclave_core::ProviderError;

/// Most sequences decoding at once (later jobs wait for one to end).
pub const MAX_LIVE: usize = 8;

/// A finished prompt kept in its stream for a later job to copy.
struct Kept {
    id: i32,
    tokens: Vec<LlamaToken>,
}

/// The context and its sequences, owned by the worker thread.
pub struct SharedContext<'m> {
    loaded: &'m LoadedModel,
    settings: RunSettings,
    counters: &'m Counters,
    ctx: Option<LlamaContext<'m>>,
    /// The context's KV streams: sequence ids run from 0 to `streams - 1`.
    streams: usize,
    live: Vec<Sequence>,
    kept: Option<Kept>,
    batch: LlamaBatch<'static>,
}

/// How many leading tokens `a` and `b` share.
pub fn common_prefix(a: &[LlamaToken], b: &[LlamaToken]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// The streams a new context needs for `waiting` jobs: one per job that can run at
/// once, and one more for the prompt the last of them leaves cached.
pub fn streams_for(waiting: usize) -> usize {
    waiting.clamp(1, MAX_LIVE) + 1
}

/// Whether an idle context with `streams` streams, one of them holding a kept prompt
/// or not, can start `waiting` jobs at once (else a context is made for them).
pub fn can_start_all(streams: usize, kept: bool, waiting: usize) -> bool {
    streams - usize::from(kept) >= waiting.min(MAX_LIVE)
}

impl<'m> SharedContext<'m> {
    /// No context yet: it is made for the first jobs.
    pub fn new(loaded: &'m LoadedModel, settings: RunSettings, counters: &'m Counters) -> SharedContext<'m> {
        SharedContext {
            loaded,
            settings,
            counters,
            ctx: None,
            streams: 0,
            live: Vec::new(),
            kept: None,
            batch: LlamaBatch::new(BATCH, 1),
        }
    }

    /// Whether no sequence is running.
    pub fn is_idle(&self) -> bool {
        self.live.is_empty()
    }

    /// Starts waiting jobs, in order, while a stream is free; when idle, first makes a
    /// context with a stream for each of them (unless the one there has enough).
    /// Cancelled waiting jobs end here. Every job fits a stream: `Prepared` refused
    /// the prompts a window cannot hold, and cut the budgets to what it leaves.
    pub fn admit(&mut self, waiting: &mut VecDeque<Prepared>) {
        waiting.retain_mut(|p| !p.job.is_cancelled());
        if waiting.is_empty() {
            return;
        }
        if self.live.is_empty()
            && let Err(e) = self.make_room(waiting.len())
        {
            while let Some(p) = waiting.pop_front() {
                p.job.finish(Err(e.clone()));
            }
            return;
        }
        while self.live.len() < MAX_LIVE {
            let Some(id) = self.free_id() else { break };
            let Some(next) = waiting.pop_front() else { break };
            let (source, shared) = self.best_source(&next.tokens);
            self.start(next, id, source, shared);
        }
    }

    /// Keeps the context when it has a free stream for each waiting job (up to
    /// `MAX_LIVE`) beside the kept prompt; else makes one with a stream for each.
    fn make_room(&mut self, waiting: usize) -> Result<(), ProviderError> {
        if self.ctx.is_some() && can_start_all(self.streams, self.kept.is_some(), waiting) {
            return Ok(());
        }
        self.ctx = None;
        self.kept = None;
        let streams = streams_for(waiting);
        let window = self.settings.context;
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(window.saturating_mul(streams as u32)))
            .with_n_batch(BATCH as u32)
            .with_n_seq_max(streams as u32)
            .with_kv_unified(false)
            .with_n_threads(self.settings.threads)
            .with_n_threads_batch(self.settings.threads);
        let ctx = self.loaded.model().new_context(backend()?, params).map_err(|e| failed("create a context", e))?;
        self.streams = streams;
        self.ctx = Some(ctx);
        Ok(())
    }

    /// The sequence (live or kept) sharing the longest prefix with `tokens`, and how
    /// many tokens to copy from it (at least the last prompt token is decoded, for its logits).
    fn best_source(&self, tokens: &[LlamaToken]) -> (Option<i32>, usize) {
        let live = self.live.iter().map(|s| (s.id, s.tokens.as_slice()));
        let kept = self.kept.iter().map(|k| (k.id, k.tokens.as_slice()));
        live.chain(kept)
            .map(|(id, t)| (Some(id), common_prefix(tokens, t).min(tokens.len() - 1)))
            .max_by_key(|&(_, n)| n)
            .filter(|&(_, n)| n > 0)
            .unwrap_or((None, 0))
    }

    /// A stream no live or kept sequence uses, if any.
    fn free_id(&self) -> Option<i32> {
        (0..self.streams as i32)
            .find(|id| !self.live.iter().any(|s| s.id == *id) && self.kept.as_ref().is_none_or(|k| k.id != *id))
    }

    /// Copies the shared prefix into stream `id`, decodes the rest of the prompt and
    /// samples the first token; the sequence then joins the decoding steps.
    fn start(&mut self, prepared: Prepared, id: i32, source: Option<i32>, shared: usize) {
        if let Some(src) = source
            && let Err(e) = self.copy_prefix(src, id, shared)
        {
            self.forget(id);
            return prepared.job.finish(Err(e));
        }
        let started = Instant::now();
        if let Err(e) = self.prefill(id, &prepared, shared) {
            self.forget(id);
            return prepared.job.finish(Err(e));
        }
        self.counters.record(prepared.tokens.len(), prepared.tokens.len() - shared, shared);
        let mut seq = Sequence::new(id, prepared, shared, started.elapsed());
        let index = self.batch.n_tokens() - 1;
        let ended = match self.ctx.as_ref() {
            Some(ctx) => seq.sample(self.loaded, ctx, index),
            None => Some(Ended::Cancelled),
        };
        match ended {
            None => self.live.push(seq),
            Some(ended) => self.retire(seq, ended),
        }
    }

    /// Makes stream `id` hold the first `shared` tokens of stream `src`. Streams are
    /// copied whole (llama.cpp copies across streams only so; the copy happens at the
    /// next decode), then the copy is cut back to the prefix.
    fn copy_prefix(&mut self, src: i32, id: i32, shared: usize) -> Result<(), ProviderError> {
        let ctx = self.ctx.as_mut().ok_or_else(|| failed("share a prompt prefix", "no context"))?;
        ctx.copy_kv_cache_seq(src, id, None, None).map_err(|e| failed("share a prompt prefix", e))?;
        match ctx.clear_kv_cache_seq(Some(id as u32), Some(shared as u32), None) {
            Ok(true) => Ok(()),
            Ok(false) => Err(failed("share a prompt prefix", "llama.cpp could not cut the copy")),
            Err(e) => Err(failed("share a prompt prefix", e)),
        }
    }

    /// Decodes `prepared`'s prompt from `from` on, in batches, into sequence `id`.
    fn prefill(&mut self, id: i32, prepared: &Prepared, from: usize) -> Result<(), ProviderError> {
        let ctx = self.ctx.as_mut().ok_or_else(|| failed("read the prompt", "no context"))?;
        let tokens = &prepared.tokens;
        for chunk_start in (from..tokens.len()).step_by(BATCH) {
            self.batch.clear();
            for (position, token) in tokens.iter().enumerate().skip(chunk_start).take(BATCH) {
                self.batch
                    .add(*token, position as i32, &[id], position == tokens.len() - 1)
                    .map_err(|e| failed("batch the prompt", e))?;
            }
            ctx.decode(&mut self.batch).map_err(|e| failed("read the prompt", e))?;
            if prepared.job.is_cancelled() {
                return Err(cancelled());
            }
        }
        Ok(())
    }

    /// One decoding step: the next token of every live sequence in one batch, then each
    /// samples its own. Sequences that end leave; a failed decode fails them all.
    pub fn step(&mut self) {
        let mut i = 0;
        while i < self.live.len() {
            if self.live[i].is_cancelled() {
                let seq = self.live.remove(i);
                self.retire(seq, Ended::Cancelled);
            } else {
                i += 1;
            }
        }
        if self.live.is_empty() {
            return;
        }
        self.batch.clear();
        for seq in &self.live {
            // A live sequence always holds its next token (`sample` sets it or ends it).
            let added = match seq.next {
                Some(token) => self.batch.add(token, seq.position(), &[seq.id], true).map_err(|e| e.to_string()),
                None => Err("a sequence without its next token".to_string()),
            };
            if let Err(e) = added {
                return self.fail_all(failed("batch a token", e));
            }
        }
        let Some(ctx) = self.ctx.as_mut() else { return self.fail_all(failed("generate", "no context")) };
        if let Err(e) = ctx.decode(&mut self.batch) {
            return self.fail_all(failed("generate", e));
        }
        let mut ended = Vec::new();
        for (index, seq) in self.live.iter_mut().enumerate() {
            seq.decoded();
            if let Some(end) = seq.sample(self.loaded, ctx, index as i32) {
                ended.push((index, end));
            }
        }
        for (i, end) in ended.into_iter().rev() {
            let seq = self.live.remove(i);
            self.retire(seq, end);
        }
    }

    /// Ends a sequence and frees its stream. The last one to end keeps its prompt
    /// cached there (replacing the previous kept prompt).
    fn retire(&mut self, seq: Sequence, ended: Ended) {
        let (id, prompt_len) = (seq.id, seq.prompt_len());
        let keep = self.live.is_empty() && matches!(ended, Ended::Done(_));
        let prompt = seq.tokens[..prompt_len].to_vec();
        seq.end(ended);
        if keep && let Some(ctx) = self.ctx.as_mut() {
            if let Some(old) = self.kept.take() {
                let _ = ctx.clear_kv_cache_seq(Some(old.id as u32), None, None);
            }
            let _ = ctx.clear_kv_cache_seq(Some(id as u32), Some(prompt_len as u32), None);
            self.kept = Some(Kept { id, tokens: prompt });
        } else {
            self.forget(id);
        }
    }

    /// Empties stream `id`.
    fn forget(&mut self, id: i32) {
        if let Some(ctx) = self.ctx.as_mut() {
            let _ = ctx.clear_kv_cache_seq(Some(id as u32), None, None);
        }
    }

    /// Fails every live sequence and drops the context, which the next job remakes.
    fn fail_all(&mut self, error: ProviderError) {
        for seq in self.live.drain(..) {
            seq.fail(error.clone());
        }
        self.ctx = None;
        self.kept = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(ids: &[i32]) -> Vec<LlamaToken> {
        ids.iter().map(|&t| LlamaToken(t)).collect()
    }

    #[test]
    fn a_shared_prefix_is_the_run_of_equal_leading_tokens() {
        let a = tokens(&[1, 2, 3, 4, 5]);
        assert_eq!(common_prefix(&a, &tokens(&[1, 2, 3, 9])), 3);
        assert_eq!(common_prefix(&a, &tokens(&[7, 2, 3])), 0);
        assert_eq!(common_prefix(&a, &tokens(&[1, 2])), 2);
    }

    #[test]
    fn a_context_has_a_stream_per_job_and_one_for_the_kept_prompt() {
        // Three specialists at once: three streams, and a fourth that the last to end
        // leaves its prompt in.
        assert_eq!(streams_for(3), 4);
        assert_eq!(streams_for(0), 2, "a context always has room for one job");
        assert_eq!(streams_for(20), MAX_LIVE + 1, "later jobs wait for a stream");
        // The Writer after them starts beside the kept prompt; a fourth job at once
        // needs a new context.
        assert!(can_start_all(4, true, 1));
        assert!(can_start_all(4, true, 3));
        assert!(!can_start_all(4, true, 4));
        assert!(can_start_all(4, false, 4));
        assert!(can_start_all(MAX_LIVE + 1, true, 20), "past MAX_LIVE, jobs wait rather than remake");
    }
}
