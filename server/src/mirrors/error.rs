//! Why a mirror could not be fetched or checked out: a name Conclave refuses to put
//! on disk, git's own message, or the file system.

/// Why a mirror operation failed.
#[derive(Debug, thiserror::Error)]
pub enum MirrorError {
    /// The repository's name cannot become a directory safely.
    #[error("repository `{name}` is refused: {reason}")]
    HostileName { name: String, reason: String },
    /// git failed; its message, cleaned of the token.
    #[error("{what} failed: {message}")]
    Git { what: String, message: String },
    /// The cache directory could not be used.
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

impl MirrorError {
    pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> MirrorError {
        let what = what.into();
        move |source| MirrorError::Io { what, source }
    }
}
