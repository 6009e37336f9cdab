//! Reads that find a run's row, a baseline or a page of events without loading a run
//! whole: `run_summary` reads one row, `latest_review` is one query on the
//! `runs_reviews` index, and `events_page` fetches event blocks a few at a time
//! through a portal until the page is full, so a long log is never read at once.

use conclave_core::{ReviewOf, StoreError};
use conclave_shared::{RunEvent, RunSummary};
use deadpool_postgres::Client;

use super::rows::{SUMMARY_COLUMNS, summary_from_row};
use super::{backend, from_json, to_db_int};

/// Event blocks fetched from the portal per round trip; a block holds the events one
/// write appended.
const BLOCKS_PER_FETCH: i32 = 8;

/// The one query behind `RunStore::latest_review`, on the `runs_reviews` index.
pub(super) const LATEST_REVIEW: &str = "SELECT id FROM runs WHERE status = 'succeeded' \
     AND (input_json::jsonb ->> 'repository') = $1 \
     AND (input_json::jsonb #>> '{head,branch}') = ANY($2) \
     ORDER BY created_ms DESC, id DESC LIMIT 1";

/// A run's row, without its nodes.
pub(super) async fn run_summary(client: &Client, run_id: &str) -> Result<Option<RunSummary>, StoreError> {
    let statement =
        client.prepare_cached(&format!("SELECT {SUMMARY_COLUMNS} FROM runs WHERE id = $1")).await.map_err(backend)?;
    let row = client.query_opt(&statement, &[&run_id]).await.map_err(backend)?;
    row.map(|row| summary_from_row(&row).map_err(backend)).transpose()
}

/// The newest succeeded review of one of the branches of a repository.
pub(super) async fn latest_review(client: &Client, review: &ReviewOf) -> Result<Option<String>, StoreError> {
    let statement = client.prepare_cached(LATEST_REVIEW).await.map_err(backend)?;
    let row = client.query_opt(&statement, &[&review.repository, &review.branches]).await.map_err(backend)?;
    row.map(|row| row.try_get(0).map_err(backend)).transpose()
}

/// The first `limit` events after `after_seq`, or `UnknownRun`.
pub(super) async fn events_page(
    client: &mut Client,
    run_id: &str,
    after_seq: u64,
    limit: usize,
) -> Result<Vec<RunEvent>, StoreError> {
    let tx = client.transaction().await.map_err(backend)?;
    let exists = tx.prepare_cached("SELECT 1 FROM runs WHERE id = $1").await.map_err(backend)?;
    if tx.query_opt(&exists, &[&run_id]).await.map_err(backend)?.is_none() {
        return Err(StoreError::UnknownRun(run_id.to_string()));
    }
    let blocks = tx
        .prepare_cached("SELECT events FROM event_blocks WHERE run_id = $1 AND last_seq > $2 ORDER BY last_seq")
        .await
        .map_err(backend)?;
    let portal = tx.bind(&blocks, &[&run_id, &to_db_int(after_seq)]).await.map_err(backend)?;
    let mut events = Vec::new();
    while events.len() < limit {
        let rows = tx.query_portal(&portal, BLOCKS_PER_FETCH).await.map_err(backend)?;
        for row in &rows {
            let block: Vec<RunEvent> = from_json(run_id, row.try_get(0).map_err(backend)?)?;
            // The first block may begin before `after_seq`.
            let wanted = limit.saturating_sub(events.len());
            events.extend(block.into_iter().filter(|e| e.seq > after_seq).take(wanted));
        }
        if rows.len() < BLOCKS_PER_FETCH as usize {
            break;
        }
    }
    tx.commit().await.map_err(backend)?;
    Ok(events)
}
