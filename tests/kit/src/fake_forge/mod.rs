//! Fakes of the GitHub and GitLab REST APIs on a loopback socket, for `review
//! --post` and the webhook service: they hold any number of pull (merge) requests
//! of one repository, speak the real JSON shapes and pagination (`Link` on GitHub,
//! `X-Next-Page` on GitLab) with small pages, keep the comments they are sent
//! (created, edited, resolved), record every request, and can refuse writes (403)
//! or ask the client to slow down (429 with `retry-after`). GitHub's pull-request
//! routes are `github_pulls.rs`, its GraphQL endpoint for review threads
//! `github_graphql.rs`, a GitHub App's token endpoint `github_app.rs`, GitLab's
//! merge-request routes `gitlab_merge_requests.rs`, and git over HTTP for both
//! (`git http-backend`) `git_http.rs`.

pub mod git_http;
pub mod github;
pub mod github_app;
pub mod github_graphql;
mod github_pulls;
pub mod github_state;
pub mod gitlab;
mod gitlab_merge_requests;
pub mod gitlab_state;
#[cfg(test)]
mod tests;

use axum::body::Body;
use axum::http::{Request, Response};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// A request a fake forge received.
#[derive(Debug, Clone)]
pub struct ForgeRequest {
    /// `GET`, `POST`, `PATCH`, `PUT`.
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The query string (empty when none).
    pub query: String,
    /// The JSON body (`null` when none).
    pub body: Value,
}

impl ForgeRequest {
    /// Whether it changes anything: any request but a `GET` and a GraphQL query
    /// (a `POST /graphql` that is no mutation).
    pub fn writes(&self) -> bool {
        let query = self.path.ends_with("/graphql")
            && self.body["query"].as_str().is_some_and(|q| !q.trim_start().starts_with("mutation"));
        self.method != "GET" && !query
    }
}

/// What every fake forge can be told to do, and what it saw.
#[derive(Debug, Default)]
pub struct Behaviour {
    /// Items per page of every list (the client asks for more; the fake caps it).
    pub page_size: usize,
    /// How many of the next requests are answered 429 with `retry-after: 1`.
    pub rate_limited: u32,
    /// Refuse every write with 403, as a read-only token is refused.
    pub read_only: bool,
    /// Every request, in order.
    pub requests: Vec<ForgeRequest>,
    next_id: u64,
}

impl Behaviour {
    fn id(&mut self) -> u64 {
        self.next_id += 1;
        1000 + self.next_id
    }
}

/// The state of one fake forge, with what it is told and what it saw.
pub trait ForgeState: Send + 'static {
    /// Paging, refusals and the requests seen.
    fn behaviour(&mut self) -> &mut Behaviour;
}

/// A fake forge serving `S`; it stops when dropped.
#[derive(Debug)]
pub struct FakeForge<S> {
    /// Its origin, `http://127.0.0.1:PORT`.
    pub base: String,
    /// The state, to set up and inspect.
    pub state: Arc<Mutex<S>>,
    task: tokio::task::JoinHandle<()>,
}

impl<S: ForgeState> FakeForge<S> {
    /// Every request so far.
    pub fn requests(&self) -> Vec<ForgeRequest> {
        self.state.lock().expect("lock").behaviour().requests.clone()
    }

    /// Sets what the next requests meet: `rate_limited` answers 429 first, and
    /// whether writes are refused.
    pub fn misbehave(&self, rate_limited: u32, read_only: bool) {
        let mut state = self.state.lock().expect("lock");
        let behaviour = state.behaviour();
        behaviour.rate_limited = rate_limited;
        behaviour.read_only = read_only;
    }
}

impl<S> Drop for FakeForge<S> {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One answer of a fake forge: status, headers, JSON body.
pub(crate) struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Value,
}

impl Answer {
    pub(crate) fn ok(body: Value) -> Answer {
        Answer { status: 200, headers: Vec::new(), body }
    }

    /// 201 Created, as both forges answer a new comment.
    pub(crate) fn created(body: Value) -> Answer {
        Answer { status: 201, headers: Vec::new(), body }
    }

