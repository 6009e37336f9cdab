//! Resuming a run its process left running (a worker that died): the nodes that had
//! succeeded keep their outputs and are not called again, the others run, and the
//! events continue after the last stored one, with no gap and no repeat.

use conclave_core::{NewRun, RunStore};
use conclave_doubles::{FakeProvider, FakeStep, MemoryStore};
use conclave_engine::{EngineConfig, RunOptions, StartError};
use conclave_shared::{EventKind, NodeOutput, RunEvent, RunStatus, Usage};
use conclave_testkit::checked;
use serde_json::json;
use std::sync::Arc;

use crate::engine::{engine_with, graph};

/// Stores what a worker that died after `a` completed and `b` started leaves behind.
async fn crashed_run(store: &MemoryStore) -> String {
    let conclave = graph(&["t:t", "a:a", "b:a", "o:o"], &["t>a", "a>b", "b>o"]);
    let run_id = "run-crashed".to_string();
    let new_run = NewRun {
        id: run_id.clone(),
        conclave,
        input: json!({"text": "the change"}),
        created_ms: 1,
        owner: "gone".into(),
    };
    store.create_run(&new_run).await.expect("create");
    let done = |node: &str, text: &str| EventKind::NodeCompleted {
        node_id: node.into(),
        output: NodeOutput::Text(text.into()),
        usage: Usage::default(),
        duration_ms: 5,
    };
    let kinds = [
        EventKind::RunStarted { conclave_id: "test".into(), node_count: 4 },
        EventKind::NodeStarted { node_id: "t".into(), input: None },
        done("t", "the change"),
        EventKind::NodeStarted { node_id: "a".into(), input: Some("the change".into()) },
        done("a", "a's answer"),
        EventKind::NodeStarted { node_id: "b".into(), input: Some("a's answer".into()) },
    ];
    for (seq, kind) in kinds.into_iter().enumerate() {
        let event = RunEvent { run_id: run_id.clone(), seq: seq as u64 + 1, at_ms: 10 + seq as u64, kind };
        store.append_event(&event).await.expect("append");
    }
    run_id
}

#[tokio::test]
async fn a_resumed_run_keeps_what_succeeded_and_runs_the_rest() {
    let store = Arc::new(MemoryStore::new());
    let run_id = crashed_run(&store).await;
    let fake = Arc::new(FakeProvider::new("fake"));
    fake.script("a", [FakeStep::text("must not run again")]);
    fake.script("b", [FakeStep::text("b's answer")]);
    let engine = engine_with(fake.clone(), store.clone(), EngineConfig::default());
    let conclave = checked(graph(&["t:t", "a:a", "b:a", "o:o"], &["t>a", "a>b", "b>o"]));
    let handle = engine.resume(conclave, &run_id, RunOptions::default()).await.expect("resumes");
    let outcome = handle.wait().await;
    assert_eq!(outcome.status, RunStatus::Succeeded, "{:?}", outcome.error);
    assert!(fake.calls_for("a").is_empty(), "a had succeeded: its output is kept, not asked again");
    assert_eq!(fake.calls_for("b").len(), 1);
    assert_eq!(outcome.outputs["a"], NodeOutput::Text("a's answer".into()));
    assert_eq!(outcome.result, json!({"b": "b's answer"}));

    let events = store.events(&run_id, 0).await.expect("events");
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>(), "no gap and no repeat");
    assert_eq!(events[6].kind, EventKind::RunResumed { kept: vec!["t".into(), "a".into()] });
    let started: Vec<&str> = events[6..]
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::NodeStarted { node_id, .. } => Some(node_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(started, ["b", "o"], "only the unfinished nodes start again");
    let record = store.get_run(&run_id).await.expect("get").expect("run");
    assert_eq!(record.summary.status, RunStatus::Succeeded);
}

