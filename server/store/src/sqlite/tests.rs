//! The SQLite store's own tests: the conformance suite, and what the writer thread
//! promises beyond it (group commit, failures confined to their write, a free async
//! runtime, durability on return, several stores on one file).

use super::*;
use conclave_doubles::conformance::{review_of_b, run_all, sample_conclave, stored_pull_request, thousand_reviews};
use conclave_shared::{EventKind, NodeState};
use serde_json::json;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

#[tokio::test]
async fn sqlite_store_conforms() {
    let dir = tempfile::tempdir().expect("tempdir");
    let counter = AtomicUsize::new(0);
    run_all(&|| {
        let n = counter.fetch_add(1, Ordering::SeqCst);
        Arc::new(SqliteStore::open(&dir.path().join(format!("store-{n}.db"))).expect("open"))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_queue_conforms() {
    let dir = tempfile::tempdir().expect("tempdir");
    let counter = AtomicUsize::new(0);
    conclave_doubles::queue::run_all(&|| {
        let n = counter.fetch_add(1, Ordering::SeqCst);
        Arc::new(SqliteStore::open(&dir.path().join(format!("queue-{n}.db"))).expect("open"))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_stores_on_one_file_never_claim_the_same_run() {
    use conclave_core::RunQueue;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("shared.db");
    let (a, b) = (Arc::new(SqliteStore::open(&path).expect("open")), Arc::new(SqliteStore::open(&path).expect("open")));
    for i in 0..30 {
        let run = NewRun { created_ms: i, ..new_run(&format!("run-{i:02}")) };
        a.enqueue(&run, &json!({"kind": "run"})).await.expect("enqueue");
    }
    let claim_all = |store: Arc<SqliteStore>, worker: &'static str| {
        tokio::spawn(async move {
            let mut mine = Vec::new();
            while let Some(job) = store.claim(worker, 100, 60_000).await.expect("claim") {
                mine.push(job.run_id);
            }
            mine
        })
    };
    let (left, right) = (claim_all(a, "left"), claim_all(b, "right"));
    let (left, right) = (left.await.expect("left"), right.await.expect("right"));
    let mut all: Vec<String> = left.iter().chain(&right).cloned().collect();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 30, "every run claimed once across the two stores: {left:?} {right:?}");
    assert_eq!(left.len() + right.len(), 30, "and no run twice");
}

fn new_run(id: &str) -> NewRun {
    NewRun { id: id.into(), conclave: sample_conclave(), input: json!({}), created_ms: 1, owner: "me".into() }
}

fn started(run_id: &str, seq: u64, node_id: &str) -> RunEvent {
    RunEvent {
        run_id: run_id.into(),
        seq,
        at_ms: 1000 + seq,
        kind: EventKind::NodeStarted { node_id: node_id.into(), input: None },
    }
}

fn delta(run_id: &str, seq: u64, text: &str) -> RunEvent {
    RunEvent {
        run_id: run_id.into(),
        seq,
        at_ms: 1000 + seq,
        kind: EventKind::TextDelta { node_id: "a".into(), text: text.into() },
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_appenders_land_in_order_and_share_commits() {
    const RUNS: usize = 50;
    const EVENTS: u64 = 100;
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(SqliteStore::open(&dir.path().join("runs.db")).expect("open"));
    for r in 0..RUNS {
        store.create_run(&new_run(&format!("r{r}"))).await.expect("create_run");
    }
    let before = store.commits();
    let tasks: Vec<_> = (0..RUNS)
        .map(|r| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                for seq in 1..=EVENTS {
                    store.append_event(&delta(&format!("r{r}"), seq, &format!("{r}:{seq}"))).await.expect("append");
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("appender");
    }
    for r in 0..RUNS {
        let events = store.events(&format!("r{r}"), 0).await.expect("events");
        let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, (1..=EVENTS).collect::<Vec<_>>(), "run r{r} has every event, in order");
        assert_eq!(events[41].kind, delta("", 42, &format!("{r}:42")).kind, "payloads are not mixed up");
    }
    let commits = store.commits() - before;
    let appended = RUNS as u64 * EVENTS;
    assert!(commits < appended, "{appended} concurrent appends took {commits} commits: the writer did not group them");
}

/// One batch holding good writes and three bad ones (out of order, unknown run,
/// duplicate run): the bad ones fail alone, with their own errors; the rest commit.
#[tokio::test(flavor = "current_thread")]
async fn a_failing_write_fails_alone_in_its_batch() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SqliteStore::open(&dir.path().join("runs.db")).expect("open");
    store.create_run(&new_run("r1")).await.expect("create_run");
    store.append_event(&started("r1", 1, "in")).await.expect("append");
    let before = store.commits();

    // Hold the writer inside a batch until every write below is queued behind it, so
    // they are all taken into the next batch together.
    let (entered, writer_busy) = tokio::sync::oneshot::channel();
    let (release, hold) = std::sync::mpsc::channel::<()>();
    let mut blocker = std::pin::pin!(store.writer.submit(move |_| {
        let _ = entered.send(());
        let _ = hold.recv();
        Ok(())
    }));
    assert!(futures::poll!(&mut blocker).is_pending());
    writer_busy.await.expect("the writer took the blocking write");

    let writes = [started("r1", 2, "a"), started("r1", 2, "b"), started("ghost", 1, "a"), started("r1", 3, "b")];
    let again = new_run("r1");
    let mut good = std::pin::pin!(store.append_event(&writes[0]));
    let mut stale = std::pin::pin!(store.append_event(&writes[1]));
    let mut ghost = std::pin::pin!(store.append_event(&writes[2]));
    let mut duplicate = std::pin::pin!(store.create_run(&again));
    let mut after = std::pin::pin!(store.append_event(&writes[3]));
    let mut report = std::pin::pin!(store.put_report("r1", "markdown", "# ok"));
    // Polling once queues each write, in this order.
    assert!(futures::poll!(&mut good).is_pending());
    assert!(futures::poll!(&mut stale).is_pending());
    assert!(futures::poll!(&mut ghost).is_pending());
    assert!(futures::poll!(&mut duplicate).is_pending());
    assert!(futures::poll!(&mut after).is_pending());
    assert!(futures::poll!(&mut report).is_pending());
    release.send(()).expect("release the writer");
    blocker.await.expect("the blocking write");

    good.await.expect("the write before the failures commits");
    let stale = stale.await;
    assert!(matches!(&stale, Err(StoreError::OutOfOrder { run_id, seq: 2, last: 2 }) if run_id == "r1"), "{stale:?}");
    assert!(matches!(ghost.await, Err(StoreError::UnknownRun(id)) if id == "ghost"));
    let duplicate = duplicate.await;
    assert!(
        matches!(&duplicate, Err(StoreError::Backend(m)) if m.contains("UNIQUE constraint failed: runs.id")),
        "{duplicate:?}"
    );
    after.await.expect("the write after the failures commits");
    report.await.expect("the report commits");
    assert_eq!(store.commits() - before, 2, "one commit for the blocking write, one for the whole batch");

    let events = store.events("r1", 0).await.expect("events");
    assert_eq!(events.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![1, 2, 3]);
    let run = store.get_run("r1").await.expect("get").expect("exists");
    let states: Vec<NodeState> = run.nodes.iter().map(|n| n.state).collect();
    assert_eq!(states, vec![NodeState::Running; 3], "b started by seq 3, not by the refused seq 2");
    assert_eq!(run.summary.created_ms, 1, "the duplicate left the first run intact");
    assert_eq!(store.get_report("r1", "markdown").await.expect("report").as_deref(), Some("# ok"));
}

/// On a runtime with one thread, another task keeps running while a write is in
/// flight: the write does not hold the thread. (A store writing on the caller's
/// thread would finish each write inside one poll, and the ticker would never see
/// one in flight.)
#[tokio::test(flavor = "current_thread")]
async fn writes_do_not_block_the_async_runtime() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SqliteStore::open(&dir.path().join("runs.db")).expect("open");
    store.create_run(&new_run("r1")).await.expect("create_run");
    let writing = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let ticks_while_writing = Arc::new(AtomicU64::new(0));
    let ticker = tokio::spawn({
        let (writing, stop, ticks) = (Arc::clone(&writing), Arc::clone(&stop), Arc::clone(&ticks_while_writing));
        async move {
            while !stop.load(Ordering::SeqCst) {
                if writing.load(Ordering::SeqCst) {
                    ticks.fetch_add(1, Ordering::SeqCst);
                }
                tokio::task::yield_now().await;
            }
        }
    });
    tokio::task::yield_now().await;
    let large = "x".repeat(4 << 20);
    writing.store(true, Ordering::SeqCst);
    store.put_report("r1", "markdown", &large).await.expect("put_report");
    for seq in 1..=200 {
        store.append_event(&delta("r1", seq, &large[..1024])).await.expect("append");
    }
    writing.store(false, Ordering::SeqCst);
    stop.store(true, Ordering::SeqCst);
    ticker.await.expect("ticker");
    assert!(ticks_while_writing.load(Ordering::SeqCst) > 0, "the ticker never ran while writes were in flight");
    assert_eq!(store.events("r1", 0).await.expect("events").len(), 200);
}

#[tokio::test]
async fn an_appended_event_is_in_the_file_when_append_returns() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("runs.db");
    let store = SqliteStore::open(&path).expect("open");
    store.create_run(&new_run("r1")).await.expect("create_run");
    store.append_event(&started("r1", 1, "a")).await.expect("append");

    // A connection of its own, as another process would have, while the store is open.
    let other = rusqlite::Connection::open(&path).expect("open the file again");
    let stored: u64 = other
        .query_row("SELECT COUNT(*) FROM event_blocks WHERE run_id = 'r1' AND first_seq = 1", [], |r| r.get(0))
        .expect("count");
    assert_eq!(stored, 1, "the event is committed to the file");
    let reopened = SqliteStore::open(&path).expect("open a second store");
    let events = reopened.events("r1", 0).await.expect("events");
    assert_eq!(events, vec![started("r1", 1, "a")]);
}

/// A reader hears of each commit of this store's writer, once per run and batch,
/// after the events are in the file; it is told the notices cover this process only.
#[tokio::test]
async fn a_commit_through_this_store_is_noticed_after_it_lands() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SqliteStore::open(&dir.path().join("runs.db")).expect("open");
    assert!(!store.notices_from_every_process(), "another process's commits send no notice here");
    let mut notices = store.commit_notices().expect("SQLite notices its own commits");
    store.create_run(&new_run("r1")).await.expect("create_run");
    store.create_run(&new_run("r2")).await.expect("create_run");
    store.append_event(&started("r1", 1, "a")).await.expect("append");
    assert_eq!(notices.recv().await.expect("a notice"), "r1");
    assert_eq!(store.events("r1", 0).await.expect("events").len(), 1, "noticed once committed");
    let batch = [delta("r2", 1, "x"), delta("r2", 2, "y"), delta("r1", 2, "z")];
    store.append_events(&batch).await.expect("append");
    assert_eq!(notices.recv().await.expect("a notice"), "r2");
    assert_eq!(notices.recv().await.expect("a notice"), "r1");
    assert!(notices.try_recv().is_err(), "one notice per run of the batch");
}

/// Two stores on one file (as two processes have): both writer threads take the
/// file's write lock in turn, waiting for it instead of failing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_stores_on_one_file_both_write() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("runs.db");
    let stores = [Arc::new(SqliteStore::open(&path).expect("open")), Arc::new(SqliteStore::open(&path).expect("open"))];
    let tasks: Vec<_> = stores
        .iter()
        .enumerate()
        .map(|(i, store)| {
            let store = Arc::clone(store);
            tokio::spawn(async move {
                let run_id = format!("r{i}");
                store.create_run(&new_run(&run_id)).await.expect("create_run");
                for seq in 1..=200 {
                    store.append_event(&delta(&run_id, seq, "x")).await.expect("append");
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("writer task");
    }
    for (i, store) in stores.iter().enumerate() {
        let other = format!("r{}", 1 - i);
        assert_eq!(store.events(&other, 0).await.expect("events").len(), 200, "each store sees the other's run");
    }
}

#[tokio::test]
async fn runs_that_ended_with_a_row_per_node_keep_every_node_after_the_migration() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("version-7.db");
    let record = crate::ended_run::ended_run("old");
    {
        let conn = rusqlite::Connection::open(&path).expect("open");
        for sql in &schema::MIGRATIONS[..7] {
            conn.execute_batch(sql).expect("an earlier migration");
        }
        conn.execute_batch("PRAGMA user_version = 7").expect("version 7");
        conn.execute(
            "INSERT INTO runs (id, conclave_id, conclave_json, input_json, status, created_ms, finished_ms, owner) \
             VALUES ('old', 'sample', ?1, '{}', 'cancelled', 1, 9, 'me')",
            [serde_json::to_string(&record.conclave).expect("json")],
        )
        .expect("a version 7 run");
        // Stored out of order: the position, not the row order, orders the nodes.
        for (position, node) in record.nodes.iter().enumerate().rev() {
            let (output, usage) = crate::ended_run::json_columns(node);
            conn.execute(
                "INSERT INTO nodes (run_id, position, node_id, state, output_json, error, usage_json, input, \
                 attempts, started_ms, finished_ms, reused_from) VALUES ('old', ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, \
                 ?10, ?11)",
                rusqlite::params![
                    position,
                    node.node_id,
                    node.state.as_str(),
                    output,
                    node.error,
                    usage,
                    node.input,
                    node.attempts,
                    node.started_ms,
                    node.finished_ms,
                    node.reused_from
                ],
            )
            .expect("a version 7 node row");
        }
    }
    let store = SqliteStore::open(&path).expect("opening migrates to the latest version");
    let run = store.get_run("old").await.expect("get").expect("the old run");
    assert_eq!(run.summary.status, conclave_shared::RunStatus::Cancelled);
    assert_eq!(run.nodes, record.nodes, "every node as the row it had");
}

/// Finding the latest review among 1,000 runs is one statement, and SQLite answers it
/// from the `runs_reviews` index without scanning the runs.
#[tokio::test]
async fn the_latest_review_is_one_statement_on_its_index() {
    use rusqlite::trace::{TraceEvent, TraceEventCodes};
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("runs.db");
    let store = Arc::new(SqliteStore::open(&path).expect("open"));
    thousand_reviews(store.clone()).await;
    let mut conn = schema::open_reader(&path).expect("a read connection");
    let statements = Arc::new(Mutex::new(Vec::new()));
    let traced = Arc::clone(&statements);
    conn.trace_v2(
        TraceEventCodes::SQLITE_TRACE_STMT,
        Some(move |event: TraceEvent<'_>| {
            if let TraceEvent::Stmt(_, sql) = event {
                traced.lock().expect("lock").push(sql.to_string());
            }
        }),
    )
    .expect("trace");
    let found = read::latest_review(&conn, &review_of_b()).expect("latest_review");
    assert_eq!(found.as_deref(), Some("run-0994"), "the newest succeeded review of /srv/b among 1,000 runs");
    assert_eq!(statements.lock().expect("lock").len(), 1, "one statement: {:?}", statements.lock().expect("lock"));
    let plan: Vec<String> = conn
        .prepare(&format!("EXPLAIN QUERY PLAN {}", read::LATEST_REVIEW))
        .expect("explain")
        .query_map(rusqlite::params!["/srv/b", "[\"main\"]"], |row| row.get::<_, String>(3))
        .expect("plan")
        .collect::<Result<_, _>>()
        .expect("plan rows");
    assert!(plan.iter().any(|step| step.contains("USING INDEX runs_reviews")), "the index answers: {plan:?}");
    assert!(!plan.iter().any(|step| step.starts_with("SCAN runs")), "no scan of the runs: {plan:?}");
}

/// Reviews stored before the index existed (a version-8 file) are found after the
/// migration that adds it.
#[tokio::test]
async fn reviews_stored_before_the_index_are_found_after_the_migration() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("version-8.db");
    {
        let conn = rusqlite::Connection::open(&path).expect("open");
        for sql in &schema::MIGRATIONS[..8] {
            conn.execute_batch(sql).expect("an earlier migration");
        }
        conn.execute_batch("PRAGMA user_version = 8").expect("version 8");
        let conclave = serde_json::to_string(&sample_conclave()).expect("json");
        for (id, repo, status, created) in
            [("old", "/srv/b", "succeeded", 1), ("newer", "/srv/b", "succeeded", 2), ("failed", "/srv/b", "failed", 3)]
        {
            let input = conclave_doubles::conformance::review_input(repo, Some("main")).to_string();
            conn.execute(
                "INSERT INTO runs (id, conclave_id, conclave_json, input_json, status, created_ms, owner, nodes_json) \
                 VALUES (?1, 'sample', ?2, ?3, ?4, ?5, 'me', '[]')",
                rusqlite::params![id, conclave, input, status, created],
            )
            .expect("a version 8 run");
        }
    }
    let store = SqliteStore::open(&path).expect("opening migrates to the latest version");
    assert_eq!(store.latest_review(&review_of_b()).await.expect("latest_review").as_deref(), Some("newer"));
    let conn = rusqlite::Connection::open(&path).expect("open");
    let version: usize = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).expect("version");
    assert_eq!(version, schema::MIGRATIONS.len(), "migrated to the latest version");
}

/// The busy listing reads the `pull_requests_busy` index in its order: no scan of the
/// records and no sort, however many idle ones there are.
#[tokio::test]
async fn busy_pull_requests_are_read_in_order_from_their_index() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("runs.db");
    let store = SqliteStore::open(&path).expect("open");
    for number in 0..200u64 {
        let record = stored_pull_request(Forge::Github, "acme/app", number, 1000 - number);
        let record = if number % 10 == 0 { record } else { PullRequestReviews { run: None, ..record } };
        store.put_pull_request(&record).await.expect("put_pull_request");
    }
    let busy = store.busy_pull_requests(3).await.expect("busy_pull_requests");
    let numbers: Vec<u64> = busy.iter().map(|r| r.pull_request.number).collect();
    assert_eq!(numbers, vec![190, 180, 170], "the busy ones, least recently changed first");
    let conn = schema::open_reader(&path).expect("a read connection");
    let plan: Vec<String> = conn
        .prepare(&format!("EXPLAIN QUERY PLAN {}", pull_requests::busy_query()))
        .expect("explain")
        .query_map([3], |row| row.get::<_, String>(3))
        .expect("plan")
        .collect::<Result<_, _>>()
        .expect("plan rows");
    assert!(plan.iter().any(|step| step.contains("USING INDEX pull_requests_busy")), "the index answers: {plan:?}");
    assert!(!plan.iter().any(|step| step.contains("TEMP B-TREE")), "nothing is sorted: {plan:?}");
}

