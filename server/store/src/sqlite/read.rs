//! Reads, off the async runtime: each runs on a blocking thread (`spawn_blocking`)
//! with a read-only connection of its own, so reads go on beside the writer thread
//! (WAL) and never wait for its batches.

use conclave_core::{CachedOutput, ReviewOf, StoreError};
use conclave_shared::eval::{EvalListing, StoredEval};
use conclave_shared::{Conclave, OutputDialect, RunEvent, RunRecord, RunSummary};
use rusqlite::{Connection, OptionalExtension, params};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use super::schema::{SUMMARY_COLUMNS, backend, from_json, open_reader, run_exists, summary_from_row};
use crate::folds::fold_events;

/// Read connections kept open between reads; a read finding none idle opens another,
/// so concurrent reads never wait for each other, and a burst leaves at most this many.
const IDLE_READERS: usize = 4;

/// The read side of one store: the file and its idle read connections.
#[derive(Debug)]
pub(super) struct Readers {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
}

impl Readers {
    pub(super) fn new(path: PathBuf) -> Arc<Readers> {
        Arc::new(Readers { path, idle: Mutex::new(Vec::new()) })
    }

    /// Runs `read` on a blocking thread with a read connection.
    pub(super) async fn run<T, F>(self: &Arc<Self>, read: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let readers = Arc::clone(self);
        tokio::task::spawn_blocking(move || readers.with_connection(read))
            .await
            .map_err(|e| StoreError::Backend(format!("a read of the run store stopped: {e}")))?
    }

    fn with_connection<T>(&self, read: impl FnOnce(&Connection) -> Result<T, StoreError>) -> Result<T, StoreError> {
        let idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner).pop();
        let conn = match idle {
            Some(conn) => conn,
            None => open_reader(&self.path)?,
        };
        let result = read(&conn);
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        if idle.len() < IDLE_READERS {
            idle.push(conn);
        }
        result
    }
}

pub(super) fn get_run(conn: &Connection, run_id: &str) -> Result<Option<RunRecord>, StoreError> {
    let row = conn
        .prepare_cached(&format!(
            "SELECT {SUMMARY_COLUMNS}, conclave_json, input_json, nodes_json FROM runs WHERE id = ?1"
        ))
        .and_then(|mut s| {
            s.query_row([run_id], |row| {
                Ok((
                    summary_from_row(row)?,
                    row.get::<_, String>("conclave_json")?,
                    row.get::<_, String>("input_json")?,
                    row.get::<_, Option<String>>("nodes_json")?,
                ))
            })
            .optional()
        })
        .map_err(backend)?;
    let Some((summary, conclave, input, ended)) = row else { return Ok(None) };
    let conclave: Conclave = from_json(run_id, &conclave)?;
    let input = from_json(run_id, &input)?;
    // A run that ended stored its nodes; a running one's are its event log.
    let nodes = match ended.filter(|_| summary.status.is_terminal()) {
        Some(json) => from_json(run_id, &json)?,
        None => fold_events(run_id, conclave.clone(), &events(conn, run_id, 0)?),
    };
    Ok(Some(RunRecord { summary, conclave, input, nodes }))
}

pub(super) fn list_runs(conn: &Connection, limit: usize) -> Result<Vec<RunSummary>, StoreError> {
    let mut stmt = conn
        .prepare_cached(&format!("SELECT {SUMMARY_COLUMNS} FROM runs ORDER BY created_ms DESC, id DESC LIMIT ?1"))
        .map_err(backend)?;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = stmt.query_map([limit], summary_from_row).map_err(backend)?;
    rows.map(|r| r.map_err(backend)).collect()
}

pub(super) fn events(conn: &Connection, run_id: &str, after_seq: u64) -> Result<Vec<RunEvent>, StoreError> {
    events_page(conn, run_id, after_seq, usize::MAX)
}

/// The first `limit` events after `after_seq`: blocks are stepped through one row at
/// a time, and no row is read once the page is full.
pub(super) fn events_page(
    conn: &Connection,
    run_id: &str,
    after_seq: u64,
    limit: usize,
) -> Result<Vec<RunEvent>, StoreError> {
    if !run_exists(conn, run_id)? {
        return Err(StoreError::UnknownRun(run_id.to_string()));
    }
    let mut stmt = conn
        .prepare_cached("SELECT events FROM event_blocks WHERE run_id = ?1 AND last_seq > ?2 ORDER BY last_seq")
        .map_err(backend)?;
    let mut rows = stmt.query(params![run_id, after_seq]).map_err(backend)?;
    let mut events = Vec::new();
    while events.len() < limit {
        let Some(row) = rows.next().map_err(backend)? else { break };
        let block: Vec<RunEvent> = from_json(run_id, &row.get::<_, String>(0).map_err(backend)?)?;
        // The first block may begin before `after_seq`.
        let wanted = limit - events.len();
        events.extend(block.into_iter().filter(|e| e.seq > after_seq).take(wanted));
    }
    Ok(events)
}

/// A run's row, without its nodes.
pub(super) fn run_summary(conn: &Connection, run_id: &str) -> Result<Option<RunSummary>, StoreError> {
    conn.prepare_cached(&format!("SELECT {SUMMARY_COLUMNS} FROM runs WHERE id = ?1"))
        .and_then(|mut s| s.query_row([run_id], summary_from_row).optional())
        .map_err(backend)
}

/// The one query behind `RunStore::latest_review`, on the `runs_reviews` index.
pub(super) const LATEST_REVIEW: &str = "SELECT id FROM runs WHERE status = 'succeeded' \
     AND json_extract(input_json, '$.repository') = ?1 \
     AND json_extract(input_json, '$.head.branch') IN (SELECT value FROM json_each(?2)) \
     ORDER BY created_ms DESC, id DESC LIMIT 1";

