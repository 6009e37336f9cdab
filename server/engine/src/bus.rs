//! The event bus of one run: numbers events, stores each one, then publishes it.
//!
//! Storing happens before publishing, so anything a subscriber saw is already durable,
//! and sequence numbers in the store and on the wire are the same.
//!
//! **Invariant:** an event is published only after `RunStore::append_event` returned,
//! and a store returns from it only once the event is committed (the SQLite store
//! replies after its writer thread's commit), so no subscriber sees an event that is
//! not in the store.

use async_trait::async_trait;
use conclave_core::{RunStore, StreamSink, now_ms};
use conclave_shared::{EventKind, RunEvent};
use serde_json::Value;
use std::sync::{Arc, Mutex};
use tokio::sync::broadcast;

/// Events buffered per subscriber before a slow one starts missing them; a subscriber
/// that lags can catch up from the store.
const SUBSCRIBER_BUFFER: usize = 4096;

/// Numbers, stores and publishes one run's events.
#[derive(Debug)]
pub struct EventBus {
    run_id: String,
    store: Arc<dyn RunStore>,
    seq: tokio::sync::Mutex<u64>,
    tx: broadcast::Sender<RunEvent>,
    store_error: Mutex<Option<String>>,
}

impl EventBus {
    /// A bus for `run_id` writing to `store`.
    pub fn new(run_id: String, store: Arc<dyn RunStore>) -> EventBus {
        let (tx, _) = broadcast::channel(SUBSCRIBER_BUFFER);
        EventBus { run_id, store, seq: tokio::sync::Mutex::new(0), tx, store_error: Mutex::new(None) }
    }

    /// A bus for a run taken up again, whose last stored event was `last_seq`.
    pub fn resuming(run_id: String, store: Arc<dyn RunStore>, last_seq: u64) -> EventBus {
        let bus = EventBus::new(run_id, store);
        EventBus { seq: tokio::sync::Mutex::new(last_seq), ..bus }
    }

    /// The run.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// A receiver of every event published from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<RunEvent> {
        self.tx.subscribe()
    }

    /// Emits one event. A store failure is remembered (the run will fail with it) and
    /// the event is still published, so watchers see what happened.
    pub async fn emit(&self, kind: EventKind) {
        let mut seq = self.seq.lock().await;
        *seq += 1;
        let event = RunEvent { run_id: self.run_id.clone(), seq: *seq, at_ms: now_ms(), kind };
        if let Err(err) = self.store.append_event(&event).await {
            crate::observe::store_failed("append_event");
            tracing::error!(run_id = %self.run_id, seq = event.seq, "could not store event: {err}");
            let mut slot = self.store_error.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            slot.get_or_insert_with(|| err.to_string());
        } else {
            crate::observe::event_written();
        }
        // No subscribers is fine: the event is in the store.
        let _ = self.tx.send(event);
    }

    /// The first store failure, if any.
    pub fn store_error(&self) -> Option<String> {
        self.store_error.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }
}

/// Streams one node's text and tool calls onto a run's bus as events.
#[derive(Debug, Clone)]
pub struct BusSink {
    bus: Arc<EventBus>,
    node_id: String,
    quiet: bool,
}

impl BusSink {
    /// A sink for `node_id` on `bus`.
    pub fn new(bus: Arc<EventBus>, node_id: String) -> BusSink {
        BusSink { bus, node_id, quiet: false }
    }

    /// When `quiet`, text is not streamed (tool calls still are): for the second and
    /// later samples of an agent, whose text would interleave with the first's.
    pub fn quiet(self, quiet: bool) -> BusSink {
        BusSink { quiet, ..self }
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
        self.bus.emit(EventKind::ToolCall { node_id: self.node_id.clone(), tool: tool.to_string(), arguments }).await;
    }
}
