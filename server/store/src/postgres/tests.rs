//! Tests of the PostgreSQL store against a real server: the conformance suite, batched
//! appends, a failing event inside a batch, concurrent migration, and the messages
//! for a bad URL or an unreachable server.
//!
//! They need `CONCLAVE_TEST_POSTGRES_URL` (set by `scripts/test.sh`); without it they
//! fail and say how to get a server, rather than pass without testing anything.

use super::migrations::MIGRATIONS;
use super::*;
use conclave_doubles::conformance::{review_of_b, run_all, sample_conclave, stored_pull_request, thousand_reviews};
use conclave_shared::{EventKind, NodeState, RunStatus};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

static DATABASES: AtomicUsize = AtomicUsize::new(0);

/// The server the tests use, as an admin URL (any database it can create others from).
fn admin_url() -> String {
    std::env::var("CONCLAVE_TEST_POSTGRES_URL").unwrap_or_else(|_| {
        panic!(
            "CONCLAVE_TEST_POSTGRES_URL is not set, so the PostgreSQL store cannot be tested: run the tests with \
             `bash scripts/test.sh`, or start a server with `bash scripts/postgres.sh start DIR` and export the \
             URL it prints as CONCLAVE_TEST_POSTGRES_URL"
        )
    })
}

/// `url` pointing at the database `name` instead.
fn with_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, format!("?{query}")),
        None => (url, String::new()),
    };
    let authority = base.find("://").map(|i| i + 3).unwrap_or(0);
    let path = base[authority..].find('/').map(|i| authority + i).unwrap_or(base.len());
    format!("{}/{name}{query}", &base[..path])
}

async fn admin_client(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, NoTls).await.expect("connect to the test server");
    tokio::spawn(connection);
    client
}

/// A new, empty database on the test server; returns its URL.
async fn fresh_database() -> String {
    let admin = admin_url();
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let name = format!(
        "conclave_test_{}_{}_{}",
        std::process::id(),
        nanos % 1_000_000_000,
        DATABASES.fetch_add(1, Ordering::SeqCst)
    );
    admin_client(&admin).await.batch_execute(&format!("CREATE DATABASE {name}")).await.expect("create database");
    with_database(&admin, &name)
}

async fn fresh_store() -> PostgresStore {
    PostgresStore::connect(&fresh_database().await).await.expect("connect to a fresh database")
}

fn new_run(id: &str) -> NewRun {
    NewRun {
        id: id.into(),
        conclave: sample_conclave(),
        input: json!({"text": "hi"}),
        created_ms: 1,
        owner: "me".into(),
    }
}

fn event(run_id: &str, seq: u64, kind: EventKind) -> RunEvent {
    RunEvent { run_id: run_id.into(), seq, at_ms: 1000 + seq, kind }
}

