//! The run stores behind `RunStore`. Today: SQLite, one file, created and migrated on
//! open, write-ahead logging on, every event committed before the engine moves on.
//!
//! A process killed mid-run loses nothing it had appended: each event is its own
//! committed transaction in the WAL, which survives the process.

use async_trait::async_trait;
use conclave_shared::{Conclave, NodeState, NodeSummary, RunEvent, RunRecord, RunStatus, RunSummary};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use conclave_core::{NewRun, RunStore, StoreError, interrupted_event};
use conclave_shared::{Effect, effect_of};

pub mod postgres;
pub use postgres::PostgresStore;

/// Schema migrations, applied in order; `PRAGMA user_version` counts those applied.
const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE runs (
    id            TEXT PRIMARY KEY,
    conclave_id   TEXT NOT NULL,
    conclave_json TEXT NOT NULL,
    input_json    TEXT NOT NULL,
    status        TEXT NOT NULL,
    created_ms    INTEGER NOT NULL,
    finished_ms   INTEGER,
    failed_node   TEXT,
    error         TEXT,
    owner         TEXT NOT NULL
);
CREATE INDEX runs_by_created ON runs (created_ms DESC, id DESC);
CREATE INDEX runs_by_status ON runs (status);
CREATE TABLE events (
    run_id  TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq     INTEGER NOT NULL,
    at_ms   INTEGER NOT NULL,
    type    TEXT NOT NULL,
    node_id TEXT,
    payload TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
CREATE TABLE nodes (
    run_id      TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    position    INTEGER NOT NULL,
    node_id     TEXT NOT NULL,
    state       TEXT NOT NULL,
    output_json TEXT,
    error       TEXT,
    usage_json  TEXT,
    PRIMARY KEY (run_id, node_id)
);
"#,
    r#"
CREATE TABLE reports (
    run_id  TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    format  TEXT NOT NULL,
    content TEXT NOT NULL,
    PRIMARY KEY (run_id, format)
);
"#,
    r#"
ALTER TABLE nodes ADD COLUMN input TEXT;
ALTER TABLE nodes ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE nodes ADD COLUMN started_ms INTEGER;
ALTER TABLE nodes ADD COLUMN finished_ms INTEGER;
ALTER TABLE nodes ADD COLUMN reused_from TEXT;
"#,
];

/// The columns of a node row, in the order [`node_from_row`] reads them.
const NODE_COLUMNS: &str =
    "node_id, state, output_json, error, usage_json, input, attempts, started_ms, finished_ms, reused_from";

/// How long a write waits for another process's lock before it fails.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs in a SQLite file.
#[derive(Debug)]
pub struct SqliteStore {
    conn: Mutex<Connection>,
    path: PathBuf,
}

impl SqliteStore {
    /// Opens (creating and migrating as needed) the database at `path`.
    pub fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| {
                StoreError::Backend(format!("cannot create the directory {} for the run database: {e}", dir.display()))
            })?;
        }
        let mut conn =
            Connection::open(path).map_err(|e| StoreError::Backend(format!("cannot open {}: {e}", path.display())))?;
        // The busy timeout comes first: switching to WAL and migrating take locks that
        // another process opening the same file may hold for a moment.
        conn.busy_timeout(BUSY_TIMEOUT).map_err(backend)?;
        conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;")
            .map_err(backend)?;
        migrate(&mut conn, path)?;
        Ok(SqliteStore { conn: Mutex::new(conn), path: path.to_path_buf() })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn with_conn<T>(&self, f: impl FnOnce(&mut Connection) -> Result<T, StoreError>) -> Result<T, StoreError> {
        let mut conn = self.conn.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&mut conn)
    }
}

/// Applies the migrations not yet applied. The version is read inside an immediate
/// (write-locked) transaction, so when several processes open a fresh file at once,
/// one migrates and the others find the work done.
fn migrate(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(backend)?;
    let version: usize = tx.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(backend)?;
    if version > MIGRATIONS.len() {
        return Err(StoreError::Backend(format!(
            "{} was written by a newer Conclave (schema version {version}, this one knows {}); upgrade Conclave or use another --db",
            path.display(),
            MIGRATIONS.len()
        )));
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(version) {
        tx.execute_batch(&format!("{sql}; PRAGMA user_version = {};", i + 1)).map_err(backend)?;
    }
    tx.commit().map_err(backend)
}

/// Starts a write transaction that takes the write lock at once. A deferred one that
/// first reads and then writes cannot wait for a lock another process holds; it
/// fails with "database is locked" instead.
fn write(conn: &mut Connection) -> Result<rusqlite::Transaction<'_>, StoreError> {
    conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(backend)
}