#[tokio::test]
async fn only_a_running_run_of_the_same_conclave_is_resumed() {
    let store = Arc::new(MemoryStore::new());
    let run_id = crashed_run(&store).await;
    let engine = engine_with(Arc::new(FakeProvider::new("fake")), store.clone(), EngineConfig::default());
    let mut other = graph(&["t:t", "a:a"], &["t>a"]);
    other.id = "other".into();
    let other = checked(other);
    let error = engine.resume(other, &run_id, RunOptions::default()).await.expect_err("another conclave");
    assert!(error.to_string().contains("it is a run of `test`, not `other`"), "{error}");
    let unknown = checked(graph(&["t:t"], &[]));
    let error = engine.resume(unknown, "no-such-run", RunOptions::default()).await.expect_err("unknown run");
    assert!(matches!(error, StartError::CannotResume { .. }), "{error:?}");

    let fake = Arc::new(FakeProvider::new("fake"));
    fake.script("b", [FakeStep::text("b's answer")]);
    let engine = engine_with(fake, store.clone(), EngineConfig::default());
    let conclave = || checked(graph(&["t:t", "a:a", "b:a", "o:o"], &["t>a", "a>b", "b>o"]));
    let handle = engine.resume(conclave(), &run_id, RunOptions::default()).await.expect("resumes");
    assert_eq!(handle.wait().await.status, RunStatus::Succeeded);
    let error = engine.resume(conclave(), &run_id, RunOptions::default()).await.expect_err("ended");
    assert!(error.to_string().contains("it ended `succeeded`"), "{error}");
}

#[tokio::test]
async fn a_claimed_run_starts_fresh_and_an_abandoned_one_is_finished_by_the_next_worker() {
    use conclave_core::RunQueue;
    use std::time::Duration;
    let store = Arc::new(MemoryStore::new());
    let conclave = || graph(&["t:t", "a:a", "b:a", "o:o"], &["t>a", "a>b", "b>o"]);
    let new_run = NewRun {
        id: "queued".into(),
        conclave: conclave(),
        input: json!({"text": "x"}),
        created_ms: 1,
        owner: "api".into(),
    };
    store.enqueue(&new_run, &json!({"kind": "run"})).await.expect("enqueue");
    store.claim("w1", 10, 60_000).await.expect("claim").expect("the run");

    // The first worker starts it, gets through `a`, and dies while `b` runs.
    let fake = Arc::new(FakeProvider::new("fake"));
    fake.script("a", [FakeStep::text("a's answer")]);
    fake.script("b", [FakeStep::text("never seen").after(Duration::from_secs(60))]);
    let first = engine_with(fake.clone(), store.clone(), EngineConfig::default());
    let mut handle = first.resume(checked(conclave()), "queued", RunOptions::default()).await.expect("starts");
    let mut events = handle.take_events().expect("events");
    while let Ok(event) = events.recv().await {
        if matches!(&event.kind, EventKind::NodeStarted { node_id, .. } if node_id == "b") {
            break;
        }
    }
    handle.abandon();
    let stored = store.events("queued", 0).await.expect("events");
    assert!(matches!(stored[0].kind, EventKind::RunStarted { .. }), "a claimed run with no events starts fresh");
    assert!(!stored.iter().any(|e| matches!(e.kind, EventKind::RunFinished { .. })), "abandoning writes no end");

    // The next worker finishes it.
    let fake = Arc::new(FakeProvider::new("fake"));
    fake.script("b", [FakeStep::text("b's answer")]);
    let second = engine_with(fake.clone(), store.clone(), EngineConfig::default());
    let outcome =
        second.resume(checked(conclave()), "queued", RunOptions::default()).await.expect("resumes").wait().await;
    assert_eq!(outcome.status, RunStatus::Succeeded, "{:?}", outcome.error);
    assert!(fake.calls_for("a").is_empty());
    let stored = store.events("queued", 0).await.expect("events");
    let seqs: Vec<u64> = stored.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>(), "no event lost or repeated across the two workers");
}
