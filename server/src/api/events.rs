//! A run's events as Server-Sent Events: the stored ones first, read from the store a
//! page at a time, then live ones (from this server's bus when it runs the run, else
//! from the store as other processes commit them), ending after `run_finished`. Each
//! SSE event has the sequence number as its id and the event type as its name, so a
//! client resumes with `Last-Event-ID`. However long the log, a stream holds at most
//! one page and its channel's events.

// utoipa's `IntoParams` expansion spells out paths that are already in scope.
#![allow(unused_qualifications)]

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use conclave_core::StoreError;
use conclave_shared::{EventKind, RunEvent};
use futures::Stream;
use serde::Deserialize;
use std::convert::Infallible;
use std::time::Duration;
use tokio::sync::{broadcast, mpsc};
use utoipa::IntoParams;

use super::extract::{ApiPath, ApiQuery};
use super::{ApiError, AppState};

/// How many stored events a stream reads from the store at a time.
pub const EVENT_PAGE: usize = 256;

/// The largest event sequence number a client may name: the largest integer a
/// JavaScript client can hold exactly.
const MAX_SEQ: u64 = 9_007_199_254_740_991;

/// How often a run owned by another process is polled for new events, when the
/// store cannot say when they come (SQLite).
const POLL: Duration = Duration::from_millis(400);

/// How long a stream of another process's run waits for a notice before it reads
/// the store anyway (a notice lost with a dropped connection).
const NOTICE_WAIT: Duration = Duration::from_secs(5);

/// Where to resume an event stream.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EventsQuery {
    /// Only events after this sequence number (the `Last-Event-ID` header wins).
    #[param(minimum = 0, maximum = 9007199254740991_i64)]
    pub after: Option<u64>,
}

/// Streams a run's events: stored ones first, then live ones, ending after
/// `run_finished`. Each SSE event has the sequence number as its id and the event
/// type as its name, so a client resumes with `Last-Event-ID`.
#[utoipa::path(get, path = "/api/runs/{id}/events", params(("id" = String, Path, description = "Run id"), EventsQuery),
    responses((status = 200, description = "text/event-stream of run events"), (status = 404, description = "No such run")))]
pub async fn events(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    headers: HeaderMap,
    ApiQuery(q): ApiQuery<EventsQuery>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let resume = headers.get("last-event-id").and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse().ok());
    let after: u64 = resume.or(q.after).unwrap_or(0);
    let rx = follow_events(state, id, after).await?;
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        let event = rx.recv().await?;
        let sse = Event::default()
            .id(event.seq.to_string())
            .event(event.kind.type_name())
            .data(serde_json::to_string(&event).unwrap_or_default());
        Some((Ok(sse), rx))
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// A run's events after `after`, stored ones first, then live ones, ending after
/// `run_finished` (or when the receiver is dropped): the one follower of a run's
/// events for every server interface (SSE here, progress over `/mcp`).
pub(crate) async fn follow_events(
    state: AppState,
    id: String,
    after: u64,
) -> Result<mpsc::Receiver<RunEvent>, ApiError> {
    // Subscribe before reading the store, so nothing falls between the two.
    let live = state.live_run(&id).map(|l| l.bus.subscribe());
    // The first page also tells an unknown run apart.
    let first = match state.store().events_page(&id, after.min(MAX_SEQ), EVENT_PAGE).await {
        Err(StoreError::UnknownRun(_)) => return Err(ApiError::NotFound(format!("no run `{id}`"))),
        page => page?,
    };
    if after > MAX_SEQ {
        return Err(ApiError::BadRequest { message: format!("`after` must be at most {MAX_SEQ}"), path: None });
    }
    let (tx, rx) = mpsc::channel::<RunEvent>(EVENT_PAGE);
    tokio::spawn(forward(Follow { state, id, last: after, tx, live }, first));
    Ok(rx)
}

/// One stream's place in a run's events.
struct Follow {
    state: AppState,
    id: String,
    /// The last event sent.
    last: u64,
    tx: mpsc::Sender<RunEvent>,
    live: Option<broadcast::Receiver<std::sync::Arc<RunEvent>>>,
}

/// Whether a stream goes on.
enum Next {
    /// Go on; whether the store had anything new.
    Continue { delivered: bool },
    /// The run finished, or the client went away.
    Stop,
}

