//! A run's event stream over SSE when its log is long: every event arrives once, in
//! order, whether read from the start or resumed, and the store is read a page at a
//! time, never the whole log.

use crate::api::{api_on, sse_events};
use axum::http::StatusCode;
use conclave_core::{NewRun, RunStore, owner_token};
use conclave_doubles::conformance::sample_conclave;
use conclave_doubles::{FakeProvider, MemoryStore};
use conclave_engine::EngineConfig;
use conclave_server::api::events::EVENT_PAGE;
use conclave_shared::{EventKind, RunEvent, RunStatus};
use conclave_testkit::RecordingStore;
use serde_json::json;
use std::sync::Arc;

/// Events in the log before `run_finished`: many pages' worth.
const EVENTS: u64 = 3000;

/// Stores run `id` with [`EVENTS`] text deltas, in blocks of 7 as a busy bus writes
/// them (so pages end inside blocks), then its end.
async fn long_run(store: &RecordingStore, id: &str) {
    let run =
        NewRun { id: id.into(), conclave: sample_conclave(), input: json!({}), created_ms: 1, owner: owner_token() };
    store.create_run(&run).await.expect("create_run");
    let delta = |seq: u64| RunEvent {
        run_id: id.into(),
        seq,
        at_ms: seq,
        kind: EventKind::TextDelta { node_id: "a".into(), text: format!("piece {seq}") },
    };
    let seqs: Vec<u64> = (1..=EVENTS).collect();
    for block in seqs.chunks(7) {
        store.append_events(&block.iter().map(|&s| delta(s)).collect::<Vec<_>>()).await.expect("append");
    }
    let end = EventKind::RunFinished { status: RunStatus::Succeeded, failed_node: None, error: None };
    store.append_event(&RunEvent { run_id: id.into(), seq: EVENTS + 1, at_ms: 0, kind: end }).await.expect("append");
}

#[tokio::test]
async fn a_long_log_streams_every_event_once_in_order_a_page_at_a_time() {
    let store = Arc::new(RecordingStore::new(Arc::new(MemoryStore::new())));
    let api = api_on(None, Arc::new(FakeProvider::new("fake")), EngineConfig::default(), store.clone());
    long_run(&store, "long").await;
    store.take_reads();

    let (status, _, text) = api.get("/api/runs/long/events").await;
    assert_eq!(status, StatusCode::OK);
    let seqs: Vec<u64> = sse_events(&text).iter().map(|e| e.0).collect();
    assert_eq!(seqs, (1..=EVENTS + 1).collect::<Vec<_>>(), "every event once, in order, from the start");
    let reads = store.take_reads();
    assert!(reads.iter().all(|r| r.method != "events" && r.method != "get_run"), "the whole log was read: {reads:?}");
    let pages = reads.iter().filter(|r| r.method == "events_page").count();
    assert!(pages as u64 > EVENTS / EVENT_PAGE as u64, "read in pages: {reads:?}");
    assert!(reads.iter().all(|r| r.limit.is_none_or(|l| l <= EVENT_PAGE)), "no page over {EVENT_PAGE}: {reads:?}");

    let (_, _, resumed) = api.call("GET", "/api/runs/long/events", None, &[("last-event-id", "1234")]).await;
    let seqs: Vec<u64> = sse_events(&resumed).iter().map(|e| e.0).collect();
    assert_eq!(seqs, (1235..=EVENTS + 1).collect::<Vec<_>>(), "every event after Last-Event-ID once, in order");
    let (status, _, _) = api.get("/api/runs/nope/events").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}
