//! Calls into the run's [`OutputPolicy`](crate::policy::OutputPolicy) that cannot fail
//! silently: a hook that panics becomes a typed [`PolicyFailure`] naming the hook, which
//! fails the node it was called for, never an empty result that lets an unchecked
//! answer through or drops a comparison without a word.

use conclave_shared::LoweringNote;
use serde_json::Value;
use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, PoisonError};

use crate::policy::OutputPolicy;

/// A policy hook that panicked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the run's output policy failed in `{hook}`: {message}")]
pub struct PolicyFailure {
    /// The hook (`reject_answer`, `compare`, ...).
    pub hook: &'static str,
    /// What the panic said.
    pub message: String,
}

/// Runs `hook` off the async threads (it may read files), turning a panic into a
/// [`PolicyFailure`].
pub(crate) async fn off_thread<T: Send + 'static>(
    hook: &'static str,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, PolicyFailure> {
    tokio::task::spawn_blocking(work).await.map_err(|error| {
        let message = if error.is_panic() { panic_message(error.into_panic()) } else { error.to_string() };
        PolicyFailure { hook, message }
    })
}

/// Runs a quick `hook` in place, turning a panic into a [`PolicyFailure`].
pub(crate) fn in_place<T>(hook: &'static str, work: impl FnOnce() -> T) -> Result<T, PolicyFailure> {
    // Nothing the closure borrows is used after a panic but the error itself.
    std::panic::catch_unwind(AssertUnwindSafe(work))
        .map_err(|payload| PolicyFailure { hook, message: panic_message(payload) })
}

/// The run's policy while a run is planned: a `shape_schema` that panics is kept, to
/// refuse the run with it, instead of unwinding through the caller.
#[derive(Debug)]
pub(crate) struct ShapingGuard {
    inner: Arc<dyn OutputPolicy>,
    failure: Mutex<Option<PolicyFailure>>,
}

impl ShapingGuard {
    pub(crate) fn new(inner: Arc<dyn OutputPolicy>) -> ShapingGuard {
        ShapingGuard { inner, failure: Mutex::new(None) }
    }

    /// The first failure, if the policy failed.
    pub(crate) fn failure(&self) -> Option<PolicyFailure> {
        self.failure.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

impl OutputPolicy for ShapingGuard {
    fn shape_schema(&self, schema: &mut Value, findings_field: Option<&str>) -> Vec<LoweringNote> {
        in_place("shape_schema", || self.inner.shape_schema(schema, findings_field)).unwrap_or_else(|failure| {
            self.failure.lock().unwrap_or_else(PoisonError::into_inner).get_or_insert(failure);
            Vec::new()
        })
    }
}

/// The message a panic was raised with.
fn panic_message(payload: Box<dyn Any + Send>) -> String {
    match payload.downcast::<String>() {
        Ok(text) => *text,
        Err(payload) => match payload.downcast::<&'static str>() {
            Ok(text) => (*text).to_string(),
            Err(_) => "it panicked without a message".to_string(),
        },
    }
}
