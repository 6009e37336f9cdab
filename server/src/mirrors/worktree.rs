//! A review's checkout of a mirror: a repository of its own under the cache, holding
//! the commits the review reads and the head's files, removed when the review is
//! done, and removed by `Drop` too when the review failed or panicked first.
//!
//! It is a repository of its own, not a linked `git worktree` of the mirror: a linked
//! worktree keeps its git directory inside the mirror, which the command sandbox of
//! analyzer lanes cannot read (it reads the checkout), and which every other review
//! of the repository adds to and prunes. A mirror with whole history is cloned with
//! `--local` (its object files hard-linked, nothing copied); a shallow one (which
//! git does not clone locally) gives the commits by a fetch over the file transport.

use conclave_core::Redactor;
use std::path::{Path, PathBuf};

use super::error::MirrorError;
use super::git::{git_command, run};

/// A checked-out review of a mirror.
#[derive(Debug)]
pub struct Worktree {
    path: PathBuf,
    removed: bool,
}

impl Worktree {
    /// Checks out `head` of the mirror at `mirror` in the new directory `path`, with
    /// every commit the mirror keeps (the base, the head an earlier review reviewed).
    pub async fn add(mirror: &Path, path: PathBuf, head: &str) -> Result<Worktree, MirrorError> {
        let quiet = Redactor::default();
        let shallow = tokio::fs::try_exists(mirror.join("shallow")).await.unwrap_or(false);
        let parent = path.parent().unwrap_or(&path).to_path_buf();
        let worktree = Worktree { path: path.clone(), removed: false };
        if shallow {
            let mut init = git_command(&parent, None);
            init.args(["init", "--quiet"]).arg(&path);
            run(init, "creating a review's checkout", &quiet).await?;
            let mut fetch = git_command(&path, None);
            fetch.args(["fetch", "--quiet", "--no-tags", "--no-write-fetch-head"]).arg(mirror);
            fetch.arg("+refs/conclave/commits/*:refs/conclave/commits/*");
            run(fetch, &format!("copying {head} from the mirror"), &quiet).await?;
        } else {
            let mut clone = git_command(&parent, None);
            clone.args(["clone", "--quiet", "--local", "--no-checkout", "--no-tags"]).arg(mirror).arg(&path);
            run(clone, "cloning the mirror for a review", &quiet).await?;
        }
        let mut checkout = git_command(&path, None);
        checkout.args(["checkout", "--quiet", "--detach", head]);
        run(checkout, &format!("checking out {head}"), &quiet).await?;
        Ok(worktree)
    }

    /// Where the files are.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Leaves the checkout where it is, for the worker that took its review over
    /// (the path is the pull request's; that worker checks it out again).
    pub fn leave(mut self) {
        self.removed = true;
    }

    /// Removes the checkout.
    pub async fn remove(mut self) -> Result<(), MirrorError> {
        self.removed = true;
        match tokio::fs::remove_dir_all(&self.path).await {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(MirrorError::io(format!("cannot remove {}", self.path.display()))(e))
            }
            _ => Ok(()),
        }
    }
}

impl Drop for Worktree {
    fn drop(&mut self) {
        if self.removed {
            return;
        }
        // Not removed by the review (it failed, or panicked): remove it now, blocking,
        // since a destructor cannot wait for a task.
        let _ = std::fs::remove_dir_all(&self.path);
    }
}