    pub(crate) fn status(status: u16, message: &str) -> Answer {
        Answer { status, headers: Vec::new(), body: json!({"message": message}) }
    }

    pub(crate) fn into_response(self) -> Response<Body> {
        let mut builder = Response::builder().status(self.status).header("content-type", "application/json");
        for (name, value) in self.headers {
            builder = builder.header(name, value);
        }
        builder.body(Body::from(self.body.to_string())).expect("response")
    }
}

/// A request as the fakes read it.
pub(crate) struct Incoming {
    pub(crate) method: String,
    pub(crate) segments: Vec<String>,
    pub(crate) query: HashMap<String, String>,
    pub(crate) headers: axum::http::HeaderMap,
    pub(crate) body: Value,
    raw_query: String,
    path: String,
}

/// Reads a request, records it, and answers it with `route` unless the behaviour
/// says to refuse it first.
pub(crate) async fn serve<S: ForgeState>(
    state: &Arc<Mutex<S>>,
    request: Request<Body>,
    route: fn(&mut S, &Incoming) -> Answer,
    forbidden: Value,
) -> Response<Body> {
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, 16 * 1024 * 1024).await.unwrap_or_default();
    let raw_query = parts.uri.query().unwrap_or("").to_string();
    let incoming = Incoming {
        method: parts.method.to_string(),
        segments: parts.uri.path().split('/').filter(|s| !s.is_empty()).map(decode).collect(),
        query: raw_query.split('&').filter_map(|p| p.split_once('=')).map(|(k, v)| (k.into(), decode(v))).collect(),
        headers: parts.headers,
        body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        path: parts.uri.path().to_string(),
        raw_query,
    };
    let mut state = state.lock().expect("lock");
    let seen = state.behaviour();
    seen.requests.push(ForgeRequest {
        method: incoming.method.clone(),
        path: incoming.path.clone(),
        query: incoming.raw_query.clone(),
        body: incoming.body.clone(),
    });
    if seen.rate_limited > 0 {
        seen.rate_limited -= 1;
        let mut answer = Answer::status(429, "You have exceeded a secondary rate limit. Please wait a few minutes.");
        answer.headers.push(("retry-after".into(), "1".into()));
        return answer.into_response();
    }
    if seen.read_only && incoming.method != "GET" {
        return Answer { status: 403, headers: Vec::new(), body: forbidden }.into_response();
    }
    route(&mut state, &incoming).into_response()
}

fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match (bytes[i], text.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (b'+', _) => {
                out.push(b' ');
                i += 1;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Now, as both forges write a comment's `created_at` and `updated_at`.
pub(crate) fn timestamp() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// Pagination of the fakes: which page is asked for and the items on it.
pub(crate) struct Page {
    pub(crate) items: Vec<Value>,
    pub(crate) number: usize,
    pub(crate) last: usize,
}

pub(crate) fn page(all: &[Value], incoming: &Incoming, size: usize) -> Page {
    let size = size.max(1);
    let number = incoming.query.get("page").and_then(|p| p.parse().ok()).unwrap_or(1usize).max(1);
    let last = all.len().div_ceil(size).max(1);
    let items = all.iter().skip((number - 1) * size).take(size).cloned().collect();
    Page { items, number, last }
}

/// The URL of another page of this request, for `Link` headers.
pub(crate) fn page_url(base: &str, incoming: &Incoming, page: usize) -> String {
    let mut query: Vec<String> = incoming
        .raw_query
        .split('&')
        .filter(|p| !p.is_empty() && !p.starts_with("page="))
        .map(str::to_string)
        .collect();
    query.push(format!("page={page}"));
    format!("{base}{}?{}", incoming.path, query.join("&"))
}

/// Starts a fake forge on a free loopback port, answering with `handle`.
pub(crate) async fn start<S, H, T>(state: S, handle: H) -> FakeForge<S>
where
    S: ForgeState,
    H: axum::handler::Handler<T, Arc<Mutex<S>>>,
    T: 'static,
{
    let state = Arc::new(Mutex::new(state));
    let app = axum::Router::new().fallback(handle).with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    FakeForge { base, state, task }
}
