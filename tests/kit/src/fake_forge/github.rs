//! A fake of GitHub's REST API for one repository's pull requests, as many as a
//! test adds: each pull request with its files and patches, review comments
//! (replies joining their thread), reviews and conversation (issue) comments,
//! paginated with `Link` headers (`github_pulls.rs`); collaborators' permissions;
//! the GraphQL endpoint of `github_graphql.rs` for review threads; a GitHub App's
//! installation tokens (`github_app.rs`); and git over HTTP of the repositories of
//! a directory (`git_http.rs`), for the token or the installation's tokens alone.

use axum::body::Body;
use axum::extract::State;
use axum::http::{Request, Response};
use serde_json::{Value, json};

use std::sync::{Arc, Mutex};

use super::git_http::{self, Realm};
use super::github_app::{self, AppState};
use super::github_graphql::{Graph, PullThreads, Thread};
use super::github_pulls::{self, threads};
pub use super::github_state::{Pull, PullState};
use super::{Answer, Behaviour, FakeForge, Incoming, serve, start};

/// The fake; `base` is what `GITHUB_API_URL` is set to, and GitHub's web URL too.
pub type FakeGitHub = FakeForge<PullState>;

impl FakeForge<PullState> {
    /// Serves pull request `number` of `repository`, in pages of `page_size`; set its
    /// head and files with [`FakeGitHub::set_head`].
    pub async fn start(repository: &str, number: u64, token: &str, page_size: usize) -> FakeGitHub {
        let state = PullState {
            token: token.into(),
            repository: repository.into(),
            pulls: vec![Pull::new(number)],
            behaviour: Behaviour { page_size, ..Behaviour::default() },
            ..PullState::default()
        };
        let fake = start(state, handle).await;
        fake.state.lock().expect("lock").base = fake.base.clone();
        fake
    }

    /// Adds pull request `number` with these commits and files (path, patch).
    ///
    /// # Panics
    /// When the fake already has pull request `number`.
    pub fn add_pull(&self, number: u64, head_sha: &str, base_sha: &str, files: &[(String, String)]) {
        let mut state = self.state.lock().expect("lock");
        assert!(state.pull(number).is_none(), "the fake GitHub already has pull request #{number}");
        state.pulls.push(Pull { base_sha: base_sha.into(), ..Pull::new(number) });
        drop(state);
        self.set_head_of(number, head_sha, files);
    }

    /// Sets the head commit and the files (path, patch) of the first pull request.
    pub fn set_head(&self, sha: &str, files: &[(String, String)]) {
        self.set_head_of(self.first(), sha, files);
    }

    /// Sets the head commit and the files (path, patch) of pull request `number`.
    pub fn set_head_of(&self, number: u64, sha: &str, files: &[(String, String)]) {
        self.change(number, |pull| {
            pull.head_sha = sha.into();
            pull.files = files
                .iter()
                .map(|(path, patch)| json!({"sha": "0", "filename": path, "status": "modified", "patch": patch}))
                .collect();
        });
    }

    /// Sets the base commit of pull request `number`.
    pub fn set_base(&self, number: u64, base_sha: &str) {
        self.change(number, |pull| pull.base_sha = base_sha.into());
    }

    /// Marks pull request `number` a draft, or ready for review.
    pub fn set_draft(&self, number: u64, draft: bool) {
        self.change(number, |pull| pull.draft = draft);
    }

    /// Adds a review comment written by someone else to the first pull request, as
    /// GitHub lists it.
    pub fn add_human_comment(&self, path: &str, line: u64, body: &str) {
        let mut state = self.state.lock().expect("lock");
        let id = state.behaviour.id();
        let pull = &mut state.pulls[0];
        pull.comments.push(json!({"id": id, "path": path, "line": line, "side": "RIGHT", "body": body,
            "commit_id": pull.head_sha, "user": {"login": "octocat"}}));
    }

    /// Adds a reply by `login` to review comment `to` of the first pull request, as
    /// GitHub lists it (its `in_reply_to_id` names the thread's first comment); its
    /// id (0 when there is no comment `to`).
    pub fn add_reply(&self, to: u64, login: &str, body: &str) -> u64 {
        let mut state = self.state.lock().expect("lock");
        let first = state.pulls[0].number;
        github_pulls::reply(&mut state, first, to, login, body).map_or(0, |c| c["id"].as_u64().unwrap_or_default())
    }

