//! What `conclave serve` and `conclave worker` share to review pull requests for
//! webhooks: `--mirrors` (the cache of bare mirrors and worktrees) and the forge
//! credentials from the environment, made into the service both use.

use clap::Args;
use conclave_review::pipeline::BUILTIN_REVIEW;
use conclave_shared::Conclave;
use std::path::PathBuf;
use std::sync::Arc;

use crate::forge_app::ForgeAuth;
use crate::forge_service::ForgeService;
use crate::mirrors::Mirrors;
use crate::workspace::Workspace;

/// Where reviews of pull requests are fetched to.
#[derive(Debug, Clone, Args)]
pub struct ForgeArgs {
    /// The directory of the bare mirrors (one per repository) and review worktrees
    /// (default: `$XDG_CACHE_HOME/conclave/mirrors`, else `~/.cache/conclave/mirrors`).
    /// Workers that share it (on one machine) share their fetches.
    #[arg(long, value_name = "DIR", env = "CONCLAVE_MIRRORS")]
    pub mirrors: Option<PathBuf>,
}

impl ForgeArgs {
    /// The service when the environment holds forge credentials; `None` without any.
    /// Credentials that are set but wrong are an error naming every problem.
    pub fn service(&self, workspace: &Workspace) -> Result<Option<Arc<ForgeService>>, String> {
        let auth = ForgeAuth::from_env(&|name| std::env::var(name).ok()).map_err(|e| e.to_string())?;
        if auth.github.is_none() && auth.gitlab.is_none() {
            return Ok(None);
        }
        let root = self.mirrors.clone().unwrap_or_else(default_mirrors);
        Ok(Some(ForgeService::new(auth, Mirrors::new(root), workspace.clone())))
    }
}

/// [`ForgeArgs::service`] on a blocking thread: reading the app's key file blocks.
pub async fn service(args: &ForgeArgs, workspace: &Workspace) -> Result<Option<Arc<ForgeService>>, String> {
    let (args, workspace) = (args.clone(), workspace.clone());
    tokio::task::spawn_blocking(move || args.service(&workspace))
        .await
        .map_err(|e| format!("reading the forge credentials stopped: {e}"))?
}

/// `$XDG_CACHE_HOME/conclave/mirrors`, else `~/.cache/conclave/mirrors`.
fn default_mirrors() -> PathBuf {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))
        .unwrap_or_else(|| PathBuf::from(".cache"));
    cache.join("conclave").join("mirrors")
}

/// The conclave a review of a pull request is queued with until its worker has read
/// the base's configuration and replaced it: the built-in default review.
pub fn placeholder() -> Result<Conclave, String> {
    serde_json::from_str(BUILTIN_REVIEW).map_err(|e| format!("the built-in review conclave does not read: {e}"))
}