/// The newest succeeded review of one of the branches of a repository.
pub(super) fn latest_review(conn: &Connection, review: &ReviewOf) -> Result<Option<String>, StoreError> {
    let branches = serde_json::to_string(&review.branches).map_err(|e| StoreError::Backend(e.to_string()))?;
    conn.prepare_cached(LATEST_REVIEW)
        .and_then(|mut s| s.query_row(params![review.repository, branches], |r| r.get(0)).optional())
        .map_err(backend)
}

pub(super) fn get_report(conn: &Connection, run_id: &str, format: &str) -> Result<Option<String>, StoreError> {
    conn.prepare_cached("SELECT content FROM reports WHERE run_id = ?1 AND format = ?2")
        .and_then(|mut s| s.query_row([run_id, format], |r| r.get(0)).optional())
        .map_err(backend)
}

/// The runs still `running` with their owners, by id.
pub(super) fn running_runs(conn: &Connection) -> Result<Vec<(String, String)>, StoreError> {
    let mut stmt =
        // A queued run's lease, not its owner, says whether it lives.
        conn.prepare_cached("SELECT id, owner FROM runs WHERE status = 'running' AND queue_spec IS NULL ORDER BY id")
            .map_err(backend)?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).map_err(backend)?;
    rows.map(|r| r.map_err(backend)).collect()
}

/// The dialect remembered for a provider's server; a name this build does not know
/// (written by a newer one) counts as nothing remembered.
pub(super) fn endpoint_dialect(
    conn: &Connection,
    provider: &str,
    endpoint: &str,
) -> Result<Option<OutputDialect>, StoreError> {
    let name: Option<String> = conn
        .prepare_cached("SELECT dialect FROM endpoint_dialects WHERE provider = ?1 AND endpoint = ?2")
        .and_then(|mut s| s.query_row(params![provider, endpoint], |r| r.get(0)).optional())
        .map_err(backend)?;
    Ok(name.as_deref().and_then(OutputDialect::parse))
}

/// The cached output under `key` that has not expired at `now_ms`.
pub(super) fn cached_output(conn: &Connection, key: &str, now_ms: u64) -> Result<Option<CachedOutput>, StoreError> {
    let row: Option<(String, String, String, i64, Option<i64>)> = conn
        .prepare_cached(
            "SELECT output_json, run_id, node_id, stored_ms, expires_ms FROM node_cache \
             WHERE key = ?1 AND (expires_ms IS NULL OR expires_ms > ?2)",
        )
        .and_then(|mut s| {
            s.query_row(params![key, now_ms as i64], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
                .optional()
        })
        .map_err(backend)?;
    let Some((output, run_id, node_id, stored_ms, expires_ms)) = row else { return Ok(None) };
    let output = serde_json::from_str(&output).map_err(|e| StoreError::Backend(format!("a cached output: {e}")))?;
    Ok(Some(CachedOutput {
        output,
        run_id,
        node_id,
        stored_ms: stored_ms as u64,
        expires_ms: expires_ms.map(|e| e as u64),
    }))
}

/// The columns of an eval's listing, in the order [`listing_from_row`] reads them.
const LISTING_COLUMNS: &str = "id, conclave, dataset, created_ms, cases, precision, recall, f1";

/// Kept evals, newest first: of one conclave (on `evals_by_conclave`) or of all (on
/// `evals_by_created`).
pub(super) fn list_evals(
    conn: &Connection,
    conclave: Option<&str>,
    limit: usize,
) -> Result<Vec<EvalListing>, StoreError> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let order = "ORDER BY created_ms DESC, id DESC LIMIT";
    let rows = match conclave {
        Some(conclave) => {
            let sql = format!("SELECT {LISTING_COLUMNS} FROM evals WHERE conclave = ?1 {order} ?2");
            let mut stmt = conn.prepare_cached(&sql).map_err(backend)?;
            stmt.query_map(params![conclave, limit], listing_from_row).map_err(backend)?.collect::<Result<Vec<_>, _>>()
        }
        None => {
            let sql = format!("SELECT {LISTING_COLUMNS} FROM evals {order} ?1");
            let mut stmt = conn.prepare_cached(&sql).map_err(backend)?;
            stmt.query_map(params![limit], listing_from_row).map_err(backend)?.collect::<Result<Vec<_>, _>>()
        }
    };
    rows.map_err(backend)
}

fn listing_from_row(row: &rusqlite::Row) -> rusqlite::Result<EvalListing> {
    Ok(EvalListing {
        id: row.get(0)?,
        conclave: row.get(1)?,
        dataset: row.get(2)?,
        created_ms: row.get::<_, i64>(3)? as u64,
        cases: row.get::<_, i64>(4)? as usize,
        precision: row.get(5)?,
        recall: row.get(6)?,
        f1: row.get(7)?,
    })
}

/// A kept eval, whole.
pub(super) fn get_eval(conn: &Connection, id: &str) -> Result<Option<StoredEval>, StoreError> {
    let row: Option<(String, String, i64, String)> = conn
        .prepare_cached("SELECT conclave, dataset, created_ms, summary_json FROM evals WHERE id = ?1")
        .and_then(|mut s| s.query_row([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))).optional())
        .map_err(backend)?;
    let Some((conclave, dataset, created_ms, summary)) = row else { return Ok(None) };
    let summary = serde_json::from_str(&summary)
        .map_err(|e| StoreError::Backend(format!("the kept eval `{id}` is unreadable: {e}")))?;
    Ok(Some(StoredEval { id: id.to_string(), conclave, dataset, created_ms: created_ms as u64, summary }))
}
