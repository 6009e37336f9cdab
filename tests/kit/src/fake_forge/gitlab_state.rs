//! The fake GitLab's state: the project's merge requests (each with its commits,
//! diffs and discussions), its members, and what the fake saw, shared by
//! `gitlab.rs` (the routes and the fake's methods) and `gitlab_merge_requests.rs`
//! (the merge request routes).

use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;

use super::{Behaviour, ForgeState};

/// One merge request of the fake's project.
#[derive(Debug, Default, Clone)]
pub struct MergeRequest {
    /// Its iid, the number within the project.
    pub iid: u64,
    /// `base_sha`, `start_sha`, `head_sha` (`null` until set, as GitLab's are for a
    /// moment after a merge request is opened).
    pub diff_refs: Value,
    /// The source branch, `feature-{iid}`; the target branch is `main`.
    pub source_branch: String,
    /// Whether it is a draft.
    pub draft: bool,
    /// Diffs as `GET …/diffs` lists them.
    pub diffs: Vec<Value>,
    /// Discussions as `GET …/discussions` lists them; every note is in one, as on
    /// GitLab (a plain note is an `individual_note` discussion).
    pub discussions: Vec<Value>,
}

impl MergeRequest {
    /// Merge request `iid`, with nothing in it yet.
    pub(crate) fn new(iid: u64) -> MergeRequest {
        MergeRequest { iid, source_branch: format!("feature-{iid}"), ..MergeRequest::default() }
    }
}

/// A member of the project.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    /// The member's user name.
    pub username: String,
    /// 10 guest, 20 reporter, 30 developer, 40 maintainer, 50 owner.
    pub access_level: u64,
}

/// The fake GitLab's state: the project's merge requests, its members, and what the
/// fake saw.
#[derive(Debug, Default)]
pub struct MergeRequestState {
    /// The only token accepted (as `PRIVATE-TOKEN`, and as git's password for user
    /// `oauth2`).
    pub token: String,
    /// The project's numeric id, when known.
    pub project_id: Option<u64>,
    /// The project's path (`group/project`), when known.
    pub project_path: Option<String>,
    /// The merge requests, the one `start` serves first.
    pub merge_requests: Vec<MergeRequest>,
    /// Members by user id; anyone else is not a member (404).
    pub members: HashMap<u64, Member>,
    /// The directory whose bare repositories (`group/project.git`) git fetches over HTTP.
    pub git_root: Option<PathBuf>,
    /// The tokens git presented, in order (refused ones too).
    pub git_tokens: Vec<String>,
    /// Paging, refusals and the requests seen.
    pub behaviour: Behaviour,
    pub(crate) base: String,
}

impl MergeRequestState {
    /// Merge request `iid`, if the fake has it.
    pub fn merge_request(&self, iid: u64) -> Option<&MergeRequest> {
        self.merge_requests.iter().find(|m| m.iid == iid)
    }

    /// Merge request `iid`, to change, if the fake has it.
    pub fn merge_request_mut(&mut self, iid: u64) -> Option<&mut MergeRequest> {
        self.merge_requests.iter_mut().find(|m| m.iid == iid)
    }

    /// Whether a path's project segment (decoded) names the fake's project.
    pub(crate) fn names_project(&self, segment: &str) -> bool {
        self.project_id.is_some_and(|id| segment == id.to_string()) || self.project_path.as_deref() == Some(segment)
    }
}

impl ForgeState for MergeRequestState {
    fn behaviour(&mut self) -> &mut Behaviour {
        &mut self.behaviour
    }
}
