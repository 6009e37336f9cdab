//! Why Conclave could not get or use a token for a repository, typed so the
//! dispatcher can tell a configuration problem from a revoked installation or a forge
//! that is failing.

use crate::post::PostError;

/// Why authenticating to a forge failed.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// The environment does not configure the credentials, or configures them wrongly.
    #[error("{0}")]
    Config(String),
    /// Nothing configured gives a token for this repository.
    #[error("no token for {forge} repository {repository}: {hint}")]
    NoToken { forge: &'static str, repository: String, hint: String },
    /// GitHub refused to mint a token for the installation: revoked, suspended,
    /// uninstalled, or the app's JWT was refused.
    #[error("GitHub App {app} cannot get a token for installation {installation} (HTTP {status}: {message}): {hint}")]
    Installation { app: String, installation: u64, status: u16, message: String, hint: &'static str },
    /// The forge failed or refused the request for another reason (rate limits and
    /// server errors were already retried).
    #[error("{context}: {source}")]
    Forge {
        context: String,
        #[source]
        source: PostError,
    },
    /// The forge answered something Conclave cannot read.
    #[error("{context} answered something Conclave cannot read: {message}")]
    Malformed { context: String, message: String },
}
