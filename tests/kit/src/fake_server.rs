//! A fake LLM server on a loopback socket: it records every request and answers from
//! a script, by what the request body contains, or with a function of the request. It
//! can also send a body far larger than any client should read, counting what it sent,
//! and keep a vendor's prompt cache (`prompt_cache.rs`), reporting each answer's usage
//! as that vendor's cache would. What a request writes to the cache becomes readable
//! when its response begins (the first chunk of its stream is sent), as the vendors
//! document; a paced reply begins some time before it ends. It records when each
//! request arrived and when its response began and ended.

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, Request, Response, StatusCode};
use serde_json::Value;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::prompt_cache::{CacheRules, PromptCache};

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A 200 streaming body, sent in these chunks.
    Stream { content_type: &'static str, chunks: Vec<String> },
    /// A status with headers and a body.
    Status { status: u16, headers: Vec<(&'static str, String)>, body: String },
    /// Another reply, given after a wait (a slow model).
    After { millis: u64, reply: Box<Reply> },
    /// A streamed reply whose response begins (its headers and first chunk, such as
    /// Anthropic's `message_start`) `begin_ms` after the request arrived, and ends
    /// (the other chunks) `end_ms` after it: a model that starts answering long
    /// before it is done.
    Paced { begin_ms: u64, end_ms: u64, reply: Box<Reply> },
    /// A status whose body starts with `start` and goes on with `x` up to
    /// [`FLOOD_CEILING`] bytes: for a client that must stop reading long before.
    Flood { status: u16, content_type: &'static str, start: String },
}

/// Where a [`Reply::Flood`] body stops, so that a client that reads it all still ends
/// (with a wrong answer, not a hung test).
pub const FLOOD_CEILING: usize = 64 << 20;

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub path: String,
    pub headers: HeaderMap,
    pub body: Value,
    /// When it arrived.
    pub at: Instant,
}

/// When a request's response began and ended, as the server sent it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Answered {
    /// When the first chunk of its streamed body was handed over; `None` for a reply
    /// that is not a stream, or one not sent yet.
    pub began: Option<Instant>,
    /// When its last chunk (or its whole body) was handed over.
    pub ended: Option<Instant>,
}

/// Replies for requests whose body contains `marker`, used in order; the last one is
/// repeated once the others are used up.
#[derive(Debug, Clone)]
pub struct Route {
    pub marker: String,
    pub replies: Vec<Reply>,
}

/// Routes by marker, each with the replies still to give.
type RouteTable = Vec<(String, VecDeque<Reply>)>;

/// A prompt cache the server keeps, with whose rules.
type KeptCache = (CacheRules, Arc<PromptCache>);

/// Answers a request body when neither a route nor the script has a reply.
pub type Responder = fn(&Value) -> Reply;

#[derive(Clone, Default)]
struct Shared {
    requests: Arc<Mutex<Vec<Recorded>>>,
    script: Arc<Mutex<VecDeque<Reply>>>,
    routes: Arc<Mutex<RouteTable>>,
    responder: Arc<Mutex<Option<Responder>>>,
    /// Requests being answered now, and the most at once.
    in_flight: Arc<(AtomicUsize, AtomicUsize)>,
    /// Bytes of flood bodies handed to the socket.
    flooded: Arc<AtomicUsize>,
    /// The vendor's prompt cache, when the server keeps one.
    cache: Arc<Mutex<Option<KeptCache>>>,
    /// When each request's response began and ended, by request index.
    answered: Arc<Mutex<Vec<Answered>>>,
}

/// The fake server; it stops when dropped.
pub struct FakeServer {
    pub base: String,
    shared: Shared,
    task: tokio::task::JoinHandle<()>,
}

impl FakeServer {
    /// Starts a server on 127.0.0.1 with a free port, answering with `script` in order.
    pub async fn start(script: Vec<Reply>) -> FakeServer {
        let shared = Shared::default();
        shared.script.lock().expect("lock").extend(script);
        let app = axum::Router::new().fallback(handle).with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeServer { base, shared, task }
    }

    /// Starts a server that picks replies by what the request body contains, so
    /// concurrent agents each get their own script.
    pub async fn start_routed(routes: Vec<Route>) -> FakeServer {
        let server = FakeServer::start(Vec::new()).await;
        server
            .shared
            .routes
            .lock()
            .expect("lock")
            .extend(routes.into_iter().map(|r| (r.marker, r.replies.into_iter().collect())));
        server
    }

    /// Starts a server that answers every request with `responder(body)`.
    pub async fn start_responding(responder: Responder) -> FakeServer {
        let server = FakeServer::start(Vec::new()).await;
        *server.shared.responder.lock().expect("lock") = Some(responder);
        server
    }

    /// Keeps a prompt cache under `rules` from now on: each answer's usage is what
    /// that cache gives the request. Returns the cache, to read its log.
    pub fn keep_prompt_cache(&self, rules: CacheRules) -> Arc<PromptCache> {
        let cache = Arc::new(PromptCache::new(rules));
        *self.shared.cache.lock().expect("lock") = Some((rules, cache.clone()));
        cache
    }

    /// The most requests it was answering at once (a reply's wait included).
    pub fn peak_in_flight(&self) -> usize {
        self.shared.in_flight.1.load(Ordering::SeqCst)
    }

    /// Bytes of [`Reply::Flood`] bodies handed to the socket so far.
    pub fn flooded(&self) -> usize {
        self.shared.flooded.load(Ordering::SeqCst)
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().expect("lock").clone()
    }

    /// When each request's response began and ended, in the order of
    /// [`FakeServer::requests`].
    pub fn answered(&self) -> Vec<Answered> {
        self.shared.answered.lock().expect("lock").clone()
    }
}

impl std::fmt::Debug for FakeServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeServer").field("base", &self.base).finish_non_exhaustive()
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn handle(State(shared): State<Shared>, request: Request<Body>) -> Response<Body> {
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, 16 * 1024 * 1024).await.unwrap_or_default();
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let text = body.to_string();
    let at = Instant::now();
    let index = {
        let mut requests = shared.requests.lock().expect("lock");
        requests.push(Recorded { path: parts.uri.path().to_string(), headers: parts.headers, body: body.clone(), at });
        shared.answered.lock().expect("lock").push(Answered::default());
        requests.len() - 1
    };
    let routed = {
        let mut routes = shared.routes.lock().expect("lock");
        routes
            .iter_mut()
            .find(|(marker, _)| text.contains(marker.as_str()))
            .and_then(|(_, replies)| if replies.len() > 1 { replies.pop_front() } else { replies.front().cloned() })
    };
    let reply = routed
        .or_else(|| shared.script.lock().expect("lock").pop_front())
        .or_else(|| shared.responder.lock().expect("lock").map(|answer| answer(&body)));
    let cache = shared.cache.lock().expect("lock").clone();
    let (reply, pending) = match &cache {
        Some((rules, cache)) => match cache.usage(&body) {
            Ok((usage, pending)) => (reply.map(|r| with_usage(r, *rules, usage)), Some(pending)),
            Err(refused) => {
                let error = serde_json::json!({"type": "error", "error": {"type": "invalid_request_error", "message": refused.0}});
                (Some(Reply::Status { status: 400, headers: Vec::new(), body: error.to_string() }), None)
            }
        },
        None => (reply, None),
    };
    let (now, peak) = (&shared.in_flight.0, &shared.in_flight.1);
    peak.fetch_max(now.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
    let answered = shared.answered.clone();
    let note = move |mark: fn(&mut Answered) -> &mut Option<Instant>| {
        let mut answered = answered.lock().expect("lock");
        *mark(&mut answered[index]) = Some(Instant::now());
    };
    let ended = note.clone();
    // What the request wrote is readable once its response begins, not before: an
    // error writes nothing.
    let began: Hook = Box::new(move || {
        note(|a| &mut a.began);
        if let (Some((_, cache)), Some(pending)) = (cache, pending) {
            cache.commit(pending);
        }
    });
    let hooks = Hooks { received: at, began, ended: Box::new(move || ended(|a| &mut a.ended)) };
    let response = respond(reply, shared.flooded.clone(), hooks).await;
    now.fetch_sub(1, Ordering::SeqCst);
    response
}

/// Called once, when a response begins or ends.
type Hook = Box<dyn FnOnce() + Send>;

/// What happens as a response is sent.
struct Hooks {
    /// When the request arrived, from which a paced reply's times count.
    received: Instant,
    /// The streamed body's first chunk is handed over.
    began: Hook,
    /// The body's last chunk (or a whole body) is handed over.
    ended: Hook,
}

/// `reply` with its streamed usage replaced by what the prompt cache gave.
fn with_usage(reply: Reply, rules: CacheRules, usage: crate::prompt_cache::CacheUsage) -> Reply {
    match reply {
        Reply::Stream { content_type, chunks } => Reply::Stream {
            content_type,
            chunks: chunks.iter().map(|c| crate::prompt_cache::report(rules, c, usage)).collect(),
        },
        Reply::After { millis, reply } => Reply::After { millis, reply: Box::new(with_usage(*reply, rules, usage)) },
        Reply::Paced { begin_ms, end_ms, reply } => {
            Reply::Paced { begin_ms, end_ms, reply: Box::new(with_usage(*reply, rules, usage)) }
        }
        other => other,
    }
}

/// The response for `reply`, after its wait when it has one.
async fn respond(reply: Option<Reply>, flooded: Arc<AtomicUsize>, hooks: Hooks) -> Response<Body> {
    let mut reply = reply;
    let mut end = None;
    loop {
        match reply {
            Some(Reply::After { millis, reply: later }) => {
                tokio::time::sleep(Duration::from_millis(millis)).await;
                reply = Some(*later);
            }
            Some(Reply::Paced { begin_ms, end_ms, reply: later }) => {
                tokio::time::sleep_until((hooks.received + Duration::from_millis(begin_ms)).into()).await;
                end = Some(hooks.received + Duration::from_millis(end_ms));
                reply = Some(*later);
            }
            _ => break,
        }
    }
    let mut response = Response::builder();
    match reply {
        Some(Reply::Stream { content_type, chunks }) => response
            .status(StatusCode::OK)
            .header("content-type", content_type)
            .body(Body::from_stream(paced(chunks, end, hooks)))
            .expect("response"),
        Some(Reply::Status { status, headers, body }) => {
            (hooks.ended)();
            response = response.status(status).header("content-type", "application/json");
            for (name, value) in headers {
                response = response.header(name, value);
            }
            response.body(Body::from(body)).expect("response")
        }
        Some(Reply::Flood { status, content_type, start }) => response
            .status(status)
            .header("content-type", content_type)
            .body(Body::from_stream(flood(start, flooded)))
            .expect("response"),
        Some(Reply::After { .. } | Reply::Paced { .. }) | None => response
            .status(500)
            .body(Body::from(r#"{"error":{"message":"the fake server has no scripted reply left"}}"#))
            .expect("response"),
    }
}

/// `chunks` as a body: the first when the body is first read (the response began),
/// the others at `end` (at once without one).
fn paced(
    chunks: Vec<String>,
    end: Option<Instant>,
    hooks: Hooks,
) -> impl futures::Stream<Item = Result<String, Infallible>> {
    let Hooks { began, ended, .. } = hooks;
    let state = (chunks.into_iter().collect::<VecDeque<_>>(), end, Some(began), Some(ended));
    futures::stream::unfold(state, |(mut chunks, mut end, mut began, mut ended)| async move {
        match began.take() {
            Some(hook) => hook(),
            None => {
                if let Some(end) = end.take() {
                    tokio::time::sleep_until(end.into()).await;
                }
            }
        }
        let chunk = chunks.pop_front();
        if chunks.is_empty()
            && let Some(hook) = ended.take()
        {
            hook();
        }
        Some((Ok(chunk?), (chunks, end, began, ended)))
    })
}

/// `start`, then `x` in 64 KiB chunks up to [`FLOOD_CEILING`] bytes, each chunk
/// counted in `sent` as the server takes it.
fn flood(start: String, sent: Arc<AtomicUsize>) -> impl futures::Stream<Item = Result<Vec<u8>, Infallible>> {
    const CHUNK: usize = 64 << 10;
    let first = start.into_bytes();
    futures::stream::unfold((Some(first), 0usize), move |(first, total)| {
        let sent = sent.clone();
        async move {
            let chunk = match first {
                Some(first) => first,
                None if total >= FLOOD_CEILING => return None,
                None => vec![b'x'; CHUNK.min(FLOOD_CEILING - total)],
            };
            sent.fetch_add(chunk.len(), Ordering::SeqCst);
            let total = total + chunk.len();
            Some((Ok(chunk), (None, total)))
        }
    })
}
