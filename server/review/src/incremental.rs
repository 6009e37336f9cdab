//! Incremental reviews: review only what is new since the branch's last review.
//!
//! [`resolve`] finds the earlier review (the newest stored review of the branch, as
//! a baseline of `auto` finds it) and decides the review's [`Scope`]: the commits
//! since the commit it reviewed, or a full review and why (no earlier review, its
//! commit no longer in the branch's history after a force-push, nothing new). The
//! pipeline then reads only `since..HEAD` (`diff::collect_change_since`), records
//! the scope in the run input, and [`carry_forward`] puts the earlier findings on
//! code the new commits did not touch back into the report, `unchanged`, while
//! those on touched code are left to the new review: raised again, or gone.

use conclave_core::{ReviewOf, RunStore, StoreError};
use conclave_shared::{BaselineState, Finding};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;

use crate::baseline::Baseline;
use crate::diff::{ChangeError, ChangedFile, Head, git, repository_root, verify_base};
use crate::repository_anchors::anchor_in_repository;

/// The run input's key for the review's scope.
pub const SCOPE_KEY: &str = "scope";

/// The most commits a scope lists on each side; the rest are counted.
const MAX_LISTED_COMMITS: usize = 50;

/// What to review since: the branch's last stored review, or a given commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Since {
    /// The commit the newest stored review of the branch reviewed.
    Auto,
    /// This commit (a hash or any name git reads).
    Commit(String),
}

impl Since {
    /// `auto`, or a commit.
    pub fn parse(text: &str) -> Since {
        if text == "auto" { Since::Auto } else { Since::Commit(text.to_string()) }
    }
}

/// One commit, as a report lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Commit {
    /// Its full hash.
    pub commit: String,
    /// The first line of its message.
    pub subject: String,
}

/// Commits listed, with how many there were in all.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Commits {
    /// The newest first, at most 50.
    pub listed: Vec<Commit>,
    /// How many there are, listed or not.
    pub total: usize,
}

/// What a review covered: only the commits since an earlier review, or the whole
/// change (and why, when an incremental review was asked for).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// Only `since..HEAD`.
    Incremental {
        /// The commit the earlier review reviewed.
        since: String,
        /// The earlier review run, when one was found in the store.
        earlier_run: Option<String>,
        /// The commits reviewed now.
        now: Commits,
        /// The commits an earlier review reviewed (from the base, when given).
        earlier: Commits,
    },
    /// The whole change, although only what is new was asked for.
    Full {
        /// Why.
        why: String,
    },
}

impl Scope {
    /// The scope recorded in a run input, if any.
    pub fn of_input(input: &Value) -> Option<Scope> {
        serde_json::from_value(input.get(SCOPE_KEY)?.clone()).ok()
    }

    /// Whether only the new commits were reviewed.
    pub fn is_incremental(&self) -> bool {
        matches!(self, Scope::Incremental { .. })
    }

    /// One line for people: what was reviewed now and what earlier.
    pub fn describe(&self) -> String {
        match self {
            Scope::Incremental { since, earlier_run, now, earlier } => {
                let by = earlier_run.as_deref().map(|r| format!(" by run {r}")).unwrap_or_default();
                format!(
                    "incremental review: {} new commit(s) since {} reviewed now; {} commit(s) reviewed earlier{by}",
                    now.total,
                    short(since),
                    earlier.total
                )
            }
            Scope::Full { why } => format!("full review: {why}"),
        }
    }
}

impl Scope {
    /// A few Markdown lines for a pull request's summary: which commits were
    /// reviewed now and which earlier, or why the review is full.
    pub fn summary(&self) -> String {
        match self {
            Scope::Incremental { since, earlier_run, now, earlier } => {
                let listed: Vec<String> =
                    now.listed.iter().take(5).map(|c| format!("`{}` {}", short(&c.commit), c.subject.trim())).collect();
                let more = now.total.saturating_sub(listed.len());
                let more = if more > 0 { format!(" and {more} more") } else { String::new() };
                let by = earlier_run.as_deref().map(|r| format!(" (run `{r}`)")).unwrap_or_default();
                format!(
                    "{} commit(s) reviewed now, since `{}`: {}{more}. {} commit(s) reviewed earlier{by}; what it found on \
                     code the new commits did not touch is carried forward.",
                    now.total,
                    short(since),
                    listed.join("; "),
                    earlier.total
                )
            }
            Scope::Full { why } => format!("Full review: {why}."),
        }
    }
}

/// The first 12 digits of a hash.
pub fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}

/// What [`resolve`] decided: the scope, the commit to review since when the review
/// is incremental, and the earlier review's report to compare with and carry from.
#[derive(Debug, Clone)]
pub struct Resolution {
    /// What the review covers.
    pub scope: Scope,
    /// The earlier review's findings, when it was found.
    pub earlier: Option<Baseline>,
}

impl Resolution {
    /// The commit to review since, when the review is incremental.
    pub fn since(&self) -> Option<&str> {
        match &self.scope {
            Scope::Incremental { since, .. } => Some(since),
            Scope::Full { .. } => None,
        }
    }
}