/// A record whose JSON does not read back is an error naming the request, in the
/// lookup and in the busy listing alike.
#[tokio::test]
async fn an_unreadable_pull_request_record_is_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("runs.db");
    let store = SqliteStore::open(&path).expect("open");
    store.put_pull_request(&stored_pull_request(Forge::Github, "acme/app", 7, 1)).await.expect("put_pull_request");
    let conn = rusqlite::Connection::open(&path).expect("open");
    conn.execute("UPDATE pull_requests SET record_json = '{\"run\": 1}'", []).expect("spoil the record");
    let expected = "run store error: the stored record of pull request acme/app number 7 on github is unreadable: ";
    let lookup = store.pull_request(Forge::Github, "acme/app", 7).await.expect_err("unreadable");
    assert!(lookup.to_string().starts_with(expected), "{lookup}");
    let listing = store.busy_pull_requests(10).await.expect_err("unreadable");
    assert!(listing.to_string().starts_with(expected), "{listing}");
}

/// Eight stores opening one fresh file at once (as eight processes do): one switches
/// it to WAL and migrates, the others wait for that instead of failing, each round.
#[test]
fn stores_opening_a_fresh_file_at_once_all_open_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    for round in 0..25 {
        let path = dir.path().join(format!("fresh-{round}.db"));
        let start = Arc::new(std::sync::Barrier::new(8));
        let openers: Vec<_> = (0..8)
            .map(|_| {
                let (path, start) = (path.clone(), Arc::clone(&start));
                std::thread::spawn(move || {
                    start.wait();
                    SqliteStore::open(&path).map(|_| ())
                })
            })
            .collect();
        for opener in openers {
            let opened = opener.join().expect("opener thread");
            assert!(opened.is_ok(), "round {round}: {opened:?}");
        }
    }
}
