//! Blocking work of a command (files, git, standard input) on tokio's blocking
//! threads, so that the runtime's threads stay free for the runs' tasks and the
//! progress display.

/// Runs `work` on a blocking thread; a panic in it goes on as a panic here.
pub(crate) async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    match tokio::task::spawn_blocking(work).await {
        Ok(value) => value,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}
