//! A fake of GitHub's pull-request REST API: the pull request, its files with their
//! patches, review comments and reviews, paginated with `Link` headers.

use axum::body::Body;
use axum::extract::State;
use axum::http::{Request, Response};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

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

    /// The review comments now.
    pub fn comments(&self) -> Vec<Value> {
        self.state.lock().expect("lock").comments.clone()
    }

    /// The reviews now.
    pub fn reviews(&self) -> Vec<Value> {
        self.state.lock().expect("lock").reviews.clone()
    }
}

async fn handle(State(state): State<Arc<Mutex<PullState>>>, request: Request<Body>) -> Response<Body> {
    let forbidden = json!({"message": "Resource not accessible by integration",
        "documentation_url": "https://docs.github.com/rest/pulls/reviews#create-a-review-for-a-pull-request",
        "status": "403"});
    serve(&state, request, route, forbidden).await
}

fn route(state: &mut PullState, incoming: &Incoming) -> Answer {
    let auth = incoming.headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or("");
    if auth != format!("Bearer {}", state.token) {
        return Answer::status(401, "Bad credentials");
    }
    let prefix = ["repos".to_string()].into_iter().chain(state.repository.split('/').map(str::to_string));
    let prefix: Vec<String> = prefix.chain(["pulls".to_string()]).collect();
    if !incoming.segments.starts_with(&prefix) {
        return Answer::status(404, "Not Found");
    }
    let rest: Vec<&str> = incoming.segments[prefix.len()..].iter().map(String::as_str).collect();
    let number = state.number.to_string();
    match (incoming.method.as_str(), rest.as_slice()) {
        ("GET", [n]) if *n == number => {
            Answer::ok(json!({"number": state.number, "state": "open", "head": {"sha": state.head_sha}}))
        }
        ("GET", [n, "files"]) if *n == number => list(state, incoming, |s| &s.files),
        ("GET", [n, "comments"]) if *n == number => list(state, incoming, |s| &s.comments),
        ("GET", [n, "reviews"]) if *n == number => list(state, incoming, |s| &s.reviews),
        ("POST", [n, "reviews"]) if *n == number => create_review(state, &incoming.body),
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
