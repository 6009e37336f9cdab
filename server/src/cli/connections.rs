//! The connections of `conclave serve`: how many may be open, and which one makes
//! way for a new client. The cap stays below the process's open-file limit (raised to
//! its hard limit at start) less the files the store and the runs need, so `accept`
//! never fails for want of a descriptor; at the cap, the connection idle longest (no
//! request in flight, an event stream counting as one) is closed for the newcomer,
//! and only when every connection is busy do new clients wait in the kernel's backlog.

use axum::body::{Body, Bytes};
use axum::http::Request;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

/// Files the server keeps for other than connections: the process's own (standard
/// streams, the listener, the async runtime's), the store's (SQLite's database,
/// write-ahead log and shared memory for each connection, or PostgreSQL's pool and
/// listener), and the telemetry exporter's.
const RESERVED_FILES: u64 = 64;

/// Files each node running at once may hold: its provider's connection, and a file a
/// review tool reads or a command node's pipes.
const FILES_PER_NODE: u64 = 2;

/// How long a connection asked to make way may take to close by itself.
const CLOSE_GRACE: Duration = Duration::from_millis(100);

/// The fewest connections worth serving with.
const MIN_CONNECTIONS: u64 = 16;

/// Raises the soft limit on open files to the hard limit; returns the soft limit in
/// force afterwards (the old one when raising failed).
pub fn raise_file_limit() -> u64 {
    // Linux refuses a soft limit above `fs.nr_open` (1,048,576 by default) even when
    // the hard limit is unlimited.
    const NR_OPEN: u64 = 1 << 20;
    let Ok((soft, hard)) = rlimit::Resource::NOFILE.get() else { return NR_OPEN };
    rlimit::increase_nofile_limit(hard.min(NR_OPEN)).unwrap_or(soft)
}

/// The connection cap: `asked`, lowered to what the open-file limit `files` leaves
/// after the store's and the runs' (`max_concurrency` nodes at once); an error
/// saying what to do when that is too few.
pub fn connection_cap(asked: u16, files: u64, max_concurrency: usize) -> Result<usize, String> {
    let reserved = RESERVED_FILES + FILES_PER_NODE * max_concurrency as u64;
    let room = files.saturating_sub(reserved);
    if room < MIN_CONNECTIONS {
        return Err(format!(
            "the open-file limit is {files}, and the store and {max_concurrency} nodes at once (--max-concurrency) \
             need {reserved} of them, leaving fewer than {MIN_CONNECTIONS} for connections; raise the limit \
             (ulimit -n) or lower --max-concurrency"
        ));
    }
    Ok(usize::try_from(room.min(u64::from(asked))).unwrap_or(usize::from(asked)))
}

/// The service `serve` runs: the app with a time limit on request bodies.
pub type Served = tower_http::timeout::RequestBodyTimeout<crate::api::App>;

/// Accepts connections, at most `cap` open at once, each served with header and
/// keep-alive timeouts; at the cap, the connection idle longest makes way.
pub async fn accept(listener: TcpListener, service: Served, cap: usize, header_timeout: Duration) {
    let slots = Arc::new(Semaphore::new(cap));
    let open = Connections::new();
    loop {
        // With every connection busy, wait: new clients queue in the kernel's backlog
        // instead of holding file descriptors here.
        open.wait_for_room(&slots).await;
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                tracing::warn!("accepting a connection failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let slot = match slots.clone().try_acquire_owned() {
            Ok(slot) => slot,
            Err(_) => {
                open.close_longest_idle();
                let Ok(slot) = slots.clone().acquire_owned().await else { return };
                slot
            }
        };
        let connection = open.register();
        tokio::spawn(serve(stream, service.clone(), connection, slot, header_timeout));
    }
}

