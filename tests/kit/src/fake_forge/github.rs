//! A fake of GitHub's pull-request REST API: the pull request, its files with their
//! patches, review comments (replies joining their thread) and reviews, paginated
//! with `Link` headers; collaborators' permissions; the GraphQL endpoint of
//! `github_graphql.rs` for review threads; a GitHub App's installation tokens
//! (`github_app.rs`); and git over HTTP of the repositories of a directory
//! (`git_http.rs`), for the token or the installation's tokens alone.

use axum::body::Body;
use axum::extract::State;
use axum::http::{Request, Response};
use serde_json::{Value, json};
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::git_http;
use super::github_app::{self, AppState};
use super::github_graphql::{Graph, Thread};
use super::{Answer, Behaviour, FakeForge, ForgeState, Incoming, page, page_url, serve, start};

/// One pull request's state on the fake.
#[derive(Debug, Default)]
pub struct PullState {
    /// The only token accepted (as `Authorization: Bearer …`).
    pub token: String,
    /// `owner/name`.
    pub repository: String,
    /// The pull request's number.
    pub number: u64,
    /// The head commit.
    pub head_sha: String,
    /// Files as `GET …/files` lists them (`filename`, `status`, `patch`).
    pub files: Vec<Value>,
    /// Review comments, as `GET …/comments` lists them.
    pub comments: Vec<Value>,
    /// Reviews, as `GET …/reviews` lists them.
    pub reviews: Vec<Value>,
    /// Collaborators' permissions (`admin`, `maintain`, `write`, `triage`, `read`)
    /// by login; anyone else has `read`.
    pub permissions: HashMap<String, String>,
    /// The ids of resolved review threads.
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
    base: String,
}

impl ForgeState for PullState {
    fn behaviour(&mut self) -> &mut Behaviour {
        &mut self.behaviour
    }
}

/// The fake; `base` is what `GITHUB_API_URL` is set to.
pub type FakeGitHub = FakeForge<PullState>;

impl FakeForge<PullState> {
    /// Serves pull request `number` of `repository` with head `head_sha` and these
    /// files (path and patch), in pages of `page_size`.
    pub async fn start(repository: &str, number: u64, token: &str, page_size: usize) -> FakeGitHub {
        let state = PullState {
            token: token.into(),
            repository: repository.into(),
            number,
            behaviour: Behaviour { page_size, ..Behaviour::default() },
            ..PullState::default()
        };
        let fake = start(state, handle).await;
        fake.state.lock().expect("lock").base = fake.base.clone();
        fake
    }

    /// Sets the head commit and the files of the pull request (path, patch).
    pub fn set_head(&self, sha: &str, files: &[(String, String)]) {
        let mut state = self.state.lock().expect("lock");
        state.head_sha = sha.into();
        state.files = files
            .iter()
            .map(|(path, patch)| json!({"sha": "0", "filename": path, "status": "modified", "patch": patch}))
            .collect();
    }

    /// Adds a comment written by someone else, as GitHub lists it.
    pub fn add_human_comment(&self, path: &str, line: u64, body: &str) {
        let mut state = self.state.lock().expect("lock");
        let id = state.behaviour.id();
        let head = state.head_sha.clone();
        state.comments.push(json!({"id": id, "path": path, "line": line, "side": "RIGHT", "body": body,
            "commit_id": head, "user": {"login": "octocat"}}));
    }

    /// Adds a reply by `login` to review comment `to`, as GitHub lists it (its
    /// `in_reply_to_id` names the thread's first comment); its id.
    pub fn add_reply(&self, to: u64, login: &str, body: &str) -> u64 {
        let mut state = self.state.lock().expect("lock");
        reply(&mut state, to, login, body).map_or(0, |c| c["id"].as_u64().unwrap_or_default())
    }

    /// Gives `login` a permission on the repository (`write`, `read`, ...).
    pub fn set_permission(&self, login: &str, permission: &str) {
        self.state.lock().expect("lock").permissions.insert(login.into(), permission.into());
    }

    /// The review threads now (each keyed by its first comment) and whether each is resolved.
    pub fn threads(&self) -> Vec<(Thread, bool)> {
        let state = self.state.lock().expect("lock");
        threads(&state).into_iter().map(|t| (t.clone(), state.resolved.contains(&t.id()))).collect()
    }

    /// Answers every GraphQL request with `message` as its error (`None`: answers again).
    pub fn fail_graphql(&self, message: Option<&str>) {
        self.state.lock().expect("lock").graphql_error = message.map(str::to_string);
    }

    /// The threads `resolveReviewThread` was asked to resolve, in order.
    pub fn mutations(&self) -> Vec<String> {
        self.state.lock().expect("lock").mutations.clone()
    }

