//! A fake of GitLab's REST API (v4) for one project's merge requests, as many as a
//! test adds: each merge request with its `diff_refs`, diffs, discussions and notes
//! (`gitlab_merge_requests.rs`); the project's members with their access levels;
//! and git over HTTP of the repositories of a directory (`git_http.rs`) for the
//! fake's token as user `oauth2`. The project is named in paths by its numeric id
//! or its URL-encoded path (`group%2Fproject`), as GitLab accepts both.

use axum::body::Body;
use axum::extract::State;
use axum::http::{Request, Response};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

use super::git_http::{self, Realm};
use super::gitlab_merge_requests;
use super::{Answer, Behaviour, FakeForge, Incoming, serve, start};

pub use super::gitlab_state::{Member, MergeRequest, MergeRequestState};

/// The fake; [`FakeGitLab::api`] is what `CI_API_V4_URL` is set to, and `base`
/// GitLab's web URL.
pub type FakeGitLab = FakeForge<MergeRequestState>;

impl FakeForge<MergeRequestState> {
    /// Serves merge request `iid` of project `project` (its numeric id or its path),
    /// in pages of `page_size`; [`FakeGitLab::set_project`] gives it the other name.
    pub async fn start(project: &str, iid: u64, token: &str, page_size: usize) -> FakeGitLab {
        let (project_id, project_path) = match project.parse::<u64>() {
            Ok(id) => (Some(id), None),
            Err(_) => (None, Some(project.to_string())),
        };
        let state = MergeRequestState {
            token: token.into(),
            project_id,
            project_path,
            merge_requests: vec![MergeRequest::new(iid)],
            behaviour: Behaviour { page_size, ..Behaviour::default() },
            ..MergeRequestState::default()
        };
        let fake = start(state, handle).await;
        fake.state.lock().expect("lock").base = fake.base.clone();
        fake
    }

    /// The API's base URL, as `CI_API_V4_URL` gives it.
    pub fn api(&self) -> String {
        format!("{}/api/v4", self.base)
    }

    /// Names the project both ways, its numeric id and its path (`group/project`).
    pub fn set_project(&self, id: u64, path: &str) {
        let mut state = self.state.lock().expect("lock");
        state.project_id = Some(id);
        state.project_path = Some(path.into());
    }

    /// Adds merge request `iid` with these commits and files (path, patch).
    ///
    /// # Panics
    /// When the fake already has merge request `iid`.
    pub fn add_merge_request(&self, iid: u64, head_sha: &str, base_sha: &str, files: &[(String, String)]) {
        let mut state = self.state.lock().expect("lock");
        assert!(state.merge_request(iid).is_none(), "the fake GitLab already has merge request !{iid}");
        state.merge_requests.push(MergeRequest::new(iid));
        drop(state);
        self.set_head_of(iid, base_sha, head_sha, files);
    }

    /// Sets the first merge request's commits (base and head) and files (path, patch).
    pub fn set_head(&self, base_sha: &str, head_sha: &str, files: &[(String, String)]) {
        self.set_head_of(self.first(), base_sha, head_sha, files);
    }

    /// Sets merge request `iid`'s commits (base and head) and files (path, patch).
    pub fn set_head_of(&self, iid: u64, base_sha: &str, head_sha: &str, files: &[(String, String)]) {
        self.change(iid, |mr| {
            mr.diff_refs = json!({"base_sha": base_sha, "start_sha": base_sha, "head_sha": head_sha});
            mr.diffs = files
                .iter()
                .map(|(path, diff)| {
                    json!({"old_path": path, "new_path": path, "a_mode": "100644", "b_mode": "100644",
                    "new_file": false, "renamed_file": false, "deleted_file": false, "diff": diff})
                })
                .collect();
        });
    }

    /// Marks merge request `iid` a draft, or ready.
    pub fn set_draft(&self, iid: u64, draft: bool) {
        self.change(iid, |mr| mr.draft = draft);
    }

    /// Adds a discussion someone else started on the first merge request, as GitLab
    /// lists it.
    pub fn add_human_discussion(&self, body: &str) {
        let mut state = self.state.lock().expect("lock");
        let (id, note) = (state.behaviour.id(), state.behaviour.id());
        state.merge_requests[0].discussions.push(json!({"id": format!("{id:040x}"), "individual_note": true,
            "notes": [{"id": note, "type": null, "body": body, "system": false, "resolvable": false,
             "author": {"username": "ann"}}]}));
    }

    /// Adds a note by user `user_id` (`username`) to discussion `discussion` of the
    /// first merge request, as a reply in its thread; the note's id (0 when there is
    /// no such discussion).
    pub fn add_human_note(&self, discussion: &str, user_id: u64, username: &str, body: &str) -> u64 {
        let mut state = self.state.lock().expect("lock");
        let author = json!({"id": user_id, "username": username});
        let MergeRequestState { merge_requests, behaviour, .. } = &mut *state;
        let note = gitlab_merge_requests::add_note(&mut merge_requests[0], behaviour, discussion, author, body);
        note.map_or(0, |n| n["id"].as_u64().unwrap_or_default())
    }

    /// Makes user `user_id` a member with `access_level` (30 is developer), named
    /// `user{id}`.
    pub fn set_member(&self, user_id: u64, access_level: u64) {
        self.set_access(user_id, &format!("user{user_id}"), access_level);
    }

