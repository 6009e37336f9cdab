//! The webhook dispatcher's records of pull requests in PostgreSQL: one row per
//! forge, repository and number, replaced whole by each put (`ON CONFLICT DO
//! UPDATE`, so two servers putting one request at once leave one of the two whole);
//! the busy ones read least recently changed first on a partial index.

use conclave_core::StoreError;
use conclave_shared::delivery::{Forge, PullRequestReviews};
use deadpool_postgres::Client;
use tokio_postgres::Row;

use super::connection::backend;
use crate::delivery_row::to_int;
use crate::pull_request_row::{COLUMNS, PullRequestRow, READ_COLUMNS, Stored, read};

/// The record of one request, if there is one.
pub(super) async fn pull_request(
    client: &Client,
    forge: Forge,
    repository: &str,
    number: u64,
) -> Result<Option<PullRequestReviews>, StoreError> {
    let sql = format!("SELECT {READ_COLUMNS} FROM pull_requests WHERE forge = $1 AND repository = $2 AND number = $3");
    let statement = client.prepare_cached(&sql).await.map_err(backend)?;
    let row = client.query_opt(&statement, &[&forge.name(), &repository, &to_int(number)]).await.map_err(backend)?;
    row.as_ref().map(read_row).transpose()
}

/// Keeps a record, replacing the request's earlier one.
pub(super) async fn put_pull_request(client: &Client, reviews: &PullRequestReviews) -> Result<(), StoreError> {
    let r = PullRequestRow::of(reviews)?;
    let sql = format!(
        "INSERT INTO pull_requests ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6) \
         ON CONFLICT (forge, repository, number) DO UPDATE SET \
         busy = excluded.busy, updated_ms = excluded.updated_ms, record_json = excluded.record_json"
    );
    let statement = client.prepare_cached(&sql).await.map_err(backend)?;
    client
        .execute(&statement, &[&r.forge, &r.repository, &r.number, &r.busy, &r.updated_ms, &r.record_json])
        .await
        .map_err(backend)?;
    Ok(())
}

/// The busy records, least recently changed first, at most `limit`.
pub(super) async fn busy_pull_requests(client: &Client, limit: usize) -> Result<Vec<PullRequestReviews>, StoreError> {
    let statement = client.prepare_cached(&busy_query()).await.map_err(backend)?;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = client.query(&statement, &[&limit]).await.map_err(backend)?;
    rows.iter().map(read_row).collect()
}

/// The query behind [`busy_pull_requests`], on the `pull_requests_busy` index, whose
/// condition is `busy` and whose columns are the order.
pub(super) fn busy_query() -> String {
    format!(
        "SELECT {READ_COLUMNS} FROM pull_requests WHERE busy ORDER BY updated_ms, forge, repository, number LIMIT $1"
    )
}

/// The record in a row of [`READ_COLUMNS`].
fn read_row(row: &Row) -> Result<PullRequestReviews, StoreError> {
    read(stored(row).map_err(backend)?)
}

/// The values of a row's [`READ_COLUMNS`].
fn stored(row: &Row) -> Result<Stored, tokio_postgres::Error> {
    Ok((row.try_get(0)?, row.try_get(1)?, row.try_get(2)?, row.try_get(3)?))
}