fn delta(run_id: &str, seq: u64) -> RunEvent {
    event(run_id, seq, EventKind::TextDelta { node_id: "a".into(), text: format!("piece {seq}") })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_store_conforms() {
    run_all(&|| {
        let store = tokio::task::block_in_place(|| tokio::runtime::Handle::current().block_on(fresh_store()));
        Arc::new(store)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_appends_all_land_in_order_in_fewer_commits() {
    const RUNS: usize = 16;
    const EVENTS: u64 = 40;
    let store = Arc::new(fresh_store().await);
    for r in 0..RUNS {
        store.create_run(&new_run(&format!("r{r}"))).await.expect("create_run");
    }
    let before = store.event_commits();
    let mut tasks = Vec::new();
    for r in 0..RUNS {
        let store = Arc::clone(&store);
        tasks.push(tokio::spawn(async move {
            let id = format!("r{r}");
            for seq in 1..=EVENTS {
                let next = if seq == EVENTS {
                    event(
                        &id,
                        seq,
                        EventKind::RunFinished { status: RunStatus::Succeeded, failed_node: None, error: None },
                    )
                } else {
                    delta(&id, seq)
                };
                store.append_event(&next).await.expect("append");
                let again = store.append_event(&delta(&id, seq)).await;
                assert!(matches!(again, Err(StoreError::OutOfOrder { .. })), "a repeated seq is refused: {again:?}");
            }
        }));
    }
    for task in tasks {
        task.await.expect("appender task");
    }
    for r in 0..RUNS {
        let id = format!("r{r}");
        let seqs: Vec<u64> = store.events(&id, 0).await.expect("events").iter().map(|e| e.seq).collect();
        assert_eq!(seqs, (1..=EVENTS).collect::<Vec<_>>(), "every event of {id} stored once, in order");
        let run = store.get_run(&id).await.expect("get_run").expect("run exists");
        assert_eq!(run.summary.status, RunStatus::Succeeded, "the last event of {id} updated its run");
    }
    let commits = store.event_commits() - before;
    let appends = (RUNS as u64) * EVENTS * 2;
    assert!(commits < appends / 2, "{appends} concurrent appends took {commits} commits: they were not batched");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_event_in_a_batch_rolls_back_only_itself() {
    let store = fresh_store().await;
    for id in ["r1", "r2"] {
        store.create_run(&new_run(id)).await.expect("create_run");
    }
    // PostgreSQL cannot store a NUL character in TEXT: this run end's update of the
    // run row fails (the event itself is stored as JSON, which escapes it).
    let error = Some("nul \0 here".to_string());
    let bad = event("r1", 1, EventKind::RunFinished { status: RunStatus::Failed, failed_node: None, error });
    let good = event("r1", 2, EventKind::NodeStarted { node_id: "b".into(), input: Some("fine".into()) });
    let other = delta("r2", 1);
    let late = delta("r2", 1);
    let mut client = store.pool.get().await.expect("connection");
    let mut tx = client.transaction().await.expect("transaction");
    let results = writer::append_locked(&mut tx, &[&bad, &good, &other, &late], None).await.expect("the batch commits");
    tx.commit().await.expect("commit");
    assert!(matches!(&results[0], Err(StoreError::Backend(m)) if m.contains("0x00")), "{:?}", results[0]);
    assert!(results[1].is_ok() && results[2].is_ok(), "the others are stored: {results:?}");
    assert!(matches!(results[3], Err(StoreError::OutOfOrder { seq: 1, last: 1, .. })), "{:?}", results[3]);
    let r1 = store.get_run("r1").await.expect("get").expect("exists");
    assert_eq!(store.events("r1", 0).await.expect("events").iter().map(|e| e.seq).collect::<Vec<_>>(), vec![2]);
    assert_eq!(r1.summary.status, RunStatus::Running, "the failed end left no trace");
    assert_eq!((r1.nodes[1].state, r1.nodes[2].state), (NodeState::Queued, NodeState::Running), "b started");
    assert_eq!(r1.nodes[2].input.as_deref(), Some("fine"));
    assert_eq!(store.events("r2", 0).await.expect("events").len(), 1);
    let r3 = store.append_event(&delta("r1", 3)).await;
    assert!(r3.is_ok(), "the run goes on after the failed event: {r3:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_starting_at_once_on_a_fresh_database_all_migrate_it() {
    let url = fresh_database().await;
    let (a, b, c) =
        tokio::join!(PostgresStore::connect(&url), PostgresStore::connect(&url), PostgresStore::connect(&url));
    for store in [a, b, c] {
        store.expect("every concurrent connect succeeds");
    }
    let rows = admin_client(&url).await.query("SELECT version FROM conclave_migrations ORDER BY version", &[]).await;
    let versions: Vec<i32> = rows.expect("migrations table").iter().map(|r| r.get(0)).collect();
    assert_eq!(versions, (1..=MIGRATIONS.len() as i32).collect::<Vec<_>>(), "each migration applied once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_migrated_by_a_newer_conclave_is_refused() {
    let url = fresh_database().await;
    drop(PostgresStore::connect(&url).await.expect("first connect"));
    admin_client(&url)
        .await
        .execute("INSERT INTO conclave_migrations (version) VALUES (999)", &[])
        .await
        .expect("insert");
    let err = PostgresStore::connect(&url).await.expect_err("a newer schema is refused").to_string();
    let expected = format!("(schema version 999, this one knows {}); upgrade Conclave", MIGRATIONS.len());
    assert!(err.contains("was migrated by a newer Conclave") && err.contains(&expected), "{err}");
}

#[tokio::test]
async fn an_unreachable_server_is_named_without_the_password() {
    let err = PostgresStore::connect("postgres://me:hunter2@127.0.0.1:1/runs").await.expect_err("nothing listens");
    let err = err.to_string();
    assert!(err.contains("cannot connect to PostgreSQL at 127.0.0.1:1 (database `runs`, user `me`)"), "{err}");
    assert!(err.contains("check that the server is running"), "{err}");
    assert!(!err.contains("hunter2"), "the password leaked: {err}");
}

#[tokio::test]
async fn a_bad_url_is_explained_without_the_password() {
    let err = PostgresStore::connect("postgresql://me:hunter2@db.internal:notaport/runs").await.expect_err("bad port");
    let err = err.to_string();
    assert!(err.contains("the PostgreSQL URL postgresql://[redacted]@db.internal:notaport/runs is not valid"), "{err}");
    assert!(err.contains("write it as postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE"), "{err}");
    assert!(!err.contains("hunter2"), "the password leaked: {err}");
}

#[test]
fn urls_lose_their_credentials() {
    let redact_url = |url| mask_url_credentials(url, REDACTED);
    assert_eq!(
        redact_url("postgres://u:p%40ss@h:5/db?sslmode=disable"),
        "postgres://[redacted]@h:5/db?sslmode=disable"
    );
    assert_eq!(redact_url("postgres://u@h/db?password=x&a=b"), "postgres://[redacted]@h/db?password=[redacted]&a=b");
    assert_eq!(redact_url("postgresql://h"), "postgresql://h");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_queue_conforms() {
    conclave_doubles::queue::run_all(&|| {
        let store = tokio::task::block_in_place(|| tokio::runtime::Handle::current().block_on(fresh_store()));
        Arc::new(store)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_hears_of_events_another_server_commits() {
    let url = fresh_database().await;
    let (writer, reader) = (fresh_connect(&url).await, fresh_connect(&url).await);
    let mut notices = reader.commit_notices().expect("PostgreSQL pushes notices");
    writer.create_run(&new_run("shared")).await.expect("create_run");
    // The listener connects in the background: append until it hears, at most a while.
    for seq in 1..=50u64 {
        writer.append_event(&delta("shared", seq)).await.expect("append");
        if let Ok(Ok(run_id)) = tokio::time::timeout(Duration::from_millis(200), notices.recv()).await {
            assert_eq!(run_id, "shared");
            return;
        }
    }
    panic!("no notice reached the other server");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_another_server_wrote_to_meanwhile_ends_with_that_server_s_events() {
    let url = fresh_database().await;
    let (a, b) = (fresh_connect(&url).await, fresh_connect(&url).await);
    a.create_run(&new_run("moved")).await.expect("create_run");
    let started = |seq, node_id: &str, input: &str| {
        event("moved", seq, EventKind::NodeStarted { node_id: node_id.into(), input: Some(input.into()) })
    };
    a.append_event(&started(1, "in", "from a")).await.expect("a writes");
    a.append_event(&delta("moved", 2)).await.expect("a writes again, from its fold");
    // The run moves to the other server (a worker taking it over), which writes on;
    // the first one's fold of the run is now behind the database.
    b.append_event(&started(3, "a", "from b")).await.expect("b writes");
    let failed = Some("boom".to_string());
    let end = EventKind::RunFinished { status: RunStatus::Failed, failed_node: Some("a".into()), error: failed };
    a.append_event(&event("moved", 4, end)).await.expect("the first server ends the run");
    let run = a.get_run("moved").await.expect("get").expect("exists");
    assert_eq!(run.summary.status, RunStatus::Failed);
    assert_eq!(run.nodes[0].input.as_deref(), Some("from a"));
    assert_eq!(run.nodes[1].input.as_deref(), Some("from b"), "the stored nodes hold the other server's event");
    let seqs: Vec<u64> = a.events("moved", 0).await.expect("events").iter().map(|e| e.seq).collect();
    assert_eq!(seqs, vec![1, 2, 3, 4]);
}

async fn fresh_connect(url: &str) -> PostgresStore {
    PostgresStore::connect(url).await.expect("connect")
}

/// The rows version 5 kept for a run that ended: one per node.
async fn insert_version_5_run(client: &tokio_postgres::Client, record: &RunRecord) {
    let conclave = serde_json::to_string(&record.conclave).expect("json");
    client
        .execute(
            "INSERT INTO runs (id, conclave_id, conclave_json, input_json, status, created_ms, finished_ms, owner, \
             last_seq) VALUES ($1, 'sample', $2, '{}', $3, 1, 9, 'me', 0)",
            &[&record.summary.id, &conclave, &record.summary.status.as_str()],
        )
        .await
        .expect("a version 5 run");
    for (position, node) in record.nodes.iter().enumerate() {
        let (output, usage) = crate::ended_run::json_columns(node);
        client
            .execute(
                "INSERT INTO nodes (run_id, position, node_id, state, output_json, error, usage_json, input, \
                 attempts, started_ms, finished_ms, reused_from) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, \
                 $11, $12)",
                &[
                    &record.summary.id,
                    &(position as i32),
                    &node.node_id,
                    &node.state.as_str(),
                    &output,
                    &node.error,
                    &usage,
                    &node.input,
                    &(node.attempts as i32),
                    &node.started_ms.map(|t| t as i64),
                    &node.finished_ms.map(|t| t as i64),
                    &node.reused_from,
                ],
            )
            .await
            .expect("a version 5 node row");
    }
}

/// Brings a fresh database to schema version `version`, as an earlier Conclave left it.
async fn migrate_to(client: &tokio_postgres::Client, version: usize) {
    client
        .batch_execute("CREATE TABLE conclave_migrations (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ)")
        .await
        .expect("migrations table");
    for (i, sql) in MIGRATIONS[..version].iter().enumerate() {
        client.batch_execute(sql).await.expect("an earlier migration");
        client.execute("INSERT INTO conclave_migrations (version) VALUES ($1)", &[&(i as i32 + 1)]).await.expect("v");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_that_ended_with_a_row_per_node_keep_every_node_after_the_migration() {
    let url = fresh_database().await;
    let client = admin_client(&url).await;
    migrate_to(&client, 5).await;
    let record = crate::ended_run::ended_run("old");
    insert_version_5_run(&client, &record).await;

    let store = PostgresStore::connect(&url).await.expect("connect migrates to the latest version");
    let run = store.get_run("old").await.expect("get").expect("the old run");
    assert_eq!(run.summary.status, RunStatus::Cancelled);
    assert_eq!(run.nodes, record.nodes, "every node as the row it had");
    let tables = client.query("SELECT 1 FROM pg_tables WHERE tablename = 'nodes'", &[]).await.expect("query");
    assert!(tables.is_empty(), "the node rows are gone once moved");
}

/// Finding the latest review among 1,000 runs is one query, and its expressions are
/// the `runs_reviews` index's: with sequential scans off, the plan is that index.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_latest_review_is_one_query_on_its_index() {
    let url = fresh_database().await;
    let store = Arc::new(PostgresStore::connect(&url).await.expect("connect"));
    thousand_reviews(store.clone()).await;
    let found = store.latest_review(&review_of_b()).await.expect("latest_review");
    assert_eq!(found.as_deref(), Some("run-0994"), "the newest succeeded review of /srv/b among 1,000 runs");
    let client = admin_client(&url).await;
    client.batch_execute("ANALYZE runs; SET enable_seqscan = off").await.expect("settings");
    let branches = vec!["main".to_string()];
    let plan =
        client.query(&format!("EXPLAIN {}", lookups::LATEST_REVIEW), &[&"/srv/b", &branches]).await.expect("explain");
    let plan: Vec<String> = plan.iter().map(|row| row.get(0)).collect();
    assert!(plan.iter().any(|step| step.contains("using runs_reviews")), "the index answers: {plan:?}");
    assert!(!plan.iter().any(|step| step.contains("Seq Scan on runs")), "no scan of the runs: {plan:?}");
}

/// Reviews stored before the index existed (schema version 6) are found after the
/// migration that adds it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reviews_stored_before_the_index_are_found_after_the_migration() {
    let url = fresh_database().await;
    let client = admin_client(&url).await;
    migrate_to(&client, 6).await;
    let conclave = serde_json::to_string(&sample_conclave()).expect("json");
    for (id, status, created) in [("old", "succeeded", 1i64), ("newer", "succeeded", 2), ("failed", "failed", 3)] {
        let input = conclave_doubles::conformance::review_input("/srv/b", Some("main")).to_string();
        client
            .execute(
                "INSERT INTO runs (id, conclave_id, conclave_json, input_json, status, created_ms, owner, nodes_json) \
                 VALUES ($1, 'sample', $2, $3, $4, $5, 'me', '[]')",
                &[&id, &conclave, &input, &status, &created],
            )
            .await
            .expect("a version 6 run");
    }
    let store = PostgresStore::connect(&url).await.expect("connect migrates to the latest version");
    assert_eq!(store.latest_review(&review_of_b()).await.expect("latest_review").as_deref(), Some("newer"));
    let row = client.query_one("SELECT MAX(version) FROM conclave_migrations", &[]).await.expect("version");
    assert_eq!(row.get::<_, i32>(0) as usize, MIGRATIONS.len(), "migrated to the latest version");
}

/// The busy listing's condition and order are the `pull_requests_busy` index's: with
/// sequential scans off, the plan is that index, read in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busy_pull_requests_are_read_in_order_from_their_index() {
    let url = fresh_database().await;
    let store = PostgresStore::connect(&url).await.expect("connect");
    for number in 0..200u64 {
        let record = stored_pull_request(Forge::Github, "acme/app", number, 1000 - number);
        let record = if number % 10 == 0 { record } else { PullRequestReviews { run: None, ..record } };
        store.put_pull_request(&record).await.expect("put_pull_request");
    }
    let busy = store.busy_pull_requests(3).await.expect("busy_pull_requests");
    let numbers: Vec<u64> = busy.iter().map(|r| r.pull_request.number).collect();
    assert_eq!(numbers, vec![190, 180, 170], "the busy ones, least recently changed first");
    let client = admin_client(&url).await;
    client.batch_execute("ANALYZE pull_requests; SET enable_seqscan = off").await.expect("settings");
    let plan = client.query(&format!("EXPLAIN {}", pull_requests::busy_query()), &[&3i64]).await.expect("explain");
    let plan: Vec<String> = plan.iter().map(|row| row.get(0)).collect();
    assert!(plan.iter().any(|step| step.contains("using pull_requests_busy")), "the index answers: {plan:?}");
    assert!(!plan.iter().any(|step| step.contains("Sort")), "nothing is sorted: {plan:?}");
}
