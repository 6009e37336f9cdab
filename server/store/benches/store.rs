//! Append throughput of the SQLite store with 1 to 100 runs appending concurrently.
//!
//! Run with `cargo bench -p conclave-store --bench store`. Each run appends its events
//! one after another, as a run's event bus does; runs append concurrently, so the
//! writer thread can group their events into shared commits. Prints, per number of
//! runs, events per second and events per commit.

use conclave_core::{NewRun, RunStore};
use conclave_doubles::conformance::sample_conclave;
use conclave_shared::{EventKind, RunEvent};
use conclave_store::SqliteStore;
use std::sync::Arc;
use std::time::Instant;

/// Events appended in each measurement, spread over the runs.
const TOTAL_EVENTS: u64 = 20_000;

async fn measure(store: Arc<SqliteStore>, runs: u64, round: u64) -> f64 {
    for r in 0..runs {
        let run = NewRun {
            id: format!("{round}-{r}"),
            conclave: sample_conclave(),
            input: serde_json::Value::Null,
            created_ms: 1,
            owner: "bench".into(),
        };
        store.create_run(&run).await.expect("create_run");
    }
    let per_run = TOTAL_EVENTS / runs;
    let started = Instant::now();
    let tasks: Vec<_> = (0..runs)
        .map(|r| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                for seq in 1..=per_run {
                    let kind = EventKind::TextDelta { node_id: "a".into(), text: "a streamed piece of text".into() };
                    let event = RunEvent { run_id: format!("{round}-{r}"), seq, at_ms: seq, kind };
                    store.append_event(&event).await.expect("append");
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("appender");
    }
    (per_run * runs) as f64 / started.elapsed().as_secs_f64()
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let dir = tempfile::tempdir().expect("tempdir");
    println!("{:>5} {:>14} {:>17}", "runs", "events/s", "events/commit");
    for (round, runs) in [1u64, 10, 50, 100].into_iter().enumerate() {
        let store = Arc::new(SqliteStore::open(&dir.path().join(format!("bench-{runs}.db"))).expect("open"));
        let commits_before = store.commits() + runs; // each create_run commits on its own
        let rate = runtime.block_on(measure(Arc::clone(&store), runs, round as u64));
        let commits = (store.commits() - commits_before).max(1);
        let per_commit = (TOTAL_EVENTS / runs * runs) as f64 / commits as f64;
        println!("{runs:>5} {rate:>14.0} {per_commit:>17.1}");
    }
}
