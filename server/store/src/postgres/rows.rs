//! Rows of the PostgreSQL store: reading and writing node rows, and applying one
//! event's `effect_of` to the node and run rows. Unlike the SQLite store, a run has
//! node rows only once it has ended: while it runs, its nodes are its event log.

use conclave_core::StoreError;
use conclave_shared::{
    Conclave, Effect, NodeState, NodeSummary, RunEvent, RunRecord, RunStatus, RunSummary, effect_of,
};
use deadpool_postgres::GenericClient;
use std::collections::HashMap;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::folds::Folds;
use super::{backend, corrupt, from_db_int, from_json, to_db_int, to_json};

/// The columns of a node row, in the order [`node_from_row`] reads them.
const NODE_COLUMNS: &str =
    "node_id, state, output_json, error, usage_json, input, attempts, started_ms, finished_ms, reused_from";

/// The columns of a run row that [`summary_from_row`] reads.
pub(super) const SUMMARY_COLUMNS: &str = "id, conclave_id, status, created_ms, finished_ms, failed_node, error";

/// Applies the effects of `events`, whose blocks the caller has already inserted. A
/// running run's node state is its event log (`get_run` folds it), so most events
/// change no row; a run's end writes the run's status and its nodes' final rows:
/// from the writer's fold of the run when it has one, else folded from all of its
/// stored events.
pub(super) async fn apply_effects<C: GenericClient + Sync>(
    tx: &C,
    events: &[&RunEvent],
    mut folds: Option<&mut Folds>,
) -> Result<(), StoreError> {
    for event in events {
        if let Some(folds) = folds.as_deref_mut() {
            folds.apply(event);
        }
        if let Effect::RunEnd { status, failed_node, error, .. } = effect_of(event) {
            let statement = tx
                .prepare_cached(
                    "UPDATE runs SET status = $2, finished_ms = $3, failed_node = $4, error = $5 WHERE id = $1 \
                     RETURNING CASE WHEN $6 THEN NULL ELSE conclave_json END",
                )
                .await
                .map_err(backend)?;
            let folded = folds.as_deref_mut().and_then(|f| f.finish(&event.run_id));
            let params: [&(dyn ToSql + Sync); 6] =
                [&event.run_id, &status.as_str(), &to_db_int(event.at_ms), &failed_node, &error, &folded.is_some()];
            let row = tx.query_one(&statement, &params).await.map_err(backend)?;
            let nodes = match folded {
                Some(nodes) => nodes,
                None => {
                    let conclave: Conclave = from_json(&event.run_id, row.try_get(0).map_err(backend)?)?;
                    fold_nodes(tx, &event.run_id, conclave).await?
                }
            };
            write_nodes(tx, &event.run_id, &nodes).await?;
        }
    }
    Ok(())
}

/// A run's nodes as its events leave them: every node of its conclave `queued`, then
/// each event applied in order, as `RunRecord::apply` does.
pub(super) async fn fold_nodes<C: GenericClient + Sync>(
    client: &C,
    run_id: &str,
    conclave: Conclave,
) -> Result<Vec<NodeSummary>, StoreError> {
    let mut record = RunRecord::new(run_id.to_string(), conclave, serde_json::Value::Null, 0);
    let positions: HashMap<String, usize> =
        record.nodes.iter().enumerate().map(|(i, n)| (n.node_id.clone(), i)).collect();
    for event in read_events(client, run_id, 0).await? {
        record.apply_indexed(&event, &positions);
    }
    Ok(record.nodes)
}

/// A run's events with `seq > after_seq`, in order, read from their blocks.
pub(super) async fn read_events<C: GenericClient + Sync>(
    client: &C,
    run_id: &str,
    after_seq: u64,
) -> Result<Vec<RunEvent>, StoreError> {
    let statement = client
        .prepare_cached("SELECT events FROM event_blocks WHERE run_id = $1 AND last_seq > $2 ORDER BY last_seq")
        .await
        .map_err(backend)?;
    let rows = client.query(&statement, &[&run_id, &to_db_int(after_seq)]).await.map_err(backend)?;
    let mut events = Vec::new();
    for row in rows {
        let block: Vec<RunEvent> = from_json(run_id, row.try_get(0).map_err(backend)?)?;
        // The first block may begin before `after_seq`.
        events.extend(block.into_iter().filter(|e| e.seq > after_seq));
    }
    Ok(events)
}

/// Writes every column of a run's node rows with one statement. A run has node rows
/// only once it has ended (a running run's nodes are its event log); one that ends
/// again after being resumed has them replaced.
async fn write_nodes<C: GenericClient + Sync>(tx: &C, run_id: &str, nodes: &[NodeSummary]) -> Result<(), StoreError> {
    let mut columns = NodeColumns::default();
    for node in nodes {
        columns.push(node)?;
    }
    let statement = tx
        .prepare_cached(
            "INSERT INTO nodes (run_id, position, node_id, state, output_json, error, usage_json, input, attempts, \
             started_ms, finished_ms, reused_from) \
             SELECT $1, v.position - 1, v.node_id, v.state, v.output_json, v.error, v.usage_json, v.input, \
             v.attempts, v.started_ms, v.finished_ms, v.reused_from \
             FROM UNNEST($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::int[], \
             $9::bigint[], $10::bigint[], $11::text[]) WITH ORDINALITY \
             AS v(node_id, state, output_json, error, usage_json, input, attempts, started_ms, finished_ms, \
             reused_from, position) \
             ON CONFLICT (run_id, node_id) DO UPDATE SET position = excluded.position, state = excluded.state, \
             output_json = excluded.output_json, error = excluded.error, usage_json = excluded.usage_json, \
             input = excluded.input, attempts = excluded.attempts, started_ms = excluded.started_ms, \
             finished_ms = excluded.finished_ms, reused_from = excluded.reused_from",
        )
        .await
        .map_err(backend)?;
    let c = &columns;
    tx.execute(
        &statement,
        &[
            &run_id,
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
    fn push(&mut self, node: &NodeSummary) -> Result<(), StoreError> {
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

/// Reads a node row; the error says what is unreadable.
fn node_from_row(row: &Row) -> Result<NodeSummary, String> {
    let text = |i: usize| row.try_get::<_, Option<String>>(i).map_err(|e| e.to_string());
    let int = |i: usize| row.try_get::<_, Option<i64>>(i).map(|v| v.map(from_db_int)).map_err(|e| e.to_string());
    let state: String = row.try_get(1).map_err(|e| e.to_string())?;
    let attempts: i32 = row.try_get(6).map_err(|e| e.to_string())?;
    Ok(NodeSummary {
        node_id: row.try_get(0).map_err(|e| e.to_string())?,
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
