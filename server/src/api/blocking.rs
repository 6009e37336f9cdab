//! Work that blocks (files, directory walks, schema checks that read schema files)
//! moved off the async threads: the handlers of `conclaves.rs` and `schemas.rs`
//! await it on tokio's blocking pool.

use super::ApiError;

/// Runs `work` on the blocking pool and waits for it without holding an async thread.
pub async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(work).await.map_err(|e| ApiError::Internal(format!("a blocking task failed: {e}")))
}
