//! One generation asked of the local model's worker thread: the conversation, the
//! schema and budget, the flag that cancels it, and the channels that carry its
//! streamed text and its result back to the provider call that submitted it.

use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use tokio::sync::{mpsc, oneshot};

use super::generate::Generation;
use conclave_core::ProviderError;

/// A generation waiting for, or running on, the worker thread.
#[derive(Debug)]
pub struct Job {
    /// The conversation as (role, text) turns for the chat template.
    pub messages: Vec<(String, String)>,
    /// The answer's JSON Schema, lowered for the grammar, if any.
    pub schema: Option<Value>,
    /// Most tokens to generate.
    pub max_tokens: usize,
    /// Set when the caller is gone: the job ends and frees its sequence.
    pub cancelled: Arc<AtomicBool>,
    /// The answer's text, piece by piece.
    pub pieces: mpsc::UnboundedSender<String>,
    /// The outcome, sent once.
    pub done: oneshot::Sender<Result<Generation, ProviderError>>,
}

impl Job {
    /// Whether the caller is gone.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }

    /// Streams a piece of the answer (a caller that is gone is ignored).
    pub fn send(&self, piece: &str) {
        let _ = self.pieces.send(piece.to_string());
    }

    /// Ends the job with its outcome; the piece channel closes with it.
    pub fn finish(self, result: Result<Generation, ProviderError>) {
        let _ = self.done.send(result);
    }
}

/// The error a cancelled job ends with (nobody reads it: its caller is gone).
pub fn cancelled() -> ProviderError {
    ProviderError::Transport("cancelled".into())
}

/// Counters of the worker threads' prompt work, shared with the provider so tests
/// and logs can tell a prefix decoded once from one decoded for every sequence.
#[derive(Debug, Default)]
pub struct Counters {
    /// Jobs whose prompt was read.
    pub jobs: AtomicU64,
    /// Prompt tokens of those jobs (decoded or copied).
    pub prompt_tokens: AtomicU64,
    /// Prompt tokens decoded.
    pub prefilled_tokens: AtomicU64,
    /// Prompt tokens copied from another sequence's cache instead of decoded.
    pub reused_tokens: AtomicU64,
}

/// A snapshot of `Counters`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PromptCounts {
    /// Jobs whose prompt was read.
    pub jobs: u64,
    /// Prompt tokens of those jobs (decoded or copied).
    pub prompt_tokens: u64,
    /// Prompt tokens decoded.
    pub prefilled_tokens: u64,
    /// Prompt tokens copied from another sequence's cache instead of decoded.
    pub reused_tokens: u64,
}

impl Counters {
    /// Adds one job's prompt figures, once its prompt is read.
    pub fn record(&self, prompt: usize, prefilled: usize, reused: usize) {
        self.jobs.fetch_add(1, Ordering::Relaxed);
        self.prompt_tokens.fetch_add(prompt as u64, Ordering::Relaxed);
        self.prefilled_tokens.fetch_add(prefilled as u64, Ordering::Relaxed);
        self.reused_tokens.fetch_add(reused as u64, Ordering::Relaxed);
    }

    /// The figures so far.
    pub fn snapshot(&self) -> PromptCounts {
        PromptCounts {
            jobs: self.jobs.load(Ordering::Relaxed),
            prompt_tokens: self.prompt_tokens.load(Ordering::Relaxed),
            prefilled_tokens: self.prefilled_tokens.load(Ordering::Relaxed),
            reused_tokens: self.reused_tokens.load(Ordering::Relaxed),
        }
    }
}