fn backend(e: rusqlite::Error) -> StoreError {
    StoreError::Backend(e.to_string())
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Backend(e.to_string()))
}

fn from_json<T: serde::de::DeserializeOwned>(run_id: &str, text: &str) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt { run_id: run_id.to_string(), message: e.to_string() })
}

fn insert_event(tx: &rusqlite::Transaction, event: &RunEvent) -> Result<(), StoreError> {
    let last: Option<u64> = tx
        .prepare_cached("SELECT MAX(seq) FROM events WHERE run_id = ?1")
        .and_then(|mut s| s.query_row([&event.run_id], |r| r.get(0)))
        .map_err(backend)?;
    let last = last.unwrap_or(0);
    if event.seq <= last {
        return Err(StoreError::OutOfOrder { run_id: event.run_id.clone(), seq: event.seq, last });
    }
    let payload = to_json(event)?;
    tx.prepare_cached(
        "INSERT INTO events (run_id, seq, at_ms, type, node_id, payload) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )
    .and_then(|mut s| {
        s.execute(params![event.run_id, event.seq, event.at_ms, event.kind.type_name(), event.kind.node_id(), payload])
    })
    .map_err(backend)?;
    match effect_of(event) {
        Effect::None => {}
        Effect::Node { node_id, change } => {
            let sql = format!("SELECT {NODE_COLUMNS} FROM nodes WHERE run_id = ?1 AND node_id = ?2");
            let node = tx
                .prepare_cached(&sql)
                .and_then(|mut s| s.query_row([&event.run_id, &node_id], |r| Ok(node_from_row(r))).optional())
                .map_err(backend)?;
            // Events about nodes the run does not have change nothing, as in `RunRecord::apply`.
            if let Some(node) = node {
                let mut node = node.map_err(|message| StoreError::Corrupt { run_id: event.run_id.clone(), message })?;
                node.apply(change, event.at_ms);
                write_node(tx, &event.run_id, &node)?;
            }
        }
        Effect::RunEnd { status, failed_node, error, unfinished } => {
            tx.execute(
                "UPDATE runs SET status = ?2, finished_ms = ?3, failed_node = ?4, error = ?5 WHERE id = ?1",
                params![event.run_id, status.as_str(), event.at_ms, failed_node, error],
            )
            .map_err(backend)?;
            for mut node in read_nodes(tx, &event.run_id, "AND state IN ('queued', 'running')")? {
                node.end_unfinished(unfinished, event.at_ms);
                write_node(tx, &event.run_id, &node)?;
            }
        }
    }
    Ok(())
}

/// Reads a node row; the error says what is unreadable.
fn node_from_row(row: &rusqlite::Row) -> Result<NodeSummary, String> {
    let text = |i: usize| row.get::<_, Option<String>>(i).map_err(|e| e.to_string());
    let state: String = row.get(1).map_err(|e| e.to_string())?;
    Ok(NodeSummary {
        node_id: row.get(0).map_err(|e| e.to_string())?,
        state: NodeState::parse(&state).ok_or_else(|| format!("unknown node state `{state}`"))?,
        output: parse(text(2)?)?,
        error: text(3)?,
        usage: parse(text(4)?)?,
        input: text(5)?,
        attempts: row.get(6).map_err(|e| e.to_string())?,
        started_ms: row.get(7).map_err(|e| e.to_string())?,
        finished_ms: row.get(8).map_err(|e| e.to_string())?,
        reused_from: text(9)?,
    })
}

fn parse<T: serde::de::DeserializeOwned>(text: Option<String>) -> Result<Option<T>, String> {
    text.map(|t| serde_json::from_str(&t).map_err(|e| e.to_string())).transpose()
}

/// The run's nodes matching `filter` (an `AND ...` clause), in conclave order.
fn read_nodes(conn: &Connection, run_id: &str, filter: &str) -> Result<Vec<NodeSummary>, StoreError> {
    let sql = format!("SELECT {NODE_COLUMNS} FROM nodes WHERE run_id = ?1 {filter} ORDER BY position");
    let mut stmt = conn.prepare_cached(&sql).map_err(backend)?;
    let rows = stmt.query_map([run_id], |r| Ok(node_from_row(r))).map_err(backend)?;
    let mut nodes = Vec::new();
    for row in rows {
        nodes.push(
            row.map_err(backend)?.map_err(|message| StoreError::Corrupt { run_id: run_id.to_string(), message })?,
        );
    }
    Ok(nodes)
}

/// Writes every column of a node row.
fn write_node(tx: &rusqlite::Transaction, run_id: &str, node: &NodeSummary) -> Result<(), StoreError> {
    let output = node.output.as_ref().map(to_json).transpose()?;
    let usage = node.usage.as_ref().map(to_json).transpose()?;
    tx.prepare_cached(
        "UPDATE nodes SET state = ?3, output_json = ?4, error = ?5, usage_json = ?6, input = ?7, attempts = ?8, \
         started_ms = ?9, finished_ms = ?10, reused_from = ?11 WHERE run_id = ?1 AND node_id = ?2",
    )
    .and_then(|mut s| {
        s.execute(params![
            run_id,
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
        ])
    })
    .map_err(backend)?;
    Ok(())
}

fn summary_from_row(row: &rusqlite::Row) -> rusqlite::Result<(RunSummary, String)> {
    let status: String = row.get("status")?;
    Ok((
        RunSummary {
            id: row.get("id")?,
            conclave_id: row.get("conclave_id")?,
            status: RunStatus::parse(&status).unwrap_or(RunStatus::Interrupted),
            created_ms: row.get("created_ms")?,
            finished_ms: row.get("finished_ms")?,
            failed_node: row.get("failed_node")?,
            error: row.get("error")?,
        },
        status,
    ))
}

#[async_trait]
impl RunStore for SqliteStore {
    async fn create_run(&self, run: &NewRun) -> Result<(), StoreError> {
        let conclave = to_json(&run.conclave)?;
        let input = to_json(&run.input)?;
        self.with_conn(|conn| {
            let tx = write(conn)?;
            tx.execute(
                "INSERT INTO runs (id, conclave_id, conclave_json, input_json, status, created_ms, owner) VALUES (?1, ?2, ?3, ?4, 'running', ?5, ?6)",
                params![run.id, run.conclave.id, conclave, input, run.created_ms, run.owner],
            )
            .map_err(backend)?;
            for (position, node) in run.conclave.nodes.iter().enumerate() {
                tx.execute(
                    "INSERT INTO nodes (run_id, position, node_id, state) VALUES (?1, ?2, ?3, 'queued')",
                    params![run.id, position, node.id],
                )
                .map_err(backend)?;
            }
            tx.commit().map_err(backend)
        })
    }

    async fn append_event(&self, event: &RunEvent) -> Result<(), StoreError> {
        self.with_conn(|conn| {
            let tx = write(conn)?;
            let known: bool = tx
                .prepare_cached("SELECT 1 FROM runs WHERE id = ?1")
                .and_then(|mut s| s.query_row([&event.run_id], |_| Ok(true)).optional())
                .map_err(backend)?
                .unwrap_or(false);
            if !known {
                return Err(StoreError::UnknownRun(event.run_id.clone()));
            }
            insert_event(&tx, event)?;
            tx.commit().map_err(backend)
        })
    }

    async fn get_run(&self, run_id: &str) -> Result<Option<RunRecord>, StoreError> {
        self.with_conn(|conn| {
            let row = conn
                .query_row("SELECT * FROM runs WHERE id = ?1", [run_id], |row| {
                    let (summary, _) = summary_from_row(row)?;
                    Ok((summary, row.get::<_, String>("conclave_json")?, row.get::<_, String>("input_json")?))
                })
                .optional()
                .map_err(backend)?;
            let Some((summary, conclave, input)) = row else { return Ok(None) };
            let conclave: Conclave = from_json(run_id, &conclave)?;
            let input = from_json(run_id, &input)?;
            let nodes = read_nodes(conn, run_id, "")?;
            Ok(Some(RunRecord { summary, conclave, input, nodes }))
        })
    }

    async fn list_runs(&self, limit: usize) -> Result<Vec<RunSummary>, StoreError> {
        self.with_conn(|conn| {
            let mut stmt =
                conn.prepare("SELECT * FROM runs ORDER BY created_ms DESC, id DESC LIMIT ?1").map_err(backend)?;
            let rows = stmt.query_map([limit as i64], summary_from_row).map_err(backend)?;
            rows.map(|r| r.map(|(s, _)| s).map_err(backend)).collect()
        })
    }

    async fn events(&self, run_id: &str, after_seq: u64) -> Result<Vec<RunEvent>, StoreError> {
        self.with_conn(|conn| {
            let known: bool = conn
                .query_row("SELECT 1 FROM runs WHERE id = ?1", [run_id], |_| Ok(true))
                .optional()
                .map_err(backend)?
                .unwrap_or(false);
            if !known {
                return Err(StoreError::UnknownRun(run_id.to_string()));
            }
            let mut stmt = conn
                .prepare("SELECT payload FROM events WHERE run_id = ?1 AND seq > ?2 ORDER BY seq")
                .map_err(backend)?;
            let rows = stmt.query_map(params![run_id, after_seq], |r| r.get::<_, String>(0)).map_err(backend)?;
            rows.map(|r| r.map_err(backend).and_then(|p| from_json(run_id, &p))).collect()
        })
    }

    async fn put_report(&self, run_id: &str, format: &str, content: &str) -> Result<(), StoreError> {
        self.with_conn(|conn| {
            let known: bool =
                conn.query_row("SELECT 1 FROM runs WHERE id = ?1", [run_id], |_| Ok(true)).optional().map_err(backend)?.unwrap_or(false);
            if !known {
                return Err(StoreError::UnknownRun(run_id.to_string()));
            }
            conn.execute(
                "INSERT INTO reports (run_id, format, content) VALUES (?1, ?2, ?3) ON CONFLICT (run_id, format) DO UPDATE SET content = excluded.content",
                params![run_id, format, content],
            )
            .map_err(backend)?;
            Ok(())
        })
    }

    async fn get_report(&self, run_id: &str, format: &str) -> Result<Option<String>, StoreError> {
        self.with_conn(|conn| {
            conn.query_row("SELECT content FROM reports WHERE run_id = ?1 AND format = ?2", [run_id, format], |r| {
                r.get(0)
            })
            .optional()
            .map_err(backend)
        })
    }

    async fn mark_interrupted(
        &self,
        owner_alive: &(dyn for<'s> Fn(&'s str) -> bool + Sync),
        now_ms: u64,
    ) -> Result<Vec<String>, StoreError> {
        self.with_conn(|conn| {
            let tx = write(conn)?;
            let candidates: Vec<(String, String, u64)> = {
                let mut stmt = tx
                    .prepare("SELECT id, owner, (SELECT COALESCE(MAX(seq), 0) FROM events WHERE run_id = runs.id) FROM runs WHERE status = 'running' ORDER BY id")
                    .map_err(backend)?;
                let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).map_err(backend)?;
                rows.collect::<Result<_, _>>().map_err(backend)?
            };
            let mut marked = Vec::new();
            for (id, owner, last) in candidates {
                if !owner_alive(&owner) {
                    insert_event(&tx, &interrupted_event(&id, last + 1, now_ms))?;
                    marked.push(id);
                }
            }
            tx.commit().map_err(backend)?;
            Ok(marked)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use conclave_core::testing::conformance::run_all;
    use std::sync::Arc;

    #[tokio::test]
    async fn sqlite_store_conforms() {
        let dir = tempfile::tempdir().expect("tempdir");
        let counter = std::sync::atomic::AtomicUsize::new(0);
        run_all(&|| {
            let n = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Arc::new(SqliteStore::open(&dir.path().join(format!("store-{n}.db"))).expect("open"))
        })
        .await;
    }
}
