//! Reviews without a CI job: the webhook deliveries `conclave serve` keeps become
//! queued review runs of pull (merge) requests, which workers fetch, review and post.
//!
//! - `dispatcher.rs` runs in `conclave serve` (one at a time across every server on
//!   the store, through a leased slot): it reads pending deliveries oldest first,
//!   checks who wrote a command, keeps one review per request at a time (a newer push
//!   cancels the one queued or running; the next waits until it has ended), and
//!   enqueues reviews on the run queue.
//! - `review.rs` is a worker's side: the token, the request's commits fetched into
//!   the mirror, a worktree, the review prepared with configuration from the base and
//!   incremental from the last posted review, run, posted, and the worktree removed;
//!   a review that cannot run says why in one comment.
//! - `pull.rs` is the forge's API for a request: its commits, where its review posts,
//!   and the service's plain comments.
//!
//! **Invariant:** tokens stay in `forge_app` and `mirrors`: no run input, event,
//! report or command sees one.

pub mod dispatcher;
pub mod pull;
pub mod review;

use conclave_shared::delivery::PullRequestRef;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

use crate::forge_app::{ForgeAuth, RepoRef};
use crate::mirrors::Mirrors;
use crate::post::Forge as PostForge;
use crate::workspace::Workspace;

pub use dispatcher::Dispatcher;

/// The report a review run of a request keeps once the worker has dealt with the
/// forge (posted, said why it could not, or let it be): the dispatcher waits for it
/// before the request's next review, so the newest head's review posts last.
pub const POSTING_REPORT: &str = "posting";

/// What a worker did on the forge for one review run: [`POSTING_REPORT`]'s content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Posting {
    /// The review was posted on the request.
    pub posted: bool,
    /// The head it reviewed, when it got that far.
    pub head: Option<String>,
    /// What happened, for people.
    pub outcome: String,
}

/// What a queued review of a request carries, besides its run's input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullRequestJob {
    /// The request.
    pub pull_request: PullRequestRef,
    /// The head the delivery named (`None`: the request's head when it starts).
    pub head: Option<String>,
    /// Review the whole change, not only what is new since `since_run`.
    pub full: bool,
    /// The last review posted on the request, which an incremental review starts from.
    pub since_run: Option<String>,
    /// The delivery that asked for it.
    pub delivery: String,
}

/// What the dispatcher and the workers share: the credentials, the mirrors and the
/// workspace reviews are prepared in.
#[derive(Debug)]
pub struct ForgeService {
    /// Tokens for repositories.
    pub auth: ForgeAuth,
    /// The cache of bare mirrors and worktrees.
    pub mirrors: Mirrors,
    /// Where conclaves come from, the providers, the review settings.
    pub workspace: Workspace,
}

impl ForgeService {
    /// The service over `auth`, `mirrors` and `workspace`.
    pub fn new(auth: ForgeAuth, mirrors: Mirrors, workspace: Workspace) -> Arc<ForgeService> {
        Arc::new(ForgeService { auth, mirrors, workspace })
    }
}

/// The repository of `pull_request`, as the credentials know it.
pub fn repo_ref(pull_request: &PullRequestRef) -> RepoRef {
    let forge = match pull_request.forge {
        conclave_shared::delivery::Forge::Github => PostForge::Github,
        conclave_shared::delivery::Forge::Gitlab => PostForge::Gitlab,
    };
    RepoRef { forge, path: pull_request.repository.clone(), installation: pull_request.installation }
}