/// Sends a run's events after `follow.last` until the run finishes or the client
/// goes away: live from this server's bus when it runs the run, else from the store.
async fn forward(mut follow: Follow, first: Vec<RunEvent>) {
    let mut notices = follow.state.store().commit_notices();
    // Notices of this process's commits only: read the store as often as without.
    let patience = if follow.state.store().notices_from_every_process() { NOTICE_WAIT } else { POLL };
    let mut page = Some(first);
    loop {
        let Next::Continue { delivered } = follow.catch_up(page.take()).await else { return };
        match follow.live.as_mut() {
            Some(rx) => loop {
                match rx.recv().await {
                    Ok(event) if event.seq <= follow.last => continue,
                    Ok(event) => {
                        if !send(&follow.tx, &mut follow.last, std::sync::Arc::unwrap_or_clone(event)).await {
                            return;
                        }
                    }
                    // Too slow for the live feed, or the run ended: catch up from the store.
                    Err(broadcast::error::RecvError::Lagged(_)) => break,
                    Err(broadcast::error::RecvError::Closed) => {
                        follow.live = None;
                        break;
                    }
                }
            },
            // This server's worker may have claimed the run since: follow it live.
            None if let Some(run) = follow.state.live_run(&follow.id) => follow.live = Some(run.bus.subscribe()),
            None => {
                // A run that ended has a last event, `run_finished`, that ends the stream
                // above; an ended run without one is only checked for when nothing new
                // came, so a follower costs one read per notice.
                if !delivered && follow.ended_without_more().await {
                    return;
                }
                if follow.tx.is_closed() {
                    return;
                }
                wait_for_events(&follow.id, notices.as_mut(), patience).await;
            }
        }
    }
}

impl Follow {
    /// Sends the stored events after `last`, `page` first when given, reading the
    /// store a page at a time until a page comes back short.
    async fn catch_up(&mut self, mut page: Option<Vec<RunEvent>>) -> Next {
        let mut delivered = false;
        loop {
            let stored = match page.take() {
                Some(page) => page,
                None => match self.state.store().events_page(&self.id, self.last, EVENT_PAGE).await {
                    Ok(page) => page,
                    Err(_) => return Next::Stop,
                },
            };
            let full = stored.len() >= EVENT_PAGE;
            delivered |= !stored.is_empty();
            for event in stored {
                if !send(&self.tx, &mut self.last, event).await {
                    return Next::Stop;
                }
            }
            if !full {
                return Next::Continue { delivered };
            }
        }
    }

    /// Whether the run is gone or ended with nothing left to send: its row, and one
    /// event at most, are read.
    async fn ended_without_more(&self) -> bool {
        let summary = self.state.store().run_summary(&self.id).await.ok().flatten();
        summary.is_none_or(|s| s.status.is_terminal())
            && self.state.store().events_page(&self.id, self.last, 1).await.map_or(true, |e| e.is_empty())
    }
}

/// Sends one event; `false` when the stream is over: the client went away, or the
/// event is the run's last.
async fn send(tx: &mpsc::Sender<RunEvent>, last: &mut u64, event: RunEvent) -> bool {
    *last = event.seq;
    let done = matches!(event.kind, EventKind::RunFinished { .. });
    tx.send(event).await.is_ok() && !done
}

/// Waits until run `id` may have new events in the store: a notice from the store
/// (PostgreSQL's LISTEN/NOTIFY: another server committed them; SQLite's: this
/// process's worker did), or `patience` without one; for a store that sends none,
/// the polling interval.
async fn wait_for_events(id: &str, notices: Option<&mut broadcast::Receiver<String>>, patience: Duration) {
    let Some(notices) = notices else { return tokio::time::sleep(POLL).await };
    let heard = async {
        loop {
            match notices.recv().await {
                Ok(run_id) if run_id == id => return,
                Ok(_) => {}
                // Missed notices may include this run's: read the store.
                Err(broadcast::error::RecvError::Lagged(_)) => return,
                Err(broadcast::error::RecvError::Closed) => return tokio::time::sleep(POLL).await,
            }
        }
    };
    let _ = tokio::time::timeout(patience, heard).await;
}
