//! Webhook deliveries through `app()` in process: 1,000 signed GitHub `pull_request`
//! deliveries (each a realistic body of about 20 KB, a distinct delivery id), one at
//! a time, then 8 at once (the store's group commit shares transactions), on the
//! SQLite store in a temporary file, and on PostgreSQL when
//! `CONCLAVE_TEST_POSTGRES_URL` is set. Two figures, each as p50, p99 and the largest:
//!
//! - delivery to stored record: from the start of each request to its 202, which is
//!   sent only once the record is committed;
//! - delivery to a queued review (`webhooks/queued.rs`): from the start of each
//!   request until the webhook dispatcher, running beside the endpoint over the same
//!   store, has committed the pull request's record naming its queued review run. Each
//!   delivery is of a pull request of its own, on a store of its own (a new SQLite
//!   file; a new database on the PostgreSQL server).
//!
//! Run with `cargo bench -p conclave-server --bench webhooks`.

use conclave_core::RunStore;
use conclave_store::{PostgresStore, SqliteStore};
use std::sync::Arc;
use std::time::Duration;
use tokio_postgres::NoTls;

#[path = "webhooks/common.rs"]
mod common;

use common::{CLIENTS, DELIVERIES, body, deliver, report, state};
#[path = "webhooks/queued.rs"]
mod queued;
#[path = "webhooks/watched.rs"]
mod watched;

/// What the first figure measures.
const STORED: &str = "delivery to stored record";

/// [`DELIVERIES`] one at a time, then as many from [`CLIENTS`] at once, on `store`.
async fn measure(label: &str, store: Arc<dyn RunStore>) {
    // Ids of this run only, so a database kept from an earlier run changes nothing.
    let label = format!("{label}-{}", conclave_core::now_ms());
    let label = label.as_str();
    let state = state(store.clone());
    let bodies: Vec<String> = (0..DELIVERIES).map(body).collect();
    let mut one = Vec::with_capacity(DELIVERIES);
    for (n, body) in bodies.iter().enumerate() {
        one.push(deliver(&state, format!("{label}-one-{n}"), body.clone()).await.1);
    }
    report(&format!("{}, one at a time", label_of(label)), STORED, one);
    let mut tasks = tokio::task::JoinSet::new();
    for client in 0..CLIENTS {
        let (state, bodies) = (state.clone(), bodies.clone());
        let label = label.to_string();
        tasks.spawn(async move {
            let mut times = Vec::new();
            for n in (client..DELIVERIES).step_by(CLIENTS) {
                times.push(deliver(&state, format!("{label}-many-{n}"), bodies[n].clone()).await.1);
            }
            times
        });
    }
    let many: Vec<Duration> = tasks.join_all().await.into_iter().flatten().collect();
    report(&format!("{}, {CLIENTS} at once", label_of(label)), STORED, many);
    let kept = store.pending_deliveries(usize::MAX >> 2).await.expect("pending");
    let ours = kept.iter().filter(|d| d.id.starts_with(label)).count();
    assert_eq!(ours, 2 * DELIVERIES, "every delivery was kept");
}

/// The store's name, without the run's time.
fn label_of(label: &str) -> &str {
    label.split('-').next().unwrap_or(label)
}

fn main() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let dir = tempfile::tempdir().expect("tempdir");
        let sqlite = SqliteStore::open(&dir.path().join("runs.db")).expect("SQLite store");
        measure("SQLite", Arc::new(sqlite)).await;
        let sqlite = SqliteStore::open(&dir.path().join("queue.db")).expect("SQLite store");
        queued::measure("SQLite", Arc::new(sqlite), dir.path()).await;
        match std::env::var("CONCLAVE_TEST_POSTGRES_URL") {
            Ok(url) => {
                let store = PostgresStore::connect(&url).await.expect("PostgreSQL store");
                measure("PostgreSQL", Arc::new(store)).await;
                let database = Database::create(&url).await;
                let store = PostgresStore::connect(&database.url).await.expect("PostgreSQL store");
                queued::measure("PostgreSQL", Arc::new(store), dir.path()).await;
                database.drop().await;
            }
            Err(_) => println!("PostgreSQL: skipped (set CONCLAVE_TEST_POSTGRES_URL)"),
        }
    });
}

/// A database of the bench's own on the PostgreSQL server, dropped once measured.
struct Database {
    admin: tokio_postgres::Client,
    name: String,
    url: String,
}

impl Database {
    /// A new, empty database on the server `url` names.
    async fn create(url: &str) -> Database {
        let (admin, connection) = tokio_postgres::connect(url, NoTls).await.expect("connect to PostgreSQL");
        tokio::spawn(connection);
        let name = format!("conclave_bench_webhooks_{}_{}", std::process::id(), conclave_core::now_ms());
        admin.batch_execute(&format!("CREATE DATABASE {name}")).await.expect("create the bench's database");
        let url = with_database(url, &name);
        Database { admin, name, url }
    }

    /// Drops the database, closing the connections still open to it.
    async fn drop(self) {
        let dropped = self.admin.batch_execute(&format!("DROP DATABASE {} WITH (FORCE)", self.name)).await;
        if let Err(e) = dropped {
            println!("(the bench's database {} was not dropped: {e})", self.name);
        }
    }
}

/// `url` naming the database `name` instead.
fn with_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, format!("?{query}")),
        None => (url, String::new()),
    };
    let authority = base.find("://").map_or(0, |i| i + 3);
    let path = base[authority..].find('/').map_or(base.len(), |i| authority + i);
    format!("{}/{name}{query}", &base[..path])
}
