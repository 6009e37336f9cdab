//! `conclave review --post github|gitlab`: publishes a review on its pull (merge)
//! request, updating Conclave's earlier comments instead of duplicating them.
//!
//! Layout: `plan.rs` is the pure part both forges share (which items post, their
//! bodies and hidden markers, reconciling with posted comments into writes);
//! `replies.rs` the pure part of dismissals from replies (the command, the answers
//! and their markers); `posting.rs` what one posting publishes; `lines.rs` reads which lines of the diff take a comment;
//! `http.rs` is the REST client (typed errors, rate limits waited out, retries with
//! `backon`, pagination); `github.rs` and `gitlab.rs` speak each forge's API, and
//! `github_threads.rs` GitHub's GraphQL API to resolve review threads.

mod ci_env;
pub mod error;
pub mod github;
pub mod github_threads;
pub mod gitlab;
pub mod http;
pub mod lines;
pub mod plan;
pub mod posting;
pub mod replies;

pub use error::PostError;
pub use plan::Posted;
pub use replies::{Reply, Verdict};

use conclave_core::{RunStore, StoredDismissal};
use conclave_review::ReviewReport;
use conclave_review::inert::{LinkPolicy, sanitize};
use conclave_shared::FindingGroup;
use std::collections::BTreeSet;
use std::path::Path;

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

    /// The repository's key, under which the run store keeps the dismissals made on
    /// its requests: GitHub's `owner/name`; GitLab's `CI_PROJECT_PATH`, else the
    /// project id. The one place it is derived: a review without `--post` gives the
    /// same with `--repository-key`.
    pub fn repository_key(&self) -> &str {
        match self {
            Target::GitHub(c) => &c.repository,
            Target::GitLab(c) => &c.key,
        }
    }

    /// The web URL of the repository's pages, the only place links in a posting
    /// (and the review's reports) may point to.
    pub fn web_url(&self) -> Option<&str> {
        match self {
            Target::GitHub(c) => Some(&c.web_url),
            Target::GitLab(c) => c.web_url.as_deref(),
        }
    }

    /// The `/conclave dismiss` replies to Conclave's comments not answered yet, with
    /// their verdicts.
    pub async fn read_replies(&self) -> Result<Vec<Reply>, PostError> {
        match self {
            Target::GitHub(config) => github::read_replies(config).await,
            Target::GitLab(config) => gitlab::read_replies(config).await,
        }
    }

    /// The request, for messages: `GitHub pull request acme/app#7`.
    pub fn describe(&self) -> String {
        match self {
            Target::GitHub(c) => format!("GitHub pull request {}#{}", c.repository, c.number),
            Target::GitLab(c) => format!("GitLab merge request !{} of project {}", c.iid, c.project),
        }
    }
}

/// The `/conclave dismiss` replies on the request not answered yet, the dismissals
/// of those that count stored in the run store under the target's repository key
/// (so the review about to be reported applies them). Each reply's verdict, and a
/// forge or store failure, is told to `say` (the command line prints it, the
/// service logs it): a failure leaves the reply for a later posting to read again.
pub async fn gather_replies(target: &Target, store: &dyn RunStore, say: &(dyn Fn(String) + Sync)) -> Vec<Reply> {
    let replies = match target.read_replies().await {
        Ok(replies) => replies,
        Err(e) => {
            say(format!("warning: the replies on {} were not read: {e}", target.describe()));
            return Vec::new();
        }
    };
    let mut kept = Vec::with_capacity(replies.len());
    'replies: for reply in replies {
        if reply.verdict == Verdict::Dismissed {
            for fingerprint in &reply.fingerprints {
                let dismissal = StoredDismissal {
                    repository: target.repository_key().to_string(),
                    fingerprint: fingerprint.clone(),
                    reason: reply.reason.clone(),
                    author: format!("@{}", reply.author),
                    created_at_ms: conclave_core::now_ms(),
                    source: reply.source.clone(),
                };
                if let Err(e) = store.put_dismissal(&dismissal).await {
                    say(format!("warning: the dismissal in {} was not stored: {e}", reply.source));
                    continue 'replies;
                }
            }
        }
        let what = match reply.verdict {
            Verdict::Dismissed => format!("dismissed by @{}: {}", reply.author, reply.reason),
            Verdict::NoReason => format!("not dismissed: @{} gave no reason", reply.author),
            Verdict::NoPermission => format!("not dismissed: @{} lacks write access", reply.author),
        };
        say(format!("reply {}: {what}", reply.source));
        kept.push(reply);
    }
    kept
}

/// Publishes `report` (a review of `repository`) on the request, and answers the
/// `/conclave dismiss` `replies` in their threads.
pub async fn publish(
    target: &Target,
    report: &ReviewReport,
    repository: &Path,
    replies: &[Reply],
) -> Result<Posted, PostError> {
    let groups = anchored_contradictions(report, repository).await;
    let keep = |f: &conclave_shared::Finding| report.supported(f) && report.stable(f);
    // The forge's link policy, over items built from text the report pass already
    // sanitized: sanitizing again changes nothing unless the policies differ.
    let links = target.web_url().and_then(LinkPolicy::repository).unwrap_or_default();
    let items: Vec<plan::Item> = plan::items(&report.findings, &groups.iter().collect::<Vec<_>>(), keep)
        .into_iter()
        .map(|item| plan::Item {
            inline: sanitize(&item.inline, &links),
            listed: sanitize(&item.listed, &links),
            ..item
        })
        .collect();
    // An agent that failed reports nothing, which is no evidence that anything was fixed.
    let mark_fixed = report.degraded.is_empty();
    // What was reviewed (in an incremental review, which commits now and which
    // earlier) heads the summary a posting writes.
    // So does which side configured it, when the change edits its configuration.
    let heads: Vec<String> = [
        report.scope.as_ref().map(conclave_review::incremental::Scope::summary),
        report.configuration.as_ref().and_then(|c| c.summary()),
    ]
    .into_iter()
    .flatten()
    .collect();
    let scope = (!heads.is_empty()).then(|| sanitize(&heads.join("\n\n"), &links));
    let dismissed: BTreeSet<String> =
        report.findings.iter().filter(|f| f.dismissed.is_some()).map(conclave_review::report::fingerprint).collect();
    let posting =
        posting::Posting { items: &items, mark_fixed, scope: scope.as_deref(), dismissed: &dismissed, replies };
    match target {
        Target::GitHub(config) => github::post(config, &posting).await,
        Target::GitLab(config) => gitlab::post(config, &posting).await,
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
            conclave_review::repository_anchors::anchor_in_repository(&mut group.findings, &root);
        }
        groups
    })
    .await
    .unwrap_or(fallback)
}
