//! The writes, each applied by the writer thread inside its batch's transaction (in a
//! savepoint of its own). A run's state is derived from its events through
//! `effect_of` in the same write, so a stored run always agrees with its event log:
//! while it runs its nodes are that log, and its end stores them as they ended.

use conclave_core::{CachedOutput, StoreError, interrupted_event};
use conclave_shared::eval::EvalListing;
use conclave_shared::{Conclave, Effect, NodeSummary, OutputDialect, RunEvent, effect_of};
use rusqlite::{Connection, OptionalExtension, params};

use super::read;
use super::schema::{backend, from_json, run_exists, to_json};
use crate::folds::{Folds, fold_events};

/// A run to insert, serialized by the caller so the writer thread only writes.
#[derive(Debug)]
pub(super) struct RunRow {
    pub id: String,
    pub conclave_id: String,
    pub conclave_json: String,
    pub input_json: String,
    pub created_ms: u64,
    pub owner: String,
    /// For a run of the queue, its spec: the run is then `queued`.
    pub queue_spec: Option<String>,
}

impl RunRow {
    /// The row of `run`, with the spec when it is a run of the queue.
    pub(super) fn of(run: &conclave_core::NewRun, queue_spec: Option<String>) -> Result<RunRow, StoreError> {
        Ok(RunRow {
            id: run.id.clone(),
            conclave_id: run.conclave.id.clone(),
            conclave_json: to_json(&run.conclave)?,
            input_json: to_json(&run.input)?,
            created_ms: run.created_ms,
            owner: run.owner.clone(),
            queue_spec,
        })
    }
}

/// Inserts a run in status `running` (or `queued`, for the queue); a duplicate id
/// fails. Its nodes are stored when it ends.
pub(super) fn create_run(conn: &Connection, run: &RunRow) -> Result<(), StoreError> {
    let status = if run.queue_spec.is_some() { "queued" } else { "running" };
    conn.prepare_cached(
        "INSERT INTO runs (id, conclave_id, conclave_json, input_json, status, created_ms, owner, queue_spec) \
         VALUES (?1, ?2, ?3, ?4, ?7, ?5, ?6, ?8)",
    )
    .and_then(|mut s| {
        s.execute(params![
            run.id,
            run.conclave_id,
            run.conclave_json,
            run.input_json,
            run.created_ms,
            run.owner,
            status,
            run.queue_spec
        ])
    })
    .map_err(backend)?;
    Ok(())
}

/// Appends one event of a known run and applies its effect.
pub(super) fn append_event(conn: &Connection, event: &RunEvent) -> Result<(), StoreError> {
    append_events(conn, std::slice::from_ref(event), &mut Folds::default())
}

/// Appends events of known runs, in order, and applies their effects. The events of
/// each run go in one block, and each run is looked up once. A running run's nodes
/// are its event log; a run's end stores its status and its nodes as they ended:
/// from `folds` (carried forward by every event written) when it holds the run, else
/// folded from the stored events. The caller drops the folds of these runs if the
/// write fails.
pub(super) fn append_events(conn: &Connection, events: &[RunEvent], folds: &mut Folds) -> Result<(), StoreError> {
    // Per run: its last sequence number and the events of its block, in order of arrival.
    let mut blocks: Vec<(&str, u64, Vec<&RunEvent>)> = Vec::new();
    for event in events {
        let run_id = event.run_id.as_str();
        let at = match blocks.iter().position(|(id, _, _)| *id == run_id) {
            Some(at) => at,
            None => {
                let last = last_seq(conn, run_id)?;
                folds.check(run_id, last);
                if last == 0 && !folds.has(run_id) {
                    folds.start(run_id, read_conclave(conn, run_id)?);
                }
                blocks.push((run_id, last, Vec::new()));
                blocks.len() - 1
            }
        };
        let (_, last, block) = &mut blocks[at];
        if event.seq <= *last {
            return Err(StoreError::OutOfOrder { run_id: event.run_id.clone(), seq: event.seq, last: *last });
        }
        *last = event.seq;
        block.push(event);
        folds.apply(event);
        let effect = effect_of(event);
        if let Effect::RunStatus(status) = effect {
            conn.prepare_cached("UPDATE runs SET status = ?2 WHERE id = ?1")
                .and_then(|mut s| s.execute(params![event.run_id, status.as_str()]))
                .map_err(backend)?;
        } else if let Effect::RunEnd { status, failed_node, error, .. } = effect {
            let nodes = match folds.finish(run_id) {
                Some(nodes) => nodes,
                None => fold_stored(conn, run_id, block)?,
            };
            let nodes = to_json(&nodes)?;
            conn.prepare_cached(
                "UPDATE runs SET status = ?2, finished_ms = ?3, failed_node = ?4, error = ?5, nodes_json = ?6 \
                 WHERE id = ?1",
            )
            .and_then(|mut s| s.execute(params![event.run_id, status.as_str(), event.at_ms, failed_node, error, nodes]))
            .map_err(backend)?;
        }
    }
    blocks.iter().try_for_each(|(run_id, _, block)| insert_block(conn, run_id, block))
}

/// A run's nodes folded from its stored events and then `unstored`, the events of
/// its block not yet inserted.
fn fold_stored(conn: &Connection, run_id: &str, unstored: &[&RunEvent]) -> Result<Vec<NodeSummary>, StoreError> {
    let stored = read::events(conn, run_id, 0)?;
    Ok(fold_events(run_id, read_conclave(conn, run_id)?, stored.iter().chain(unstored.iter().copied())))
}