/// Serves one connection until it ends, its header timeout passes, or it is closed
/// to make way for another.
async fn serve(
    stream: TcpStream,
    service: Served,
    connection: Registered,
    slot: OwnedSemaphorePermit,
    timeout: Duration,
) {
    let closing = connection.state.close.clone();
    // A client that connects and says nothing is let go: the header timeout only
    // starts once bytes arrive.
    let mut first = [0u8; 1];
    tokio::select! {
        peeked = tokio::time::timeout(timeout, stream.peek(&mut first)) => if !matches!(peeked, Ok(Ok(1..))) { return },
        () = closing.cancelled() => return,
    }
    let state = connection.state.clone();
    let service = ServiceExt::<Request<hyper::body::Incoming>>::map_future(service, move |answer| {
        let in_flight = InFlight::start(state.clone());
        async move { answer.await.map(|response| response.map(|body| Body::new(Tracked { body, _in_flight: in_flight }))) }
    });
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder.http1().timer(TokioTimer::new()).header_read_timeout(timeout).keep_alive(true);
    builder.http2().timer(TokioTimer::new()).keep_alive_interval(Some(Duration::from_secs(30)));
    let served = builder.serve_connection_with_upgrades(TokioIo::new(stream), TowerToHyperService::new(service));
    tokio::pin!(served);
    let ended = tokio::select! {
        ended = served.as_mut() => ended,
        () = closing.cancelled() => {
            // Idle, it closes at once, and a request that arrived meanwhile is answered
            // first; but one in the middle of a request's head (a slow client) would
            // wait for the rest, so it is dropped unless a request got in flight.
            served.as_mut().graceful_shutdown();
            match tokio::time::timeout(CLOSE_GRACE, served.as_mut()).await {
                Ok(ended) => ended,
                Err(_) if connection.state.in_flight.load(Ordering::SeqCst) == 0 => Ok(()),
                Err(_) => served.await,
            }
        }
    };
    if let Err(e) = ended {
        tracing::debug!("a connection ended with an error: {e}");
    }
    drop((connection, slot));
}

/// The open connections, by id.
#[derive(Debug)]
struct Connections {
    open: Mutex<HashMap<u64, Arc<Connection>>>,
    next_id: AtomicU64,
    /// Told when a connection closes or goes idle.
    changed: Notify,
    since: Instant,
}

/// One open connection.
#[derive(Debug)]
struct Connection {
    /// Requests in flight, responses being sent included.
    in_flight: AtomicUsize,
    /// When it last went idle, in ms since the server started.
    idle_since: AtomicU64,
    close: CancellationToken,
    registry: Arc<Connections>,
}

impl Connections {
    fn new() -> Arc<Connections> {
        Arc::new(Connections {
            open: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
            changed: Notify::new(),
            since: Instant::now(),
        })
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.since.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn register(self: &Arc<Self>) -> Registered {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let state = Arc::new(Connection {
            in_flight: AtomicUsize::new(0),
            idle_since: AtomicU64::new(self.now_ms()),
            close: CancellationToken::new(),
            registry: Arc::clone(self),
        });
        self.open.lock().unwrap_or_else(PoisonError::into_inner).insert(id, Arc::clone(&state));
        Registered { id, state }
    }

    /// Returns once a connection may be accepted: a slot is free, or a connection
    /// is idle and could make way.
    async fn wait_for_room(&self, slots: &Semaphore) {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if slots.available_permits() > 0 || self.longest_idle().is_some() {
                return;
            }
            changed.await;
        }
    }

    /// Asks the connection idle longest to close; `false` when every one is busy.
    fn close_longest_idle(&self) -> bool {
        self.longest_idle().map(|c| c.close.cancel()).is_some()
    }

    fn longest_idle(&self) -> Option<Arc<Connection>> {
        let open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        open.values()
            .filter(|c| c.in_flight.load(Ordering::SeqCst) == 0 && !c.close.is_cancelled())
            .min_by_key(|c| c.idle_since.load(Ordering::SeqCst))
            .cloned()
    }
}

/// A connection's place among the open ones, given up when it ends.
#[derive(Debug)]
struct Registered {
    id: u64,
    state: Arc<Connection>,
}

impl Drop for Registered {
    fn drop(&mut self) {
        let registry = &self.state.registry;
        registry.open.lock().unwrap_or_else(PoisonError::into_inner).remove(&self.id);
        registry.changed.notify_waiters();
    }
}

/// A request in flight on a connection, until its response has been sent (or
/// dropped): an event stream keeps its connection busy while it lasts.
#[derive(Debug)]
struct InFlight(Arc<Connection>);

impl InFlight {
    fn start(connection: Arc<Connection>) -> InFlight {
        connection.in_flight.fetch_add(1, Ordering::SeqCst);
        InFlight(connection)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let connection = &self.0;
        connection.idle_since.store(connection.registry.now_ms(), Ordering::SeqCst);
        if connection.in_flight.fetch_sub(1, Ordering::SeqCst) == 1 {
            connection.registry.changed.notify_waiters();
        }
    }
}

/// A response body that keeps its request in flight until it is sent or dropped.
#[derive(Debug)]
struct Tracked {
    body: Body,
    _in_flight: InFlight,
}

impl http_body::Body for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}