    /// The review comments now.
    pub fn comments(&self) -> Vec<Value> {
        self.state.lock().expect("lock").comments.clone()
    }

    /// The reviews now.
    pub fn reviews(&self) -> Vec<Value> {
        self.state.lock().expect("lock").reviews.clone()
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
}

async fn handle(State(state): State<Arc<Mutex<PullState>>>, request: Request<Body>) -> Response<Body> {
    if git_http::is_git(request.uri().path()) {
        return git(&state, request).await;
    }
    let forbidden = json!({"message": "Resource not accessible by integration",
        "documentation_url": "https://docs.github.com/rest/pulls/reviews#create-a-review-for-a-pull-request",
        "status": "403"});
    serve(&state, request, route, forbidden).await
}

/// Git over HTTP, for the fake's token or an installation token that is still valid.
async fn git(state: &Arc<Mutex<PullState>>, request: Request<Body>) -> Response<Body> {
    let token = git_http::basic_token(&request);
    let root = {
        let mut state = state.lock().expect("lock");
        state.git_tokens.push(token.clone().unwrap_or_default());
        let accepted = token.as_deref().is_some_and(|t| accepts(&state, t));
        match (&state.git_root, accepted) {
            (Some(root), true) => root.clone(),
            (Some(_), false) => return git_http::unauthorized(),
            (None, _) => return Answer::status(404, "Not Found").into_response(),
        }
    };
    git_http::serve(&root, request).await
}

/// Whether `token` is the fake's token or a valid installation token.
fn accepts(state: &PullState, token: &str) -> bool {
    (!state.token.is_empty() && token == state.token) || state.app.as_ref().is_some_and(|app| app.accepts(token))
}

fn route(state: &mut PullState, incoming: &Incoming) -> Answer {
    let auth = incoming.headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or("");
    if let (Some(app), ["app", "installations", id, "access_tokens"]) =
        (state.app.as_mut(), incoming.segments.iter().map(String::as_str).collect::<Vec<_>>().as_slice())
        && incoming.method == "POST"
    {
        return github_app::access_tokens(app, id, auth);
    }
    if !auth.strip_prefix("Bearer ").is_some_and(|token| accepts(state, token)) {
        return Answer::status(401, "Bad credentials");
    }
    if incoming.method == "POST" && incoming.segments == ["graphql"] {
        return graphql(state, &incoming.body);
    }
    let repo: Vec<String> = ["repos"].into_iter().chain(state.repository.split('/')).map(str::to_string).collect();
    if !incoming.segments.starts_with(&repo) {
        return Answer::status(404, "Not Found");
    }
    let rest: Vec<&str> = incoming.segments[repo.len()..].iter().map(String::as_str).collect();
    let number = state.number.to_string();
    match (incoming.method.as_str(), rest.as_slice()) {
        ("GET", ["collaborators", login, "permission"]) => return permission(state, login),
        (_, ["pulls", ..]) => {}
        _ => return Answer::status(404, "Not Found"),
    }
    match (incoming.method.as_str(), &rest[1..]) {
        ("GET", [n]) if *n == number => {
            Answer::ok(json!({"number": state.number, "state": "open", "head": {"sha": state.head_sha}}))
        }
        ("GET", [n, "files"]) if *n == number => list(state, incoming, |s| &s.files),
        ("GET", [n, "comments"]) if *n == number => list(state, incoming, |s| &s.comments),
        ("GET", [n, "reviews"]) if *n == number => list(state, incoming, |s| &s.reviews),
        ("POST", [n, "reviews"]) if *n == number => create_review(state, &incoming.body),
        ("POST", [n, "comments", id, "replies"]) if *n == number => reply_from(state, id, &incoming.body),
        ("POST", [n, "comments"]) if *n == number && incoming.body["in_reply_to"].is_u64() => {
            let to = incoming.body["in_reply_to"].to_string();
            reply_from(state, &to, &incoming.body)
        }
        ("PUT", [n, "reviews", id]) if *n == number => edit(&mut state.reviews, id, &incoming.body),
        ("PATCH", ["comments", id]) => edit(&mut state.comments, id, &incoming.body),
        _ => Answer::status(404, "Not Found"),
    }
}

/// A page of a list with GitHub's `Link` header.
fn list(state: &PullState, incoming: &Incoming, of: fn(&PullState) -> &Vec<Value>) -> Answer {
    let page = page(of(state), incoming, state.behaviour.page_size);
    let mut links = Vec::new();
    if page.number < page.last {
        links.push(format!("<{}>; rel=\"next\"", page_url(&state.base, incoming, page.number + 1)));
        links.push(format!("<{}>; rel=\"last\"", page_url(&state.base, incoming, page.last)));
    }
    let mut answer = Answer::ok(Value::Array(page.items));
    if !links.is_empty() {
        answer.headers.push(("link".into(), links.join(", ")));
    }
    answer
}

/// `POST …/reviews`, checked as GitHub checks it: a known commit, comments on lines
/// of the diff's right side.
fn create_review(state: &mut PullState, body: &Value) -> Answer {
    if body["commit_id"] != json!(state.head_sha) {
        return Answer::status(422, "commit_id is not part of the pull request");
    }
    if !matches!(body["event"].as_str(), Some("COMMENT" | "APPROVE" | "REQUEST_CHANGES")) {
        return Answer::status(422, "event must be COMMENT, APPROVE or REQUEST_CHANGES");
    }
    let comments = body["comments"].as_array().cloned().unwrap_or_default();
    for c in &comments {
        let known = state.files.iter().any(|f| f["filename"] == c["path"]);
        if !known || c["side"] != "RIGHT" || !c["line"].is_u64() || !c["body"].is_string() {
            return Answer::status(422, "Unprocessable Entity: pull_request_review_thread.line could not be resolved");
        }
    }
    let id = state.behaviour.id();
    let review = json!({"id": id, "body": body["body"], "state": "COMMENTED", "commit_id": state.head_sha,
        "user": {"login": "github-actions[bot]"}});
    state.reviews.push(review.clone());
    for c in comments {
        let comment_id = state.behaviour.id();
        state.comments.push(json!({"id": comment_id, "pull_request_review_id": id, "path": c["path"],
            "line": c["line"], "side": "RIGHT", "body": c["body"], "commit_id": state.head_sha,
            "user": {"login": "github-actions[bot]"}}));
    }
    Answer::ok(review)
}

/// `PATCH …/comments/{id}` or `PUT …/reviews/{id}`: a new body.
fn edit(list: &mut [Value], id: &str, body: &Value) -> Answer {
    let Some(text) = body["body"].as_str() else { return Answer::status(422, "body is missing") };
    match list.iter_mut().find(|c| c["id"].as_u64().is_some_and(|n| id.parse() == Ok(n))) {
        Some(item) => {
            item["body"] = json!(text);
            Answer::ok(item.clone())
        }
        None => Answer::status(404, "Not Found"),
    }
}

/// The review threads: each top-level comment with the replies to it.
fn threads(state: &PullState) -> Vec<Thread> {
    let mut threads: Vec<Thread> = Vec::new();
    for comment in &state.comments {
        let id = comment["id"].as_u64().unwrap_or_default();
        match comment["in_reply_to_id"].as_u64() {
            Some(to) => match threads.iter_mut().find(|t| t.comments.first() == Some(&to)) {
                Some(thread) => thread.comments.push(id),
                None => threads.push(Thread { comments: vec![id] }),
            },
            None => threads.push(Thread { comments: vec![id] }),
        }
    }
    threads
}

/// `POST /graphql`: answered from the review threads (always HTTP 200, errors in the body).
fn graphql(state: &mut PullState, body: &Value) -> Answer {
    if let Some(message) = &state.graphql_error {
        return Answer::ok(json!({"errors": [{"type": "FORBIDDEN", "message": message}]}));
    }
    let threads = threads(state);
    let mut graph = Graph {
        repository: &state.repository,
        number: state.number,
        threads,
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

/// A reply to comment `to` by the token's bot (`POST …/comments/{id}/replies`).
fn reply_from(state: &mut PullState, to: &str, body: &Value) -> Answer {
    let Some(text) = body["body"].as_str() else { return Answer::status(422, "body is missing") };
    let Ok(to) = to.parse::<u64>() else { return Answer::status(404, "Not Found") };
    match reply(state, to, "github-actions[bot]", text) {
        Some(comment) => Answer::ok(comment),
        None => Answer::status(404, "Not Found"),
    }
}

/// Adds a reply to comment `to` (to its thread's first comment, as GitHub does).
fn reply(state: &mut PullState, to: u64, login: &str, text: &str) -> Option<Value> {
    let parent = state.comments.iter().find(|c| c["id"].as_u64() == Some(to))?.clone();
    let first = parent["in_reply_to_id"].as_u64().unwrap_or(to);
    let id = state.behaviour.id();
    let comment = json!({"id": id, "in_reply_to_id": first, "pull_request_review_id": parent["pull_request_review_id"],
        "path": parent["path"], "line": parent["line"], "side": "RIGHT", "body": text,
        "commit_id": state.head_sha, "user": {"login": login}});
    state.comments.push(comment.clone());
    Some(comment)
}
