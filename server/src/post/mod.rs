//! `conclave review --post github|gitlab`: publishes a review on its pull (merge)
//! request, updating Conclave's earlier comments instead of duplicating them.
//!
//! Layout: `plan.rs` is the pure part both forges share (which items post, their
//! bodies and hidden markers, reconciling with posted comments into writes);
//! `lines.rs` reads which lines of the diff take a comment; `http.rs` is the REST
//! client (typed errors, rate limits waited out, retries with `backon`,
//! pagination); `github.rs` and `gitlab.rs` speak each forge's API.

pub mod github;
pub mod gitlab;
pub mod http;
pub mod lines;
pub mod plan;

use conclave_review::ReviewReport;
use conclave_shared::FindingGroup;
use std::fmt;
use std::path::Path;
use std::time::Duration;

/// Where to post.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Forge {
    /// A GitHub pull request, from GitHub Actions' environment.
    Github,
    /// A GitLab merge request, from GitLab CI's environment.
    Gitlab,
}

/// A resolved place to post: the forge's API, the token and the request.
#[derive(Debug)]
pub enum Target {
    /// A GitHub pull request.
    GitHub(github::Config),
    /// A GitLab merge request.
    GitLab(gitlab::Config),
}

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

/// What a posting wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Posted {
    /// New comments on diff lines.
    pub inline: usize,
    /// New items outside the diff (in a review body or the summary note).
    pub outside: usize,
    /// Comments edited (changed text, items marked fixed or added to the summary).
    pub edited: usize,
    /// Items marked fixed.
    pub fixed: usize,
}

impl fmt::Display for Posted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == Posted::default() {
            return f.write_str("nothing new to post");
        }
        write!(
            f,
            "{} new comment(s) on the diff, {} outside it, {} comment(s) edited ({} item(s) marked fixed)",
            self.inline, self.outside, self.edited, self.fixed
        )
    }
}

impl Target {
    /// Where to post, from the CI environment (`env` reads a variable); `pr`
    /// (`--pr`) wins over the environment's request number. Every missing or
    /// invalid piece is named at once.
    pub fn from_env(forge: Forge, pr: Option<u64>, env: &dyn Fn(&str) -> Option<String>) -> Result<Target, PostError> {
        let result = match forge {
            Forge::Github => github::Config::from_env(env, pr).map(Target::GitHub),
            Forge::Gitlab => gitlab::Config::from_env(env, pr).map(Target::GitLab),
        };
        result.map_err(|problems| {
            let forge = match forge {
                Forge::Github => "github",
                Forge::Gitlab => "gitlab",
            };
            PostError::Config(format!("--post {forge}: {}", problems.join("; ")))
        })
    }

    /// The request, for messages: `GitHub pull request acme/app#7`.
    pub fn describe(&self) -> String {
        match self {
            Target::GitHub(c) => format!("GitHub pull request {}#{}", c.repository, c.number),
            Target::GitLab(c) => format!("GitLab merge request !{} of project {}", c.iid, c.project),
        }
    }
}

/// Publishes `report` (a review of `repository`) on the request.
pub async fn publish(target: &Target, report: &ReviewReport, repository: &Path) -> Result<Posted, PostError> {
    let groups = anchored_contradictions(report, repository).await;
    let keep = |f: &conclave_shared::Finding| report.supported(f) && report.stable(f);
    let items = plan::items(&report.findings, &groups.iter().collect::<Vec<_>>(), keep);
    // An agent that failed reports nothing, which is no evidence that anything was fixed.
    let mark_fixed = report.degraded.is_empty();
    match target {
        Target::GitHub(config) => github::post(config, &items, mark_fixed).await,
        Target::GitLab(config) => gitlab::post(config, &items, mark_fixed).await,
    }
}

/// The contradictions, each side fingerprinted from the code it is about (as the
/// review's own findings are), so a contradiction keeps its marker across reviews
/// whatever the reviewers' wording.
async fn anchored_contradictions(report: &ReviewReport, repository: &Path) -> Vec<FindingGroup> {
    let mut groups: Vec<FindingGroup> = report.contradictions().cloned().collect();
    if groups.is_empty() {
        return groups;
    }
    let root = repository.to_path_buf();
    let fallback = groups.clone();
    tokio::task::spawn_blocking(move || {
        for group in &mut groups {
            conclave_review::pipeline::anchor_in_repository(&mut group.findings, &root);
        }
        groups
    })
    .await
    .unwrap_or(fallback)
}

/// A variable's value, or a note of what is missing.
fn required(env: &dyn Fn(&str) -> Option<String>, name: &str, what: &str, problems: &mut Vec<String>) -> String {
    match env(name).map(|v| v.trim().to_string()).filter(|v| !v.is_empty()) {
        Some(value) => value,
        None => {
            problems.push(format!("{name} is not set ({what})"));
            String::new()
        }
    }
}

/// A URL variable's value (a base URL of the forge's API), or a note of what is wrong.
fn api_url(value: &str, name: &str, problems: &mut Vec<String>) -> Option<reqwest::Url> {
    match reqwest::Url::parse(value) {
        Ok(url) if matches!(url.scheme(), "http" | "https") => Some(url),
        _ => {
            problems.push(format!("{name} `{value}` is not an http(s) URL; set it to the forge's API base URL"));
            None
        }
    }
}