    /// Makes user `user_id` (`username`) a member with `access_level` (10 guest, 20
    /// reporter, 30 developer, 40 maintainer, 50 owner).
    pub fn set_access(&self, user_id: u64, username: &str, access_level: u64) {
        let member = Member { username: username.into(), access_level };
        self.state.lock().expect("lock").members.insert(user_id, member);
    }

    /// The discussions of the first merge request now.
    pub fn discussions(&self) -> Vec<Value> {
        self.discussions_of(self.first())
    }

    /// The discussions of merge request `iid` now.
    pub fn discussions_of(&self, iid: u64) -> Vec<Value> {
        self.read(iid, |mr| mr.discussions.clone())
    }

    /// Every note of merge request `iid` now, oldest first (those of discussions too).
    pub fn notes_of(&self, iid: u64) -> Vec<Value> {
        self.read(iid, gitlab_merge_requests::notes)
    }

    /// Serves the bare repositories under `root` (`group/project.git`) over git's HTTP.
    pub fn serve_git(&self, root: &std::path::Path) {
        self.state.lock().expect("lock").git_root = Some(root.to_path_buf());
    }

    /// The tokens git presented so far (an empty one for a request without any).
    pub fn git_tokens(&self) -> Vec<String> {
        self.state.lock().expect("lock").git_tokens.clone()
    }

    /// The iid of the merge request `start` serves.
    fn first(&self) -> u64 {
        self.state.lock().expect("lock").merge_requests[0].iid
    }

    /// Changes merge request `iid`; a test naming one the fake lacks fails here.
    fn change(&self, iid: u64, change: impl FnOnce(&mut MergeRequest)) {
        let mut state = self.state.lock().expect("lock");
        change(state.merge_request_mut(iid).unwrap_or_else(|| panic!("the fake GitLab has no merge request !{iid}")));
    }

    /// Reads merge request `iid`; a test naming one the fake lacks fails here.
    fn read<T>(&self, iid: u64, read: impl FnOnce(&MergeRequest) -> T) -> T {
        let state = self.state.lock().expect("lock");
        read(state.merge_request(iid).unwrap_or_else(|| panic!("the fake GitLab has no merge request !{iid}")))
    }
}

const REALM: Realm = Realm {
    name: "GitLab",
    refusal: "HTTP Basic: Access denied. If a password was provided for Git authentication, the password was \
              incorrect or you're required to use a token instead of a password.",
};

async fn handle(State(state): State<Arc<Mutex<MergeRequestState>>>, request: Request<Body>) -> Response<Body> {
    if git_http::is_git(request.uri().path()) && !request.uri().path().starts_with("/api/") {
        return git(&state, request).await;
    }
    serve(&state, request, route, json!({"message": "403 Forbidden"})).await
}

/// Git over HTTP, for the fake's token as the password of user `oauth2`.
async fn git(state: &Arc<Mutex<MergeRequestState>>, request: Request<Body>) -> Response<Body> {
    let credentials = git_http::basic_credentials(&request);
    let (root, accepted) = {
        let mut state = state.lock().expect("lock");
        state.git_tokens.push(credentials.as_ref().map(|(_, token)| token.clone()).unwrap_or_default());
        let accepted =
            credentials.is_some_and(|(user, token)| user == "oauth2" && !token.is_empty() && token == state.token);
        (state.git_root.clone(), accepted)
    };
    git_http::answer(root, accepted, &REALM, request).await
}

fn route(state: &mut MergeRequestState, incoming: &Incoming) -> Answer {
    let token = incoming.headers.get("private-token").and_then(|v| v.to_str().ok()).unwrap_or("");
    if token != state.token {
        return Answer::status(401, "401 Unauthorized");
    }
    let segments: Vec<&str> = incoming.segments.iter().map(String::as_str).collect();
    if incoming.method == "GET" && segments == ["api", "v4", "users"] {
        return users(state, incoming.query.get("username").map_or("", String::as_str));
    }
    let ["api", "v4", "projects", project, rest @ ..] = segments.as_slice() else {
        return Answer::status(404, "404 Not found");
    };
    if !state.names_project(project) {
        return Answer::status(404, "404 Project Not Found");
    }
    match (incoming.method.as_str(), rest) {
        ("GET", ["members", "all", user]) => member(state, user),
        (_, ["merge_requests", iid, tail @ ..]) => gitlab_merge_requests::route(state, incoming, iid, tail),
        _ => Answer::status(404, "404 Not found"),
    }
}

/// `GET /users?username=NAME`: the users of that name (the fake knows the members),
/// as a list, empty when there is none, as GitLab answers.
fn users(state: &MergeRequestState, username: &str) -> Answer {
    let found: Vec<Value> = state
        .members
        .iter()
        .filter(|(_, member)| member.username == username)
        .map(|(id, member)| json!({"id": id, "username": member.username, "state": "active"}))
        .collect();
    Answer::ok(Value::Array(found))
}

/// `GET /projects/:id/members/all/:user_id`: a member with its access level, else 404.
fn member(state: &MergeRequestState, user: &str) -> Answer {
    let member = user.parse::<u64>().ok().and_then(|id| state.members.get(&id).map(|member| (id, member)));
    match member {
        Some((id, member)) => Answer::ok(json!({"id": id, "username": member.username, "state": "active",
            "access_level": member.access_level})),
        None => Answer::status(404, "404 Not found"),
    }
}
