//! Rows of the PostgreSQL store: reading and writing node rows, and applying one
//! event's `effect_of` to the node and run rows, as the SQLite store does.

use conclave_core::StoreError;
use conclave_shared::{Effect, NodeState, NodeSummary, RunEvent, RunStatus, RunSummary, effect_of};
use deadpool_postgres::GenericClient;
use std::collections::HashMap;
use tokio_postgres::Row;

use super::{backend, corrupt, from_db_int, to_db_int, to_json};

/// The columns of a node row, in the order [`node_from_row`] reads them.
const NODE_COLUMNS: &str =
    "node_id, state, output_json, error, usage_json, input, attempts, started_ms, finished_ms, reused_from";

/// The columns of a run row that [`summary_from_row`] reads.
pub(super) const SUMMARY_COLUMNS: &str = "id, conclave_id, status, created_ms, finished_ms, failed_node, error";

/// Changes the node and run rows as `event` says; the event row itself is written by
/// the caller. Events about nodes the run does not have change nothing, as in
/// `RunRecord::apply`.
pub(super) async fn apply_effect<C: GenericClient + Sync>(tx: &C, event: &RunEvent) -> Result<(), StoreError> {
    match effect_of(event) {
        Effect::None => {}
        Effect::Node { node_id, change } => {
            let sql = format!("SELECT {NODE_COLUMNS} FROM nodes WHERE run_id = $1 AND node_id = $2");
            let statement = tx.prepare_cached(&sql).await.map_err(backend)?;
            let row = tx.query_opt(&statement, &[&event.run_id, &node_id]).await.map_err(backend)?;
            if let Some(row) = row {
                let mut node = node_from_row(&row).map_err(|message| corrupt(&event.run_id, message))?;
                node.apply(change, event.at_ms);
                write_node(tx, &event.run_id, &node).await?;
            }
        }
        Effect::RunEnd { status, failed_node, error, unfinished } => {
            let statement = tx
                .prepare_cached(
                    "UPDATE runs SET status = $2, finished_ms = $3, failed_node = $4, error = $5 WHERE id = $1",
                )
                .await
                .map_err(backend)?;
            tx.execute(&statement, &[&event.run_id, &status.as_str(), &to_db_int(event.at_ms), &failed_node, &error])
                .await
                .map_err(backend)?;
            for mut node in read_nodes(tx, &event.run_id, "AND state IN ('queued', 'running')").await? {
                node.end_unfinished(unfinished, event.at_ms);
                write_node(tx, &event.run_id, &node).await?;
            }
        }
    }
    Ok(())
}

/// Changes the node and run rows as `events` say, in order, as [`apply_effect`] would
/// for each, in a few statements: the nodes a stretch of events touches are read in
/// one query and written back in one `UPDATE`. A run's end, which reads the run's
/// node rows, ends a stretch.
pub(super) async fn apply_effects<C: GenericClient + Sync>(tx: &C, events: &[&RunEvent]) -> Result<(), StoreError> {
    let mut stretch: Vec<(&RunEvent, String, conclave_shared::NodeChange)> = Vec::new();
    for event in events {
        match effect_of(event) {
            Effect::None => {}
            Effect::Node { node_id, change } => stretch.push((event, node_id, change)),
            Effect::RunEnd { .. } => {
                apply_node_changes(tx, std::mem::take(&mut stretch)).await?;
                apply_effect(tx, event).await?;
            }
        }
    }
    apply_node_changes(tx, stretch).await
}

