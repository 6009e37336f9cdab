//! A review's checkout: `git worktree add --detach` of one commit of a mirror, removed
//! when the review is done, and removed by `Drop` too when the review failed or
//! panicked before removing it.

use conclave_core::Redactor;
use std::path::{Path, PathBuf};

use super::error::MirrorError;
use super::git::{git_command, run};

/// A checked-out worktree of a mirror.
#[derive(Debug)]
pub struct Worktree {
    mirror: PathBuf,
    path: PathBuf,
    removed: bool,
}

impl Worktree {
    /// Checks out `commit` of the mirror at `mirror` in the new directory `path`.
    pub async fn add(mirror: &Path, path: PathBuf, commit: &str) -> Result<Worktree, MirrorError> {
        let mut command = git_command(mirror, None);
        command.args(["worktree", "add", "--detach", "--quiet"]).arg(&path).arg(commit);
        run(command, &format!("checking out {commit}"), &Redactor::default()).await?;
        Ok(Worktree { mirror: mirror.to_path_buf(), path, removed: false })
    }

    /// Where the files are.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Leaves the worktree where it is, for the worker that took its review over
    /// (the path is the pull request's; that worker checks it out again).
    pub fn leave(mut self) {
        self.removed = true;
    }

    /// Removes the worktree and git's record of it.
    pub async fn remove(mut self) -> Result<(), MirrorError> {
        self.removed = true;
        let mut command = git_command(&self.mirror, None);
        command.args(["worktree", "remove", "--force", "--force"]).arg(&self.path);
        let removed = run(command, "removing a worktree", &Redactor::default()).await;
        if removed.is_err() && tokio::fs::try_exists(&self.path).await.unwrap_or(true) {
            tokio::fs::remove_dir_all(&self.path)
                .await
                .map_err(MirrorError::io(format!("cannot remove {}", self.path.display())))?;
            let mut prune = git_command(&self.mirror, None);
            prune.args(["worktree", "prune"]);
            run(prune, "pruning worktrees", &Redactor::default()).await?;
        }
        Ok(())
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
        let _ = std::process::Command::new("git")
            .current_dir(&self.mirror)
            .args(["worktree", "prune"])
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output();
    }
}