/// Why the scope could not be decided.
#[derive(Debug, thiserror::Error)]
pub enum ScopeError {
    /// git failed or the repository is not one.
    #[error(transparent)]
    Change(#[from] ChangeError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The earlier review's report could not be read.
    #[error("the earlier review {run}: {message}")]
    Report {
        /// Its run.
        run: String,
        /// What is wrong.
        message: String,
    },
}

/// Finds the earlier review of the branch checked out in `repository` and decides
/// what to review: the commits since `since` (or since the earlier review's commit,
/// with [`Since::Auto`]), or the whole change and why. `base` is the base of the
/// change, whose commits up to `since` the earlier review covered.
pub async fn resolve(
    store: &dyn RunStore,
    repository: &Path,
    base: Option<&str>,
    since: &Since,
) -> Result<Resolution, ScopeError> {
    let repository = repository.to_path_buf();
    let (root, head) = blocking(move || {
        let root = repository_root(&repository)?;
        let head = Head::of(&root);
        Ok((root, head))
    })
    .await?;
    let earlier = match &head.branch {
        Some(branch) => latest_review_of(store, &root, branch).await?,
        None => None,
    };
    let earlier_commit = match &earlier {
        Some(run) => store.get_run(run).await?.and_then(|r| reviewed_commit(&r.input)),
        None => None,
    };
    let report = match &earlier {
        Some(run) => Some(earlier_report(store, run).await?),
        None => None,
    };
    let (since, base) = (since.clone(), base.map(str::to_string));
    let (earlier_run, branch) = (earlier.clone(), head.branch.clone());
    let scope = blocking(move || {
        decide(&root, base.as_deref(), &since, branch.as_deref(), earlier_run.as_deref(), earlier_commit.as_deref())
    })
    .await?;
    // Findings are carried only from a review of the very commit reviewed since.
    let earlier = report.filter(|_| matches!(&scope, Scope::Incremental { earlier_run: Some(_), .. }));
    Ok(Resolution { scope, earlier })
}

/// [`resolve`] from a known earlier review: `earlier_run`, the last review posted on
/// a pull request (a service knows it; a branch's newest review may be one that was
/// superseded or never posted). Without one the review is full.
pub async fn resolve_from_run(
    store: &dyn RunStore,
    repository: &Path,
    base: Option<&str>,
    earlier_run: Option<&str>,
) -> Result<Resolution, ScopeError> {
    let Some(run) = earlier_run else {
        let why = "no review of this pull request was posted yet".to_string();
        return Ok(Resolution { scope: Scope::Full { why }, earlier: None });
    };
    let earlier_commit = store.get_run(run).await?.and_then(|r| reviewed_commit(&r.input));
    let report = earlier_report(store, run).await.ok();
    let (repository, base, run) = (repository.to_path_buf(), base.map(str::to_string), run.to_string());
    let scope = blocking(move || {
        let root = repository_root(&repository)?;
        let branch = Some("the pull request");
        decide(&root, base.as_deref(), &Since::Auto, branch, Some(&run), earlier_commit.as_deref())
    })
    .await?;
    let earlier = report.filter(|_| matches!(&scope, Scope::Incremental { earlier_run: Some(_), .. }));
    Ok(Resolution { scope, earlier })
}

/// The newest succeeded review run of the repository at `root` whose reviewed head
/// was the branch `branch` (written as a base may be: `main`, `origin/main`); `None`
/// when there is none. One indexed query of the store, however many runs it holds.
pub async fn latest_review_of(store: &dyn RunStore, root: &Path, branch: &str) -> Result<Option<String>, StoreError> {
    let review = ReviewOf { repository: root.display().to_string(), branches: Head::names_for(branch) };
    store.latest_review(&review).await
}

/// The commit a stored review reviewed, from its run input.
fn reviewed_commit(input: &Value) -> Option<String> {
    input.pointer("/head/commit")?.as_str().map(str::to_string)
}

/// The earlier review an incremental run carries findings from, as its run input
/// records it (`None` for any other run, or when its report cannot be read): what a
/// process that finishes a review it did not resolve (a worker, a server) compares
/// with, so every way of finishing carries the same findings.
pub async fn earlier_of_input(store: &dyn RunStore, input: &Value) -> Option<Baseline> {
    match Scope::of_input(input)? {
        Scope::Incremental { earlier_run: Some(run), .. } => earlier_report(store, &run).await.ok(),
        _ => None,
    }
}

/// A stored review's JSON report, as a baseline.
async fn earlier_report(store: &dyn RunStore, run: &str) -> Result<Baseline, ScopeError> {
    let report = |message: String| ScopeError::Report { run: run.to_string(), message };
    let text = store.get_report(run, "json").await?.ok_or_else(|| report("has no stored report".into()))?;
    Baseline::parse(&format!("run {run}"), &text).map_err(report)
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ChangeError> + Send + 'static,
) -> Result<T, ChangeError> {
    tokio::task::spawn_blocking(work).await.unwrap_or_else(|e| {
        Err(ChangeError::Git { command: "rev-list".into(), message: format!("the git task stopped: {e}") })
    })
}

/// The scope, from what the store knows and what git says. Reads git: a blocking
/// thread's work.
fn decide(
    root: &Path,
    base: Option<&str>,
    since: &Since,
    branch: Option<&str>,
    earlier_run: Option<&str>,
    earlier_commit: Option<&str>,
) -> Result<Scope, ChangeError> {
    let full = |why: String| Ok(Scope::Full { why });
    let since = match (since, earlier_commit) {
        (Since::Commit(commit), _) => verify_base(root, commit)?,
        (Since::Auto, Some(commit)) => commit.to_string(),
        (Since::Auto, None) => {
            return full(match (branch, earlier_run) {
                (None, _) => "no branch is checked out, so no earlier review of it can be found".into(),
                (Some(branch), None) => format!("no earlier review of the branch `{branch}` is stored"),
                (Some(branch), Some(run)) => format!("the earlier review of `{branch}` (run {run}) names no commit"),
            });
        }
    };
    let head = git(root, &["rev-parse", "--verify", "--quiet", "HEAD"])?.trim().to_string();
    let known = git(root, &["cat-file", "-e", &format!("{since}^{{commit}}")]).is_ok();
    if !known {
        return full(format!(
            "the last reviewed commit {} is not in this repository any more (history was rewritten)",
            short(&since)
        ));
    }
    if git(root, &["merge-base", "--is-ancestor", &since, &head]).is_err() {
        return full(format!(
            "the last reviewed commit {} is no longer in the branch's history (history was rewritten, as by a \
             force-push)",
            short(&since)
        ));
    }
    if since == head {
        return full(format!(
            "nothing is new since the last reviewed commit {}, so the whole change is reviewed again",
            short(&since)
        ));
    }
    let now = commits(root, &format!("{since}..{head}"))?;
    let earlier = match base {
        Some(base) => commits(root, &format!("{}..{since}", verify_base(root, base)?))?,
        None => Commits::default(),
    };
    let earlier_run = earlier_run.filter(|_| earlier_commit == Some(since.as_str())).map(str::to_string);
    Ok(Scope::Incremental { since, earlier_run, now, earlier })
}

/// The commits of `range`, newest first, at most [`MAX_LISTED_COMMITS`] listed.
fn commits(root: &Path, range: &str) -> Result<Commits, ChangeError> {
    let total = git(root, &["rev-list", "--count", "--end-of-options", range])?.trim().parse().unwrap_or(0);
    let limit = format!("--max-count={MAX_LISTED_COMMITS}");
    let log = git(root, &["log", "--no-color", "--pretty=tformat:%H%x00%s", &limit, "--end-of-options", range])?;
    let listed = log
        .lines()
        .filter_map(|line| line.split_once('\0'))
        .map(|(commit, subject)| Commit { commit: commit.to_string(), subject: subject.to_string() })
        .collect();
    Ok(Commits { listed, total })
}

/// Puts back into `findings` the earlier findings `absent` (those the new review did
/// not raise again) whose code the new commits did not touch, `unchanged`, and
/// returns the rest, which are gone. A finding in a file the new commits did not
/// change is carried as it was. One in a changed file is carried when its quote is
/// still in the file, on lines the new commits did not change (its line follows the
/// code); one without a quote, or whose quote is gone or on changed lines, was on
/// touched code, which the new review reviewed. Reads the repository: call it on a
/// blocking thread.
pub fn carry_forward(
    findings: &mut Vec<Finding>,
    absent: Vec<Finding>,
    changed: &[ChangedFile],
    root: &Path,
) -> Vec<Finding> {
    let changed: HashMap<&str, &ChangedFile> = changed.iter().map(|f| (f.path.as_str(), f)).collect();
    let (mut untouched, mut placed): (Vec<Finding>, Vec<Finding>) =
        absent.into_iter().partition(|f| !changed.contains_key(f.file.as_str()));
    let earlier: Vec<Finding> = placed.clone();
    for f in &mut placed {
        f.anchor = None;
    }
    anchor_in_repository(&mut placed, root);
    let mut gone = Vec::new();
    for (now, before) in placed.into_iter().zip(earlier) {
        let file = changed[before.file.as_str()];
        let quoted = before.evidence.as_deref().map(crate::anchor::quote_lines).unwrap_or_default();
        let still_there =
            matches!(now.anchor, Some(conclave_shared::Anchor::Anchored | conclave_shared::Anchor::Relocated));
        let last = now.line + quoted.len().saturating_sub(1) as u64;
        let touched = file.changed_lines.iter().any(|&(from, to)| from <= last && now.line <= to);
        if quoted.is_empty() || !still_there || touched || file.status == "deleted" {
            gone.push(before);
        } else {
            untouched.push(Finding { line: now.line, ..before });
        }
    }
    for finding in &mut untouched {
        finding.baseline = Some(BaselineState::Unchanged);
    }
    findings.extend(untouched);
    gone
}