/// Applies node changes in order: one query reads the nodes, one writes them back.
async fn apply_node_changes<C: GenericClient + Sync>(
    tx: &C,
    changes: Vec<(&RunEvent, String, conclave_shared::NodeChange)>,
) -> Result<(), StoreError> {
    if changes.is_empty() {
        return Ok(());
    }
    let run_ids: Vec<&str> = changes.iter().map(|(e, _, _)| e.run_id.as_str()).collect();
    let node_ids: Vec<&str> = changes.iter().map(|(_, n, _)| n.as_str()).collect();
    let sql = format!(
        "SELECT run_id, {NODE_COLUMNS} FROM nodes \
         WHERE (run_id, node_id) IN (SELECT * FROM UNNEST($1::text[], $2::text[]))"
    );
    let statement = tx.prepare_cached(&sql).await.map_err(backend)?;
    let mut nodes: HashMap<(String, String), NodeSummary> = HashMap::new();
    for row in tx.query(&statement, &[&run_ids, &node_ids]).await.map_err(backend)? {
        let run_id: String = row.get(0);
        let node = node_from_row_at(&row, 1).map_err(|message| corrupt(&run_id, message))?;
        nodes.insert((run_id, node.node_id.clone()), node);
    }
    // Events about nodes the run does not have change nothing, as in `RunRecord::apply`.
    for (event, node_id, change) in changes {
        if let Some(node) = nodes.get_mut(&(event.run_id.clone(), node_id)) {
            node.apply(change, event.at_ms);
        }
    }
    write_nodes(tx, nodes).await
}

/// Writes every column of several node rows with one `UPDATE`.
async fn write_nodes<C: GenericClient + Sync>(
    tx: &C,
    nodes: HashMap<(String, String), NodeSummary>,
) -> Result<(), StoreError> {
    let mut columns = NodeColumns::default();
    for ((run_id, _), node) in &nodes {
        columns.push(run_id, node)?;
    }
    let statement = tx
        .prepare_cached(
            "UPDATE nodes SET state = v.state, output_json = v.output_json, error = v.error, \
             usage_json = v.usage_json, input = v.input, attempts = v.attempts, started_ms = v.started_ms, \
             finished_ms = v.finished_ms, reused_from = v.reused_from \
             FROM UNNEST($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], \
             $8::int[], $9::bigint[], $10::bigint[], $11::text[]) \
             AS v(run_id, node_id, state, output_json, error, usage_json, input, attempts, started_ms, \
             finished_ms, reused_from) \
             WHERE nodes.run_id = v.run_id AND nodes.node_id = v.node_id",
        )
        .await
        .map_err(backend)?;
    let c = &columns;
    tx.execute(
        &statement,
        &[
            &c.run_ids,
            &c.node_ids,
            &c.states,
            &c.outputs,
            &c.errors,
            &c.usages,
            &c.inputs,
            &c.attempts,
            &c.started,
            &c.finished,
            &c.reused_from,
        ],
    )
    .await
    .map_err(backend)?;
    Ok(())
}

/// Node rows as one array per column, for `UNNEST`.
#[derive(Debug, Default)]
struct NodeColumns {
    run_ids: Vec<String>,
    node_ids: Vec<String>,
    states: Vec<&'static str>,
    outputs: Vec<Option<String>>,
    errors: Vec<Option<String>>,
    usages: Vec<Option<String>>,
    inputs: Vec<Option<String>>,
    attempts: Vec<i32>,
    started: Vec<Option<i64>>,
    finished: Vec<Option<i64>>,
    reused_from: Vec<Option<String>>,
}

impl NodeColumns {
    fn push(&mut self, run_id: &str, node: &NodeSummary) -> Result<(), StoreError> {
        self.run_ids.push(run_id.to_string());
        self.node_ids.push(node.node_id.clone());
        self.states.push(node.state.as_str());
        self.outputs.push(node.output.as_ref().map(to_json).transpose()?);
        self.errors.push(node.error.clone());
        self.usages.push(node.usage.as_ref().map(to_json).transpose()?);
        self.inputs.push(node.input.clone());
        self.attempts.push(i32::try_from(node.attempts).unwrap_or(i32::MAX));
        self.started.push(node.started_ms.map(to_db_int));
        self.finished.push(node.finished_ms.map(to_db_int));
        self.reused_from.push(node.reused_from.clone());
        Ok(())
    }
}

