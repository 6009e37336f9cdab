//! The worker's cache of bare mirrors, one per repository: created on first use,
//! fetched with the repository's token for the base and head commits of a pull
//! request (shallow at first, deepened until their merge base is there; whole once
//! the mirror has history, so a push brings its new commits alone), one fetch at a time
//! per mirror across processes, and a worktree per review.
//!
//! Layout: `path.rs` derives a mirror's directory from the forge and the repository
//! (refusing hostile names), `lock.rs` the per-mirror file lock, `git.rs` runs git
//! with the token in its environment only, `worktree.rs` a review's checkout.
//!
//! **Invariant:** no token is written under the cache: git gets it through its
//! environment for one command, and git's messages are cleaned of it.

pub mod error;
pub mod git;
pub mod lock;
pub mod path;
pub mod worktree;

pub use error::MirrorError;
pub use lock::MirrorLock;
pub use worktree::Worktree;

use conclave_core::Redactor;
use std::path::{Path, PathBuf};

use crate::forge_app::RepoToken;
use git::{git_command, run, succeeds};

/// How much history each deepening adds when the merge base is not there yet; after
/// the last, the whole history is fetched.
const DEEPEN: &[u32] = &[50, 500, 5000];

/// The cache of mirrors under one directory.
#[derive(Debug, Clone)]
pub struct Mirrors {
    root: PathBuf,
}

/// A mirror holding a pull request's base and head commits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// The mirror's directory.
    pub mirror: PathBuf,
    /// The merge base of the base and head commits.
    pub merge_base: String,
    /// Whether anything was fetched (false: the mirror had both commits already).
    pub fetched: bool,
    /// How many times the history was deepened to reach the merge base.
    pub deepened: usize,
}

impl Mirrors {
    /// The cache under `root` (created when first used).
    pub fn new(root: impl Into<PathBuf>) -> Mirrors {
        Mirrors { root: root.into() }
    }

    /// The cache's directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Fetches commits `base` and `head` of the token's repository into its mirror
    /// (creating it), holding the mirror's lock; the mirror and the merge base.
    pub async fn fetch(&self, token: &RepoToken, base: &str, head: &str) -> Result<Fetched, MirrorError> {
        let repository = &token.repo.path;
        let mirror = path::mirror_dir(&self.root, &token.urls.web, repository)?;
        for commit in [base, head] {
            if commit.len() < 7 || !commit.chars().all(|c| c.is_ascii_hexdigit()) {
                return Err(MirrorError::HostileName {
                    name: repository.clone(),
                    reason: format!("`{}` is not a commit id", commit.escape_debug()),
                });
            }
        }
        let url = token
            .clone_url()
            .map_err(|e| MirrorError::HostileName { name: repository.clone(), reason: e.to_string() })?;
        let header = token.git_authorization();
        let redactor = Redactor::new([token.secret().expose().to_string(), header.expose().to_string()]);
        let _lock = MirrorLock::acquire(&mirror).await?;
        let created = create(&mirror).await?;
        let remote = Remote { url: url.as_str(), origin: &url, header: &header, redactor: &redactor, repository };
        let fetched = if has_commits(&mirror, &[base, head]).await {
            false
        } else {
            // A new mirror starts shallow; a mirror with history fetches whole, which
            // stops at the commits it holds (a push to a pull request is its new
            // commits alone) and leaves no new shallow boundary to deepen across.
            let depth: &[&str] = if created { &["--depth=1"] } else { &[] };
            remote.fetch(&mirror, depth, &[base, head]).await?;
            true
        };
        let mut deepened = 0;
        let merge_base = loop {
            if let Some(found) = merge_base(&mirror, base, head).await {
                break found;
            }
            let deepen = DEEPEN.get(deepened).map(|n| format!("--deepen={n}"));
            if deepened > DEEPEN.len() {
                return Err(MirrorError::Git {
                    what: format!("finding the merge base of {base} and {head} in {repository}"),
                    message: "the commits share no history".into(),
                });
            }
            let option = deepen.unwrap_or_else(|| "--unshallow".into());
            remote.fetch(&mirror, &[&option], &[base, head]).await?;
            deepened += 1;
        };
        Ok(Fetched { mirror, merge_base, fetched, deepened })
    }

