//! The event bus of one run: numbers events, stores them, then publishes them.
//!
//! `emit` only numbers an event and queues it: the run never waits for the store.
//! One appender task per run takes every event queued while its previous write ran
//! and hands them to the store together (`RunStore::append_events`), which commits
//! them in one transaction (the stores group the writes of all runs again). Only
//! after that commit does it publish them, in sequence order, so anything a
//! subscriber saw is already durable, and sequence numbers in the store and on the
//! wire are the same. `flush` waits until everything emitted so far is committed:
//! the run ends with it, so a finished run's events are all in the store.
//!
//! A crash loses at most the events not yet committed, always a suffix: events are
//! committed in order, so the store holds a prefix of the run's history, which is
//! what resuming a run needs.
//!
//! Emitters wait only when `QUEUE_LIMIT` events are queued and not yet written, so a
//! store slower than the run holds it back instead of filling memory.

use async_trait::async_trait;
use conclave_core::{RunStore, StreamSink, now_ms};
use conclave_shared::{EventKind, RunEvent};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::{Semaphore, broadcast, mpsc, watch};

/// Events buffered per subscriber before a slow one starts missing them; a subscriber
/// that lags can catch up from the store. Every run makes (and drops) a buffer this
/// long, each slot a pointer: events are published shared, not as copies.
const SUBSCRIBER_BUFFER: usize = 1024;

/// Events that may wait for the store before emitters wait.
const QUEUE_LIMIT: usize = 8192;

/// The most events handed to the store in one write.
const MAX_WRITE: usize = 1024;

/// Numbers, stores and publishes one run's events.
#[derive(Debug)]
pub struct EventBus {
    run_id: String,
    /// The last sequence number given out, and the appender's queue; one lock, so
    /// events are queued in sequence order.
    queue: Mutex<(u64, mpsc::UnboundedSender<RunEvent>)>,
    room: Arc<Semaphore>,
    written: watch::Receiver<u64>,
    tx: broadcast::Sender<Arc<RunEvent>>,
    store_error: Arc<Mutex<Option<String>>>,
    appender: tokio::task::AbortHandle,
}

impl EventBus {
    /// A bus for `run_id` writing to `store`. Starts the run's appender task on the
    /// current tokio runtime.
    pub fn new(run_id: String, store: Arc<dyn RunStore>) -> EventBus {
        EventBus::resuming(run_id, store, 0)
    }

    /// A bus for a run taken up again, whose last stored event was `last_seq`.
    pub fn resuming(run_id: String, store: Arc<dyn RunStore>, last_seq: u64) -> EventBus {
        let (tx, _) = broadcast::channel(SUBSCRIBER_BUFFER);
        let (queue, pending) = mpsc::unbounded_channel();
        let (written_tx, written) = watch::channel(last_seq);
        let room = Arc::new(Semaphore::new(QUEUE_LIMIT));
        let store_error = Arc::new(Mutex::new(None));
        let appender = Appender {
            run_id: run_id.clone(),
            store,
            room: room.clone(),
            written: written_tx,
            tx: tx.clone(),
            store_error: store_error.clone(),
        };
        let appender = tokio::spawn(appender.run(pending)).abort_handle();
        EventBus { run_id, queue: Mutex::new((last_seq, queue)), room, written, tx, store_error, appender }
    }

