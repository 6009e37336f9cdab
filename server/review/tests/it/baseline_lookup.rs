//! Finding a baseline, the latest stored review of a branch, asks the store once,
//! however many runs it holds: no run is read to find it.

use conclave_core::{NewRun, RunStore};
use conclave_doubles::MemoryStore;
use conclave_doubles::conformance::sample_conclave;
use conclave_review::diff::{Change, Head};
use conclave_review::pipeline::latest_review_of;
use conclave_shared::{EventKind, RunEvent, RunStatus};
use conclave_testkit::{Read, RecordingStore};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Stores a finished review of `branch` in `root`, as the pipeline records one.
async fn review(store: &RecordingStore, id: &str, created_ms: u64, root: &Path, branch: &str, status: RunStatus) {
    let head = Head { branch: Some(branch.into()), commit: Some("c0ffee".into()) };
    let change = Change {
        root: root.into(),
        base: Some("main".into()),
        files: vec![],
        annotated: String::new(),
        omitted: vec![],
        parts: vec![],
        left_out: vec![],
        head,
        impact: None,
    };
    let run = NewRun {
        id: id.into(),
        conclave: sample_conclave(),
        input: change.run_input(),
        created_ms,
        owner: "me".into(),
    };
    store.create_run(&run).await.expect("create_run");
    let end = EventKind::RunFinished { status, failed_node: None, error: None };
    store.append_event(&RunEvent { run_id: id.into(), seq: 1, at_ms: created_ms, kind: end }).await.expect("append");
}

#[tokio::test]
async fn the_latest_review_of_a_branch_among_a_thousand_runs_is_one_store_read() {
    let store = RecordingStore::new(Arc::new(MemoryStore::new()));
    let (root, other) = (PathBuf::from("/srv/repo"), PathBuf::from("/srv/other"));
    for i in 0..1000u64 {
        let repo = if i % 2 == 0 { &root } else { &other };
        let status = if i % 5 == 0 { RunStatus::Failed } else { RunStatus::Succeeded };
        review(&store, &format!("run-{i:04}"), i, repo, "main", status).await;
    }
    // Newer, but failed, or of another branch.
    review(&store, "newest-failed", 5000, &root, "main", RunStatus::Failed).await;
    review(&store, "feature", 6000, &root, "feature", RunStatus::Succeeded).await;
    store.take_reads();
    let found = latest_review_of(&store, &root, "origin/main").await.expect("latest_review_of");
    assert_eq!(found.as_deref(), Some("run-0998"), "the newest succeeded review of main in /srv/repo");
    assert_eq!(store.take_reads(), [Read { method: "latest_review", limit: None }], "one read, and no run read");
    let feature = latest_review_of(&store, &root, "refs/heads/feature").await.expect("latest_review_of");
    assert_eq!(feature.as_deref(), Some("feature"));
    assert_eq!(latest_review_of(&store, &root, "origin/none").await.expect("latest_review_of"), None);
}