/// The conclave a known run runs.
fn read_conclave(conn: &Connection, run_id: &str) -> Result<Conclave, StoreError> {
    let json: String = conn
        .prepare_cached("SELECT conclave_json FROM runs WHERE id = ?1")
        .and_then(|mut s| s.query_row([run_id], |r| r.get(0)))
        .map_err(backend)?;
    from_json(run_id, &json)
}

/// The last sequence number of a known run (0 before its first event).
fn last_seq(conn: &Connection, run_id: &str) -> Result<u64, StoreError> {
    if !run_exists(conn, run_id)? {
        return Err(StoreError::UnknownRun(run_id.to_string()));
    }
    let last: Option<u64> = conn
        .prepare_cached("SELECT MAX(last_seq) FROM event_blocks WHERE run_id = ?1")
        .and_then(|mut s| s.query_row([run_id], |r| r.get(0)))
        .map_err(backend)?;
    Ok(last.unwrap_or(0))
}

/// Inserts one block: events of one run, in order, as one JSON array.
fn insert_block(conn: &Connection, run_id: &str, events: &[&RunEvent]) -> Result<(), StoreError> {
    let (Some(first), Some(last)) = (events.first(), events.last()) else { return Ok(()) };
    let json = to_json(&events)?;
    conn.prepare_cached("INSERT INTO event_blocks (run_id, first_seq, last_seq, events) VALUES (?1, ?2, ?3, ?4)")
        .and_then(|mut s| s.execute(params![run_id, first.seq, last.seq, json]))
        .map_err(backend)?;
    Ok(())
}

/// Stores (or replaces) a report of a known run.
pub(super) fn put_report(conn: &Connection, run_id: &str, format: &str, content: &str) -> Result<(), StoreError> {
    if !run_exists(conn, run_id)? {
        return Err(StoreError::UnknownRun(run_id.to_string()));
    }
    conn.prepare_cached(
        "INSERT INTO reports (run_id, format, content) VALUES (?1, ?2, ?3) \
         ON CONFLICT (run_id, format) DO UPDATE SET content = excluded.content",
    )
    .and_then(|mut s| s.execute(params![run_id, format, content]))
    .map_err(backend)?;
    Ok(())
}

/// Ends each of `dead` (runs whose owner was found dead) that is still running with
/// an `interrupted` event after its last one. The status is checked again here, in
/// the write transaction, so a run another process marked or finished meanwhile is
/// left alone. Returns the runs marked.
pub(super) fn interrupt(conn: &Connection, dead: &[String], now_ms: u64) -> Result<Vec<String>, StoreError> {
    let mut marked = Vec::new();
    for id in dead {
        let last: Option<u64> = conn
            .prepare_cached(
                "SELECT (SELECT COALESCE(MAX(last_seq), 0) FROM event_blocks WHERE run_id = runs.id) \
                 FROM runs WHERE id = ?1 AND status = 'running'",
            )
            .and_then(|mut s| s.query_row([id], |r| r.get(0)).optional())
            .map_err(backend)?;
        if let Some(last) = last {
            append_event(conn, &interrupted_event(id, last + 1, now_ms))?;
            marked.push(id.clone());
        }
    }
    Ok(marked)
}

/// Remembers the dialect a provider's server takes (replacing what was known).
pub(super) fn remember_endpoint_dialect(
    conn: &Connection,
    provider: &str,
    endpoint: &str,
    dialect: OutputDialect,
    now_ms: u64,
) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO endpoint_dialects (provider, endpoint, dialect, updated_ms) VALUES (?1, ?2, ?3, ?4) \
         ON CONFLICT (provider, endpoint) DO UPDATE SET dialect = excluded.dialect, updated_ms = excluded.updated_ms",
    )
    .and_then(|mut s| s.execute(params![provider, endpoint, dialect.as_str(), now_ms as i64]))
    .map_err(backend)?;
    Ok(())
}

/// Keeps `entry` under `key`, replacing what was there.
pub(super) fn cache_output(conn: &Connection, key: &str, entry: &CachedOutput) -> Result<(), StoreError> {
    let output = serde_json::to_string(&entry.output).map_err(|e| StoreError::Backend(e.to_string()))?;
    conn.prepare_cached(
        "INSERT INTO node_cache (key, output_json, run_id, node_id, stored_ms, expires_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
         ON CONFLICT (key) DO UPDATE SET output_json = excluded.output_json, run_id = excluded.run_id, \
         node_id = excluded.node_id, stored_ms = excluded.stored_ms, expires_ms = excluded.expires_ms",
    )
    .and_then(|mut s| {
        s.execute(params![
            key,
            output,
            entry.run_id,
            entry.node_id,
            entry.stored_ms as i64,
            entry.expires_ms.map(|e| e as i64)
        ])
    })
    .map_err(backend)?;
    Ok(())
}

/// Keeps an eval: its listing's figures as columns, its summary as the JSON the caller
/// serialized; an eval kept under the same id is replaced.
pub(super) fn put_eval(conn: &Connection, eval: &EvalListing, summary_json: &str) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO evals (id, conclave, dataset, created_ms, cases, precision, recall, f1, summary_json) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) \
         ON CONFLICT (id) DO UPDATE SET conclave = excluded.conclave, dataset = excluded.dataset, \
         created_ms = excluded.created_ms, cases = excluded.cases, precision = excluded.precision, \
         recall = excluded.recall, f1 = excluded.f1, summary_json = excluded.summary_json",
    )
    .and_then(|mut s| {
        s.execute(params![
            eval.id,
            eval.conclave,
            eval.dataset,
            eval.created_ms as i64,
            eval.cases as i64,
            eval.precision,
            eval.recall,
            eval.f1,
            summary_json
        ])
    })
    .map_err(backend)?;
    Ok(())
}
