//! Rows of the PostgreSQL store: applying events' `effect_of` to run rows, and a
//! run's nodes folded from its events. Unlike the SQLite store, which keeps a row per
//! node, a running run's nodes are its event log, and a run that ends stores them as
//! they ended in one JSON value.

use conclave_core::StoreError;
use conclave_shared::{Conclave, Effect, NodeSummary, RunEvent, RunStatus, RunSummary, effect_of};
use deadpool_postgres::GenericClient;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::connection::backend;
use super::values::{from_db_int, from_json, to_db_int, to_json};
use crate::folds::{Folds, fold_events};

/// The columns of a run row that [`summary_from_row`] reads, with the JSON of its
/// input's `pull_request` (`->` gives any value as JSON text), extracted in SQL so a
/// listing never sends a whole input (a review's holds its diff).
pub(super) const SUMMARY_COLUMNS: &str = "id, conclave_id, status, created_ms, finished_ms, failed_node, error, \
     (input_json::json -> 'pull_request')::text AS pull_request";

/// Applies the effects of `events`, whose blocks the caller has already inserted. A
/// running run's node state is its event log (`get_run` folds it), so most events
/// change nothing; a run's end writes the run's status and its nodes as they ended
/// (`nodes_json`): from the writer's fold of the run when it has one, else folded
/// from all of its stored events.
pub(super) async fn apply_effects<C: GenericClient + Sync>(
    tx: &C,
    events: &[&RunEvent],
    mut folds: Option<&mut Folds>,
) -> Result<(), StoreError> {
    for event in events {
        if let Some(folds) = folds.as_deref_mut() {
            folds.apply(event);
        }
        let effect = effect_of(event);
        if let Effect::RunStatus(status) = effect {
            let statement = tx.prepare_cached("UPDATE runs SET status = $2 WHERE id = $1").await.map_err(backend)?;
            tx.execute(&statement, &[&event.run_id, &status.as_str()]).await.map_err(backend)?;
        } else if let Effect::RunEnd { status, failed_node, error, .. } = effect {
            let nodes = match folds.as_deref_mut().and_then(|f| f.finish(&event.run_id)) {
                Some(nodes) => nodes,
                None => {
                    let statement =
                        tx.prepare_cached("SELECT conclave_json FROM runs WHERE id = $1").await.map_err(backend)?;
                    let row = tx.query_one(&statement, &[&event.run_id]).await.map_err(backend)?;
                    let conclave: Conclave = from_json(&event.run_id, row.try_get(0).map_err(backend)?)?;
                    fold_nodes(tx, &event.run_id, conclave).await?
                }
            };
            let statement = tx
                .prepare_cached(
                    "UPDATE runs SET status = $2, finished_ms = $3, failed_node = $4, error = $5, nodes_json = $6 \
                     WHERE id = $1",
                )
                .await
                .map_err(backend)?;
            let params: [&(dyn ToSql + Sync); 6] =
                [&event.run_id, &status.as_str(), &to_db_int(event.at_ms), &failed_node, &error, &to_json(&nodes)?];
            tx.execute(&statement, &params).await.map_err(backend)?;
        }
    }
    Ok(())
}

/// A run's nodes as its stored events leave them.
pub(super) async fn fold_nodes<C: GenericClient + Sync>(
    client: &C,
    run_id: &str,
    conclave: Conclave,
) -> Result<Vec<NodeSummary>, StoreError> {
    Ok(fold_events(run_id, conclave, &read_events(client, run_id, 0).await?))
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

/// Reads the [`SUMMARY_COLUMNS`] of a run row.
pub(super) fn summary_from_row(row: &Row) -> Result<RunSummary, tokio_postgres::Error> {
    let status: String = row.try_get("status")?;
    let pull_request: Option<String> = row.try_get("pull_request")?;
    Ok(RunSummary {
        id: row.try_get("id")?,
        conclave_id: row.try_get("conclave_id")?,
        status: RunStatus::parse(&status).unwrap_or(RunStatus::Interrupted),
        created_ms: from_db_int(row.try_get("created_ms")?),
        finished_ms: row.try_get::<_, Option<i64>>("finished_ms")?.map(from_db_int),
        failed_node: row.try_get("failed_node")?,
        error: row.try_get("error")?,
        pull_request: crate::pull_request_row::label(pull_request.as_deref()),
    })
}
