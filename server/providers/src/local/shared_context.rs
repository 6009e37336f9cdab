//! The batcher's one llama.cpp context, shared by every running job as separate
//! sequences: a new job copies the cache of the longest prompt prefix it shares with
//! a sequence already there and decodes only the rest; each step decodes one token per
//! live sequence in one batch. The last finished prompt stays cached for the next job
//! (the Writer after the specialists). Cells are counted conservatively, so a job joins
//! only when its own prompt tokens and whole budget fit.

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

/// A finished prompt kept in the context for a later job to copy.
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
    capacity: usize,
    reserved: usize,
    live: Vec<Sequence>,
    kept: Option<Kept>,
    batch: LlamaBatch<'static>,
}

/// How many leading tokens `a` and `b` share.
pub fn common_prefix(a: &[LlamaToken], b: &[LlamaToken]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Context cells the jobs need when each shares its longest prefix with `cached`
/// or an earlier job: own prompt tokens plus budget, summed.
pub fn cells_needed<'a>(jobs: impl Iterator<Item = (&'a [LlamaToken], usize)>, cached: &[&[LlamaToken]]) -> usize {
    let mut seen: Vec<&[LlamaToken]> = cached.to_vec();
    let mut total = 0;
    for (tokens, budget) in jobs {
        let shared = seen.iter().map(|s| common_prefix(tokens, s)).max().unwrap_or(0).min(tokens.len() - 1);
        total += tokens.len() - shared + budget;
        seen.push(tokens);
    }
    total
}

impl<'m> SharedContext<'m> {
    /// No context yet: it is made for the first jobs.
    pub fn new(loaded: &'m LoadedModel, settings: RunSettings, counters: &'m Counters) -> SharedContext<'m> {
        SharedContext {
            loaded,
            settings,
            counters,
            ctx: None,
            capacity: 0,
            reserved: 0,
            live: Vec::new(),
            kept: None,
            batch: LlamaBatch::new(BATCH, 1),
        }
    }

    /// Whether no sequence is running.
    pub fn is_idle(&self) -> bool {
        self.live.is_empty()
    }

    /// Starts waiting jobs, in order, while their cells fit; when idle, first makes a
    /// context that fits them (the first at least). Cancelled waiting jobs end here.
    pub fn admit(&mut self, waiting: &mut VecDeque<Prepared>) {
        waiting.retain_mut(|p| !p.job.is_cancelled());
        if waiting.is_empty() {
            return;
        }
        if self.live.is_empty()
            && let Err(e) = self.make_room(waiting)
        {
            while let Some(p) = waiting.pop_front() {
                p.job.finish(Err(e.clone()));
            }
            return;
        }
        while self.live.len() < MAX_LIVE {
            let Some(next) = waiting.front() else { break };
            let (source, shared) = self.best_source(&next.tokens);
            let need = next.tokens.len() - shared + next.budget;
            if self.reserved + need > self.capacity {
                break;
            }
            let Some(next) = waiting.pop_front() else { break };
            self.start(next, source, shared, need);
        }
        if self.live.is_empty() && !waiting.is_empty() {
            // Nothing runs and the next job does not fit beside the kept prompt: the next
            // round makes a context that fits it, rather than spin.
            self.ctx = None;
            self.kept = None;
            self.reserved = 0;
        }
    }

    /// Keeps the context when the waiting jobs fit beside the kept prompt; else makes
    /// one for them (the per-sequence context on top, for jobs that join later).
    fn make_room(&mut self, waiting: &VecDeque<Prepared>) -> Result<(), ProviderError> {
        let jobs = || waiting.iter().take(MAX_LIVE).map(|p| (p.tokens.as_slice(), p.budget));
        let fits = {
            let cached: Vec<&[LlamaToken]> = self.kept.iter().map(|k| k.tokens.as_slice()).collect();
            self.ctx.is_some() && self.reserved + cells_needed(jobs(), &cached) <= self.capacity
        };
        if fits {
            return Ok(());
        }
        self.ctx = None;
        self.kept = None;
        self.reserved = 0;
        let capacity = cells_needed(jobs(), &[]) + self.settings.context as usize;
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(capacity as u32))
            .with_n_batch(BATCH as u32)
            .with_n_seq_max(MAX_LIVE as u32 + 1)
            .with_kv_unified(true)
            .with_n_threads(self.settings.threads)
            .with_n_threads_batch(self.settings.threads);
        let ctx = self.loaded.model().new_context(backend()?, params).map_err(|e| failed("create a context", e))?;
        self.capacity = ctx.n_ctx() as usize;
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

    /// A sequence id no live or kept sequence uses.
    fn free_id(&self) -> i32 {
        (0..=MAX_LIVE as i32)
            .find(|id| !self.live.iter().any(|s| s.id == *id) && self.kept.as_ref().is_none_or(|k| k.id != *id))
            .unwrap_or(MAX_LIVE as i32)
    }

    /// Copies the shared prefix, decodes the rest of the prompt and samples the first
    /// token; the sequence then joins the decoding steps.
    fn start(&mut self, prepared: Prepared, source: Option<i32>, shared: usize, need: usize) {
        let id = self.free_id();
        if let Some(src) = source {
            if let Some(s) = self.live.iter_mut().find(|s| s.id == src) {
                s.shared = true;
            }
            if let Some(ctx) = self.ctx.as_mut()
                && let Err(e) = ctx.copy_kv_cache_seq(src, id, Some(0), Some(shared as u32))
            {
                return prepared.job.finish(Err(failed("share a prompt prefix", e)));
            }
        }
        let started = Instant::now();
        match self.prefill(id, &prepared, shared) {
            Ok(()) => {}
            Err(e) => {
                self.forget(id);
                return prepared.job.finish(Err(e));
            }
        }
        self.counters.record(prepared.tokens.len(), prepared.tokens.len() - shared, shared);
        self.reserved += need;
        let mut seq = Sequence::new(id, prepared, shared, need, started.elapsed());
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

    /// Ends a sequence and frees its cells. The last one to end keeps its prompt cached
    /// (replacing the previous kept prompt); with none live, the count starts over from it.
    fn retire(&mut self, seq: Sequence, ended: Ended) {
        let (id, prompt_len) = (seq.id, seq.prompt_len());
        let keep = self.live.is_empty() && matches!(ended, Ended::Done(_));
        let prompt = seq.tokens[..prompt_len].to_vec();
        if !seq.shared {
            self.reserved = self.reserved.saturating_sub(seq.reserved);
        }
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
        if self.live.is_empty() {
            self.reserved = self.kept.as_ref().map_or(0, |k| k.tokens.len());
        }
    }

    /// Removes sequence `id`'s cells (cells another sequence shares stay).
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
        self.reserved = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(ids: &[i32]) -> Vec<LlamaToken> {
        ids.iter().map(|&t| LlamaToken(t)).collect()
    }

    #[test]
    fn a_shared_prefix_is_counted_once() {
        let a = tokens(&[1, 2, 3, 4, 5]);
        let b = tokens(&[1, 2, 3, 9]);
        let c = tokens(&[7, 8]);
        assert_eq!(common_prefix(&a, &b), 3);
        let jobs = [(a.as_slice(), 10), (b.as_slice(), 10), (c.as_slice(), 1)];
        // a: 5 + 10; b: 1 own token + 10; c: 2 + 1.
        assert_eq!(cells_needed(jobs.into_iter(), &[]), 29);
        // With `a` cached, `a` itself decodes only its last token.
        assert_eq!(cells_needed(jobs.into_iter().take(1), &[a.as_slice()]), 11);
    }
}