    /// Adds a comment by `login` to the conversation of pull request `number`; its id.
    pub fn add_issue_comment(&self, number: u64, login: &str, body: &str) -> u64 {
        let mut state = self.state.lock().expect("lock");
        let id = state.behaviour.id();
        let comment = github_pulls::issue_comment(&state, number, id, login, body);
        let pull = state.pull_mut(number).unwrap_or_else(|| panic!("the fake GitHub has no pull request #{number}"));
        pull.issue_comments.push(comment);
        id
    }

    /// Gives `login` a permission on the repository (`write`, `read`, ...).
    pub fn set_permission(&self, login: &str, permission: &str) {
        self.state.lock().expect("lock").permissions.insert(login.into(), permission.into());
    }

    /// The review threads of the first pull request now (each keyed by its first
    /// comment) and whether each is resolved.
    pub fn threads(&self) -> Vec<(Thread, bool)> {
        let state = self.state.lock().expect("lock");
        threads(&state.pulls[0]).into_iter().map(|t| (t.clone(), state.resolved.contains(&t.id()))).collect()
    }

    /// Answers every GraphQL request with `message` as its error (`None`: answers again).
    pub fn fail_graphql(&self, message: Option<&str>) {
        self.state.lock().expect("lock").graphql_error = message.map(str::to_string);
    }

    /// The threads `resolveReviewThread` was asked to resolve, in order.
    pub fn mutations(&self) -> Vec<String> {
        self.state.lock().expect("lock").mutations.clone()
    }

    /// The review comments of the first pull request now.
    pub fn comments(&self) -> Vec<Value> {
        self.comments_of(self.first())
    }

    /// The review comments of pull request `number` now.
    pub fn comments_of(&self, number: u64) -> Vec<Value> {
        self.read(number, |pull| pull.comments.clone())
    }

    /// The reviews of the first pull request now.
    pub fn reviews(&self) -> Vec<Value> {
        self.reviews_of(self.first())
    }

    /// The reviews of pull request `number` now.
    pub fn reviews_of(&self, number: u64) -> Vec<Value> {
        self.read(number, |pull| pull.reviews.clone())
    }

    /// The conversation's comments of pull request `number` now.
    pub fn issue_comments_of(&self, number: u64) -> Vec<Value> {
        self.read(number, |pull| pull.issue_comments.clone())
    }

    /// Plays GitHub App `app_id` (whose key's public half is `public_key`, PEM),
    /// installed on the repository as `installation`.
    pub fn install_app(&self, app_id: &str, public_key: &[u8], installation: u64) {
        self.state.lock().expect("lock").app = Some(AppState::new(app_id, public_key, installation));
    }

    /// Changes the app's state: how long minted tokens live, whether the
    /// installation was removed.
    pub fn set_app(&self, token_lifetime: std::time::Duration, revoked: bool) {
        if let Some(app) = self.state.lock().expect("lock").app.as_mut() {
            app.token_lifetime = token_lifetime;
            app.revoked = revoked;
        }
    }

    /// The installation tokens minted so far.
    pub fn minted(&self) -> Vec<String> {
        let state = self.state.lock().expect("lock");
        state.app.as_ref().map(|app| app.minted.iter().map(|(t, _)| t.clone()).collect()).unwrap_or_default()
    }

    /// Why JWTs were refused, in order.
    pub fn refused_jwts(&self) -> Vec<String> {
        self.state.lock().expect("lock").app.as_ref().map(|app| app.refused.clone()).unwrap_or_default()
    }

    /// Serves the bare repositories under `root` (`owner/name.git`) over git's HTTP.
    pub fn serve_git(&self, root: &std::path::Path) {
        self.state.lock().expect("lock").git_root = Some(root.to_path_buf());
    }

    /// The tokens git presented so far (an empty one for a request without any).
    pub fn git_tokens(&self) -> Vec<String> {
        self.state.lock().expect("lock").git_tokens.clone()
    }

    /// The number of the pull request `start` serves.
    fn first(&self) -> u64 {
        self.state.lock().expect("lock").pulls[0].number
    }