    /// The run.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// A receiver of every event published from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<RunEvent>> {
        self.tx.subscribe()
    }

    /// Emits one event: numbers it and queues it for the store, without waiting for
    /// the write (see [`EventBus::flush`]). A store failure is remembered (the run will
    /// fail with it) and the event is still published, so watchers see what happened.
    pub async fn emit(&self, kind: EventKind) {
        // The semaphore is never closed, so this waits only for room.
        if let Ok(permit) = self.room.acquire().await {
            permit.forget();
        }
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        queue.0 += 1;
        let event = RunEvent { run_id: self.run_id.clone(), seq: queue.0, at_ms: now_ms(), kind };
        // The appender lives as long as the bus unless the run was abandoned, and then
        // nothing more is to be written.
        let _ = queue.1.send(event);
    }

    /// Waits until every event emitted so far has been written (or its write failed,
    /// see [`EventBus::store_error`]) and published.
    pub async fn flush(&self) {
        let last = self.queue.lock().unwrap_or_else(PoisonError::into_inner).0;
        let mut written = self.written.clone();
        // An error means the appender is gone (abandoned): nothing more will be written.
        let _ = written.wait_for(|&seq| seq >= last).await;
    }

    /// Stops writing: events not yet written are dropped. For a run abandoned because
    /// another worker has taken it over.
    pub fn abandon(&self) {
        self.appender.abort();
    }

    /// The first store failure, if any.
    pub fn store_error(&self) -> Option<String> {
        self.store_error.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

/// The task that writes a run's queued events and then publishes them.
struct Appender {
    run_id: String,
    store: Arc<dyn RunStore>,
    room: Arc<Semaphore>,
    written: watch::Sender<u64>,
    tx: broadcast::Sender<Arc<RunEvent>>,
    store_error: Arc<Mutex<Option<String>>>,
}

impl Appender {
    /// Writes until the bus is dropped and its queue drained.
    async fn run(self, mut pending: mpsc::UnboundedReceiver<RunEvent>) {
        // Grown as events come: most runs never queue many at once.
        let mut batch = Vec::new();
        while pending.recv_many(&mut batch, MAX_WRITE).await > 0 {
            let last = batch.last().map_or(0, |e| e.seq);
            match self.store.append_events(&batch).await {
                Ok(()) => crate::observe::events_written(batch.len()),
                Err(err) => {
                    crate::observe::store_failed("append_event");
                    tracing::error!(run_id = %self.run_id, last_seq = last, "could not store events: {err}");
                    let mut slot = self.store_error.lock().unwrap_or_else(PoisonError::into_inner);
                    slot.get_or_insert_with(|| err.to_string());
                }
            }
            self.room.add_permits(batch.len());
            for event in batch.drain(..) {
                // No subscribers is fine: the event is in the store.
                let _ = self.tx.send(Arc::new(event));
            }
            self.written.send_replace(last);
        }
    }
}

/// Streams one node's text and tool calls onto a run's bus as events.
#[derive(Debug, Clone)]
pub struct BusSink {
    bus: Arc<EventBus>,
    node_id: String,
    quiet: bool,
    /// The id events name a tool by, for tools whose model name is another
    /// (`mcp__docs__git_log` is `mcp:docs/git_log`).
    names: Arc<HashMap<String, String>>,
}

impl BusSink {
    /// A sink for `node_id` on `bus`.
    pub fn new(bus: Arc<EventBus>, node_id: String) -> BusSink {
        BusSink { bus, node_id, quiet: false, names: Arc::default() }
    }

    /// When `quiet`, text is not streamed (tool calls still are): for the second and
    /// later samples of an agent, whose text would interleave with the first's.
    pub fn quiet(self, quiet: bool) -> BusSink {
        BusSink { quiet, ..self }
    }

    /// Names the tools of `names` (model name to id) by their ids in events.
    pub fn naming(self, names: HashMap<String, String>) -> BusSink {
        if names.is_empty() {
            return self;
        }
        BusSink { names: Arc::new(names), ..self }
    }
}

#[async_trait]
impl StreamSink for BusSink {
    async fn text(&self, text: &str) {
        if self.quiet {
            return;
        }
        self.bus.emit(EventKind::TextDelta { node_id: self.node_id.clone(), text: text.to_string() }).await;
    }

    async fn tool_call(&self, tool: &str, arguments: Value) {
        let tool = self.names.get(tool).map_or(tool, String::as_str).to_string();
        self.bus.emit(EventKind::ToolCall { node_id: self.node_id.clone(), tool, arguments }).await;
    }
}
