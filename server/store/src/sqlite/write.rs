//! The writes, each applied by the writer thread inside its batch's transaction (in a
//! savepoint of its own). Run and node state are derived from each event through
//! `effect_of` in the same write, so a stored run always agrees with its event log.

use conclave_core::{StoreError, interrupted_event};
use conclave_shared::{Effect, NodeSummary, OutputDialect, RunEvent, effect_of};
use rusqlite::{Connection, OptionalExtension, params};
use std::collections::HashMap;

use super::schema::{NODE_COLUMNS, backend, node_from_row, read_nodes, run_exists, to_json};

/// A run to insert, serialized by the caller so the writer thread only writes.
#[derive(Debug)]
pub(super) struct RunRow {
    pub id: String,
    pub conclave_id: String,
    pub conclave_json: String,
    pub input_json: String,
    pub created_ms: u64,
    pub owner: String,
    pub node_ids: Vec<String>,
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
            node_ids: run.conclave.nodes.iter().map(|n| n.id.clone()).collect(),
            queue_spec,
        })
    }
}

/// Inserts a run in status `running` (or `queued`, for the queue) with every node
/// `queued`; a duplicate id fails.
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
    let mut insert = conn
        .prepare_cached("INSERT INTO nodes (run_id, position, node_id, state) VALUES (?1, ?2, ?3, 'queued')")
        .map_err(backend)?;
    for (position, node_id) in run.node_ids.iter().enumerate() {
        insert.execute(params![run.id, position, node_id]).map_err(backend)?;
    }
    Ok(())
}

/// Appends one event of a known run and applies its effect.
pub(super) fn append_event(conn: &Connection, event: &RunEvent) -> Result<(), StoreError> {
    append_events(conn, std::slice::from_ref(event), &mut NodeCache::default())
}

/// The node rows the writer last wrote, per run, so that the next write of a run's
/// events need not read them back. An entry holds as of the run's last sequence
/// number when it was made: a write finding any other last sequence number in the
/// file (another process wrote the run, or a batch was rolled back) drops it.
#[derive(Debug, Default)]
pub(super) struct NodeCache {
    runs: HashMap<String, (u64, HashMap<String, NodeSummary>)>,
}

/// Runs whose nodes the cache keeps; past that it starts again empty.
const CACHED_RUNS: usize = 64;

/// Appends events of known runs, in order, and applies their effects. The events of
/// each run go in one block; each run is looked up once, and each node the events
/// change is read (unless cached) and written once.
pub(super) fn append_events(conn: &Connection, events: &[RunEvent], cache: &mut NodeCache) -> Result<(), StoreError> {
    // Per run: its last sequence number and the events of its block, in order of arrival.
    let mut blocks: Vec<(&str, u64, Vec<&RunEvent>)> = Vec::new();
    // The nodes changed so far and not yet written, by run and node id.
    let mut changed: HashMap<(&str, String), NodeSummary> = HashMap::new();
    for event in events {
        let run_id = event.run_id.as_str();
        let at = match blocks.iter().position(|(id, _, _)| *id == run_id) {
            Some(at) => at,
            None => {
                let last = last_seq(conn, run_id)?;
                if cache.runs.get(run_id).is_some_and(|(seq, _)| *seq != last) {
                    cache.runs.remove(run_id);
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
        match effect_of(event) {
            Effect::None => {}
            Effect::Node { node_id, change } => {
                let key = (run_id, node_id);
                let cached = cache.runs.get_mut(run_id).and_then(|(_, nodes)| nodes.remove(&key.1));
                let node = match changed.remove(&key).or(cached) {
                    Some(node) => Some(node),
                    None => read_node(conn, run_id, &key.1)?,
                };
                // Events about nodes the run does not have change nothing, as in `RunRecord::apply`.
                if let Some(mut node) = node {
                    node.apply(change, event.at_ms);
                    changed.insert(key, node);
                }
            }
            Effect::RunEnd { status, failed_node, error, unfinished } => {
                // The run's end reads its node rows: write what changed first.
                write_nodes(conn, &mut changed, None)?;
                end_run(conn, event, status, failed_node, error, unfinished)?;
                cache.runs.remove(run_id);
            }
        }
    }
    if cache.runs.len() >= CACHED_RUNS {
        cache.runs.clear();
    }
    for (run_id, last, _) in &blocks {
        cache.runs.entry(run_id.to_string()).or_default().0 = *last;
    }
    write_nodes(conn, &mut changed, Some(cache))?;
    blocks.iter().try_for_each(|(run_id, _, block)| insert_block(conn, run_id, block))
}

/// Ends a run: its status, and its nodes that had not finished.
fn end_run(
    conn: &Connection,
    event: &RunEvent,
    status: conclave_shared::RunStatus,
    failed_node: Option<String>,
    error: Option<String>,
    unfinished: conclave_shared::NodeState,
) -> Result<(), StoreError> {
    conn.prepare_cached("UPDATE runs SET status = ?2, finished_ms = ?3, failed_node = ?4, error = ?5 WHERE id = ?1")
        .and_then(|mut s| s.execute(params![event.run_id, status.as_str(), event.at_ms, failed_node, error]))
        .map_err(backend)?;
    for mut node in read_nodes(conn, &event.run_id, "AND state IN ('queued', 'running')")? {
        node.end_unfinished(unfinished, event.at_ms);
        write_node(conn, &event.run_id, &node)?;
    }
    Ok(())
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

/// A node of a run, or `None` when the run has no such node.
fn read_node(conn: &Connection, run_id: &str, node_id: &str) -> Result<Option<NodeSummary>, StoreError> {
    let sql = format!("SELECT {NODE_COLUMNS} FROM nodes WHERE run_id = ?1 AND node_id = ?2");
    let node = conn
        .prepare_cached(&sql)
        .and_then(|mut s| s.query_row([run_id, node_id], |r| Ok(node_from_row(r))).optional())
        .map_err(backend)?;
    node.map(|n| n.map_err(|message| StoreError::Corrupt { run_id: run_id.to_string(), message })).transpose()
}

/// Writes the changed nodes and moves them into the cache, if given, under runs it
/// holds.
fn write_nodes(
    conn: &Connection,
    changed: &mut HashMap<(&str, String), NodeSummary>,
    mut cache: Option<&mut NodeCache>,
) -> Result<(), StoreError> {
    for ((run_id, node_id), node) in changed.drain() {
        write_node(conn, run_id, &node)?;
        if let Some((_, nodes)) = cache.as_mut().and_then(|c| c.runs.get_mut(run_id)) {
            nodes.insert(node_id, node);
        }
    }
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

/// Writes every column of a node row.
fn write_node(conn: &Connection, run_id: &str, node: &NodeSummary) -> Result<(), StoreError> {
    let output = node.output.as_ref().map(to_json).transpose()?;
    let usage = node.usage.as_ref().map(to_json).transpose()?;
    conn.prepare_cached(
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
