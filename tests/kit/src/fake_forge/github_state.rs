//! The fake GitHub's state: its pull requests (each with its head, base, files and
//! comments) and what the whole fake knows and saw, shared by `github.rs` (the
//! routes and the fake's methods) and `github_pulls.rs` (the pull request routes).

use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;

use super::github_app::AppState;
use super::{Behaviour, ForgeState};

/// One pull request of the fake's repository.
#[derive(Debug, Default, Clone)]
pub struct Pull {
    /// Its number.
    pub number: u64,
    /// The head commit.
    pub head_sha: String,
    /// The base commit (empty until set, for the pull request `start` serves).
    pub base_sha: String,
    /// The head branch, `feature-{number}`; the base branch is `main`.
    pub head_ref: String,
    /// Whether it is a draft.
    pub draft: bool,
    /// Files as `GET …/files` lists them (`filename`, `status`, `patch`).
    pub files: Vec<Value>,
    /// Review comments, as `GET …/pulls/{n}/comments` lists them.
    pub comments: Vec<Value>,
    /// Reviews, as `GET …/reviews` lists them.
    pub reviews: Vec<Value>,
    /// The conversation's comments, as `GET …/issues/{n}/comments` lists them.
    pub issue_comments: Vec<Value>,
}

impl Pull {
    /// Pull request `number`, with nothing in it yet.
    pub(crate) fn new(number: u64) -> Pull {
        Pull { number, head_ref: format!("feature-{number}"), ..Pull::default() }
    }
}

/// The fake GitHub's state: the repository's pull requests, who may do what, and
/// what the fake saw.
#[derive(Debug, Default)]
pub struct PullState {
    /// The only token accepted (as `Authorization: Bearer …`).
    pub token: String,
    /// `owner/name`.
    pub repository: String,
    /// The pull requests, the one `start` serves first.
    pub pulls: Vec<Pull>,
    /// Collaborators' permissions (`admin`, `maintain`, `write`, `triage`, `read`)
    /// by login; anyone else has `read`.
    pub permissions: HashMap<String, String>,
    /// The ids of resolved review threads (of every pull request: a thread's id is
    /// its first comment's, unique on the fake).
    pub resolved: BTreeSet<String>,
    /// The threads `resolveReviewThread` was asked to resolve, in order.
    pub mutations: Vec<String>,
    /// When set, every GraphQL request is answered with this error (HTTP 200).
    pub graphql_error: Option<String>,
    /// The GitHub App installed on the repository, when the fake plays one.
    pub app: Option<AppState>,
    /// The directory whose bare repositories (`owner/name.git`) git fetches over HTTP.
    pub git_root: Option<PathBuf>,
    /// The tokens git presented, in order (refused ones too).
    pub git_tokens: Vec<String>,
    /// Paging, refusals and the requests seen.
    pub behaviour: Behaviour,
    pub(crate) base: String,
}

impl PullState {
    /// Pull request `number`, if the fake has it.
    pub fn pull(&self, number: u64) -> Option<&Pull> {
        self.pulls.iter().find(|p| p.number == number)
    }

    /// Pull request `number`, to change, if the fake has it.
    pub fn pull_mut(&mut self, number: u64) -> Option<&mut Pull> {
        self.pulls.iter_mut().find(|p| p.number == number)
    }
}

impl ForgeState for PullState {
    fn behaviour(&mut self) -> &mut Behaviour {
        &mut self.behaviour
    }
}
