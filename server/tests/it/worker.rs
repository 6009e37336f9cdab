//! Workers over the run queue, in-process with the memory store and the fake
//! provider: two workers share the queued runs (each runs exactly once), a cancel
//! asked through the queue stops a running run, and a run a worker cannot start
//! ends failed with the reason instead of being claimed again and again.

use conclave_core::{NewRun, ProviderRegistry, RunQueue, RunStore};
use conclave_doubles::{FakeProvider, FakeStep, MemoryStore};
use conclave_engine::{Engine, EngineConfig};
use conclave_server::worker::{Worker, WorkerConfig};
use conclave_shared::{AgentConfig, Conclave, Edge, Node, NodeKind, RunStatus, Settings};
use conclave_testkit::test_catalog;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

fn conclave() -> Conclave {
    let node = |id: &str, kind: NodeKind| Node {
        agent: (kind == NodeKind::Agent).then(|| AgentConfig::new("fake")),
        ..Node::new(id, kind)
    };
    Conclave {
        version: 1,
        id: "queued".into(),
        name: "Queued".into(),
        description: String::new(),
        settings: Settings::default(),
        nodes: vec![node("in", NodeKind::Trigger), node("a", NodeKind::Agent), node("out", NodeKind::Output)],
        edges: vec![
            Edge { from: "in".into(), to: "a".into(), case: None },
            Edge { from: "a".into(), to: "out".into(), case: None },
        ],
    }
}

/// Starts `n` workers on `queue` with `fake`; the token stops them.
fn workers(queue: &Arc<MemoryStore>, fake: &Arc<FakeProvider>, n: usize) -> CancellationToken {
    let shutdown = CancellationToken::new();
    for w in 0..n {
        let mut providers = ProviderRegistry::default();
        providers.register(fake.clone());
        let engine = Engine::new(providers, queue.clone(), EngineConfig::default());
        let config = WorkerConfig {
            id: format!("worker-{w}"),
            lease: Duration::from_millis(600),
            idle: Duration::from_millis(20),
            max_runs: 2,
        };
        let worker = Worker::new(queue.clone(), engine, test_catalog(), config);
        tokio::spawn(worker.work(shutdown.clone()));
    }
    shutdown
}

async fn enqueue(queue: &MemoryStore, id: &str, spec: Value) {
    let run =
        NewRun { id: id.into(), conclave: conclave(), input: json!({"n": id}), created_ms: 1, owner: "api".into() };
    queue.enqueue(&run, &spec).await.expect("enqueue");
}

/// Waits until `run_id` ends; its status.
async fn ended(queue: &MemoryStore, run_id: &str) -> RunStatus {
    for _ in 0..500 {
        let status = queue.get_run(run_id).await.expect("get").expect("run").summary.status;
        if status.is_terminal() {
            return status;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("run {run_id} did not end");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_run_every_queued_run_exactly_once() {
    let queue = Arc::new(MemoryStore::new());
    let fake = Arc::new(FakeProvider::new("fake"));
    fake.script("a", (0..8).map(|_| FakeStep::text("done").after(Duration::from_millis(30))));
    for i in 0..8 {
        enqueue(&queue, &format!("run-{i}"), json!({"kind": "run"})).await;
    }
    let shutdown = workers(&queue, &fake, 2);
    for i in 0..8 {
        assert_eq!(ended(&queue, &format!("run-{i}")).await, RunStatus::Succeeded);
    }
    shutdown.cancel();
    assert_eq!(fake.calls_for("a").len(), 8, "each queued run ran once");
    let mut inputs: Vec<String> = fake.calls_for("a").iter().map(|c| c.input["input"]["n"].to_string()).collect();
    inputs.sort();
    inputs.dedup();
    assert_eq!(inputs.len(), 8, "no run ran twice: {inputs:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_asked_through_the_queue_stops_the_run_on_its_worker() {
    let queue = Arc::new(MemoryStore::new());
    let fake = Arc::new(FakeProvider::new("fake"));
    fake.script("a", [FakeStep::text("too late").after(Duration::from_secs(30))]);
    enqueue(&queue, "slow", json!({"kind": "run"})).await;
    let shutdown = workers(&queue, &fake, 1);
    while fake.calls_for("a").is_empty() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        queue.request_cancel("slow", conclave_core::now_ms()).await.expect("cancel"),
        conclave_core::Cancel::Requested
    );
    assert_eq!(ended(&queue, "slow").await, RunStatus::Cancelled, "stopped at the worker's next renewal");
    shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_cannot_start_ends_failed_with_the_reason() {
    let queue = Arc::new(MemoryStore::new());
    let fake = Arc::new(FakeProvider::new("fake"));
    enqueue(&queue, "odd", json!({"kind": "no-such-kind"})).await;
    enqueue(&queue, "no-change", json!({"kind": "review"})).await;
    let shutdown = workers(&queue, &fake, 1);
    for (run, says) in
        [("odd", "the run's queue entry is unreadable"), ("no-change", "the run's input is not a review's change")]
    {
        assert_eq!(ended(&queue, run).await, RunStatus::Failed);
        let error = queue.get_run(run).await.expect("get").expect("run").summary.error.unwrap_or_default();
        assert!(error.contains(says), "{run}: {error}");
    }
    shutdown.cancel();
    assert!(fake.calls().is_empty(), "nothing ran");
}