/// The run's nodes matching `filter` (an `AND ...` clause), in conclave order.
pub(super) async fn read_nodes<C: GenericClient + Sync>(
    client: &C,
    run_id: &str,
    filter: &str,
) -> Result<Vec<NodeSummary>, StoreError> {
    let sql = format!("SELECT {NODE_COLUMNS} FROM nodes WHERE run_id = $1 {filter} ORDER BY position");
    let statement = client.prepare_cached(&sql).await.map_err(backend)?;
    let rows = client.query(&statement, &[&run_id]).await.map_err(backend)?;
    rows.iter().map(|row| node_from_row(row).map_err(|message| corrupt(run_id, message))).collect()
}

/// Writes every column of a node row.
async fn write_node<C: GenericClient + Sync>(tx: &C, run_id: &str, node: &NodeSummary) -> Result<(), StoreError> {
    let output = node.output.as_ref().map(to_json).transpose()?;
    let usage = node.usage.as_ref().map(to_json).transpose()?;
    let attempts = i32::try_from(node.attempts).unwrap_or(i32::MAX);
    let statement = tx
        .prepare_cached(
            "UPDATE nodes SET state = $3, output_json = $4, error = $5, usage_json = $6, input = $7, attempts = $8, \
             started_ms = $9, finished_ms = $10, reused_from = $11 WHERE run_id = $1 AND node_id = $2",
        )
        .await
        .map_err(backend)?;
    tx.execute(
        &statement,
        &[
            &run_id,
            &node.node_id,
            &node.state.as_str(),
            &output,
            &node.error,
            &usage,
            &node.input,
            &attempts,
            &node.started_ms.map(to_db_int),
            &node.finished_ms.map(to_db_int),
            &node.reused_from,
        ],
    )
    .await
    .map_err(backend)?;
    Ok(())
}

/// Reads a node row; the error says what is unreadable.
fn node_from_row(row: &Row) -> Result<NodeSummary, String> {
    node_from_row_at(row, 0)
}

/// Reads a node row whose columns start at column `at`.
fn node_from_row_at(row: &Row, at: usize) -> Result<NodeSummary, String> {
    let text = |i: usize| row.try_get::<_, Option<String>>(at + i).map_err(|e| e.to_string());
    let int = |i: usize| row.try_get::<_, Option<i64>>(at + i).map(|v| v.map(from_db_int)).map_err(|e| e.to_string());
    let state: String = row.try_get(at + 1).map_err(|e| e.to_string())?;
    let attempts: i32 = row.try_get(at + 6).map_err(|e| e.to_string())?;
    Ok(NodeSummary {
        node_id: row.try_get(at).map_err(|e| e.to_string())?,
        state: NodeState::parse(&state).ok_or_else(|| format!("unknown node state `{state}`"))?,
        output: parse(text(2)?)?,
        error: text(3)?,
        usage: parse(text(4)?)?,
        input: text(5)?,
        attempts: u32::try_from(attempts).unwrap_or(0),
        started_ms: int(7)?,
        finished_ms: int(8)?,
        reused_from: text(9)?,
    })
}

fn parse<T: serde::de::DeserializeOwned>(text: Option<String>) -> Result<Option<T>, String> {
    text.map(|t| serde_json::from_str(&t).map_err(|e| e.to_string())).transpose()
}

/// Reads the [`SUMMARY_COLUMNS`] of a run row.
pub(super) fn summary_from_row(row: &Row) -> Result<RunSummary, tokio_postgres::Error> {
    let status: String = row.try_get("status")?;
    Ok(RunSummary {
        id: row.try_get("id")?,
        conclave_id: row.try_get("conclave_id")?,
        status: RunStatus::parse(&status).unwrap_or(RunStatus::Interrupted),
        created_ms: from_db_int(row.try_get("created_ms")?),
        finished_ms: row.try_get::<_, Option<i64>>("finished_ms")?.map(from_db_int),
        failed_node: row.try_get("failed_node")?,
        error: row.try_get("error")?,
    })
}