    /// Changes pull request `number`; a test naming one the fake lacks fails here.
    fn change(&self, number: u64, change: impl FnOnce(&mut Pull)) {
        let mut state = self.state.lock().expect("lock");
        change(state.pull_mut(number).unwrap_or_else(|| panic!("the fake GitHub has no pull request #{number}")));
    }

    /// Reads pull request `number`; a test naming one the fake lacks fails here.
    fn read<T>(&self, number: u64, read: impl FnOnce(&Pull) -> T) -> T {
        let state = self.state.lock().expect("lock");
        read(state.pull(number).unwrap_or_else(|| panic!("the fake GitHub has no pull request #{number}")))
    }
}

const REALM: Realm =
    Realm { name: "GitHub", refusal: "Invalid username or token. Password authentication is not supported." };

async fn handle(State(state): State<Arc<Mutex<PullState>>>, request: Request<Body>) -> Response<Body> {
    if git_http::is_git(request.uri().path()) {
        return git(&state, request).await;
    }
    let forbidden = json!({"message": "Resource not accessible by integration",
        "documentation_url": "https://docs.github.com/rest/pulls/reviews#create-a-review-for-a-pull-request",
        "status": "403"});
    serve(&state, request, route, forbidden).await
}

/// Git over HTTP, for the fake's token or an installation token that is still valid
/// (any user name, as GitHub takes).
async fn git(state: &Arc<Mutex<PullState>>, request: Request<Body>) -> Response<Body> {
    let token = git_http::basic_credentials(&request).map(|(_, password)| password);
    let (root, accepted) = {
        let mut state = state.lock().expect("lock");
        state.git_tokens.push(token.clone().unwrap_or_default());
        (state.git_root.clone(), token.as_deref().is_some_and(|t| accepts(&state, t)))
    };
    git_http::answer(root, accepted, &REALM, request).await
}

/// Whether `token` is the fake's token or a valid installation token.
fn accepts(state: &PullState, token: &str) -> bool {
    (!state.token.is_empty() && token == state.token) || state.app.as_ref().is_some_and(|app| app.accepts(token))
}

fn route(state: &mut PullState, incoming: &Incoming) -> Answer {
    let auth = incoming.headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or("");
    let segments: Vec<&str> = incoming.segments.iter().map(String::as_str).collect();
    if let (Some(app), ["app", "installations", id, "access_tokens"]) = (state.app.as_mut(), segments.as_slice())
        && incoming.method == "POST"
    {
        return github_app::access_tokens(app, id, auth);
    }
    if !auth.strip_prefix("Bearer ").is_some_and(|token| accepts(state, token)) {
        return Answer::status(401, "Bad credentials");
    }
    if incoming.method == "POST" && segments == ["graphql"] {
        return graphql(state, &incoming.body);
    }
    let repository = state.repository.clone();
    let repo: Vec<&str> = ["repos"].into_iter().chain(repository.split('/')).collect();
    let Some(rest) = segments.strip_prefix(repo.as_slice()) else { return Answer::status(404, "Not Found") };
    match (incoming.method.as_str(), rest) {
        ("GET", ["collaborators", login, "permission"]) => permission(state, login),
        (_, ["pulls", ..] | ["issues", ..]) => github_pulls::route(state, incoming, rest),
        _ => Answer::status(404, "Not Found"),
    }
}

/// `POST /graphql`: answered from the review threads (always HTTP 200, errors in the body).
fn graphql(state: &mut PullState, body: &Value) -> Answer {
    if let Some(message) = &state.graphql_error {
        return Answer::ok(json!({"errors": [{"type": "FORBIDDEN", "message": message}]}));
    }
    let pulls = state.pulls.iter().map(|p| PullThreads { number: p.number, threads: threads(p) }).collect();
    let mut graph = Graph {
        repository: &state.repository,
        pulls,
        resolved: &mut state.resolved,
        mutations: &mut state.mutations,
        page_size: state.behaviour.page_size,
    };
    Answer::ok(super::github_graphql::answer(body, &mut graph))
}

/// `GET /repos/{owner}/{repo}/collaborators/{login}/permission`.
fn permission(state: &PullState, login: &str) -> Answer {
    let permission = state.permissions.get(login).map_or("read", String::as_str);
    let legacy = match permission {
        "maintain" => "write",
        "triage" => "read",
        other => other,
    };
    Answer::ok(json!({"permission": legacy, "role_name": permission, "user": {"login": login}}))
}
