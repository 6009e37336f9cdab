//! A request's blocking work (reading conclave and schema files, resolving paths,
//! running git) on tokio's blocking threads, so that it never holds up the threads
//! that serve every other request.

use super::ApiError;

/// Runs `work` on a blocking thread; a panic in it is an internal error.
pub async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(work).await.map_err(|e| ApiError::Internal(format!("a blocking task stopped: {e}")))
}