    /// Checks out `commit` of `mirror` in a new checkout under the cache.
    pub async fn worktree(&self, mirror: &Path, commit: &str) -> Result<Worktree, MirrorError> {
        let dir = self.root.join(".worktrees");
        tokio::fs::create_dir_all(&dir).await.map_err(MirrorError::io(format!("cannot create {}", dir.display())))?;
        let _lock = MirrorLock::acquire(mirror).await?;
        Worktree::add(mirror, dir.join(uuid::Uuid::now_v7().to_string()), commit).await
    }
}

impl Mirrors {
    /// Checks out `head` of `mirror` in the checkout `name` under the cache, which stays the same for one pull request, so a review
    /// taken up again by another worker finds the path its run input names. What an
    /// earlier checkout of that name left (a worker that died) is removed first. Holds
    /// the mirror's lock, so no fetch changes the mirror while it is read.
    pub async fn worktree_named(&self, mirror: &Path, name: &str, head: &str) -> Result<Worktree, MirrorError> {
        let dir = self.root.join(".worktrees");
        tokio::fs::create_dir_all(&dir).await.map_err(MirrorError::io(format!("cannot create {}", dir.display())))?;
        let path = dir.join(path::checked_segment(name)?);
        let _lock = MirrorLock::acquire(mirror).await?;
        if tokio::fs::try_exists(&path).await.unwrap_or(false) {
            tokio::fs::remove_dir_all(&path)
                .await
                .map_err(MirrorError::io(format!("cannot remove the stale checkout {}", path.display())))?;
        }
        Worktree::add(mirror, path, head).await
    }
}

/// A repository's remote for one fetch: its URL, origin and header.
struct Remote<'a> {
    url: &'a str,
    origin: &'a reqwest::Url,
    header: &'a conclave_core::Secret,
    redactor: &'a Redactor,
    repository: &'a str,
}

impl Remote<'_> {
    /// `git fetch` of `commits` with `options`, each kept under `refs/conclave/` so
    /// the mirror's garbage collection keeps them.
    async fn fetch(&self, mirror: &Path, options: &[&str], commits: &[&str]) -> Result<(), MirrorError> {
        let mut command = git_command(mirror, Some((self.origin, self.header)));
        command.args(["fetch", "--quiet", "--no-tags", "--no-write-fetch-head"]).args(options).arg(self.url);
        command.args(commits.iter().map(|c| format!("+{c}:refs/conclave/commits/{c}")));
        run(command, &format!("fetching {} of {}", commits.join(" and "), self.repository), self.redactor).await?;
        Ok(())
    }
}

/// Creates the bare mirror at `mirror` unless it exists (the caller holds its lock);
/// whether it was created, or holds nothing yet.
async fn create(mirror: &Path) -> Result<bool, MirrorError> {
    if tokio::fs::try_exists(mirror.join("HEAD")).await.unwrap_or(false) {
        let mut command = git_command(mirror, None);
        command.args(["for-each-ref", "--count=1", "refs/conclave/"]);
        let refs = run(command, "listing the mirror's commits", &Redactor::default()).await?;
        return Ok(refs.trim().is_empty());
    }
    let parent = mirror.parent().unwrap_or(mirror);
    tokio::fs::create_dir_all(parent).await.map_err(MirrorError::io(format!("cannot create {}", parent.display())))?;
    let mut command = git_command(parent, None);
    command.args(["init", "--bare", "--quiet"]).arg(mirror);
    run(command, &format!("creating the mirror {}", mirror.display()), &Redactor::default()).await?;
    Ok(true)
}

async fn has_commits(mirror: &Path, commits: &[&str]) -> bool {
    for commit in commits {
        let mut command = git_command(mirror, None);
        command.args(["cat-file", "-e", &format!("{commit}^{{commit}}")]);
        if !succeeds(command).await {
            return false;
        }
    }
    true
}

async fn merge_base(mirror: &Path, base: &str, head: &str) -> Option<String> {
    let mut command = git_command(mirror, None);
    command.args(["merge-base", base, head]);
    let out = run(command, "merge-base", &Redactor::default()).await.ok()?;
    Some(out.trim().to_string()).filter(|s| !s.is_empty())
}
