//! Why posting a review failed, typed: the environment, a refused or unknown token,
//! rate limits, the forge's failures, and patches that cannot be read.

use std::time::Duration;

use super::lines;

/// Why posting failed.
#[derive(Debug, thiserror::Error)]
pub enum PostError {
    /// The environment does not say where or how to post.
    #[error("{0}")]
    Config(String),
    /// The token was refused.
    #[error("{request} was refused (HTTP {status}: {message}): the token lacks permission; {hint}")]
    Permission { request: String, status: u16, message: String, hint: &'static str },
    /// The token was not accepted at all.
    #[error(
        "{request} was refused (HTTP 401: {message}): the token in {variable} is not valid (wrong or expired); give a valid one"
    )]
    Unauthorized { request: String, message: String, variable: &'static str },
    /// Rate limited, and the retries are used up or the wait is too long.
    #[error("{request} was rate limited{}", wait_text(*.wait))]
    RateLimited { request: String, wait: Option<Duration> },
    /// The forge failed.
    #[error("{request} failed on the forge's side (HTTP {status}: {message})")]
    Server { request: String, status: u16, message: String },
    /// The forge refused the request for another reason.
    #[error("{request} was refused (HTTP {status}: {message})")]
    Status { request: String, status: u16, message: String },
    /// No answer.
    #[error("{request} got no answer: {message}")]
    Transport { request: String, message: String },
    /// An answer Conclave cannot read.
    #[error("{request} answered something Conclave cannot read: {message}")]
    Malformed { request: String, message: String },
    /// GitHub's GraphQL API answered with errors (it does so with HTTP 200).
    #[error("{request} was refused by GitHub's GraphQL API: {message}")]
    GraphQl { request: String, message: String },
    /// A patch of the diff cannot be read.
    #[error(transparent)]
    Patch(#[from] lines::PatchError),
}

fn wait_text(wait: Option<Duration>) -> String {
    match wait {
        Some(wait) => format!(" (the forge asks to wait {}s)", wait.as_secs()),
        None => String::new(),
    }
}
