//! The webhook dispatcher's records of pull requests in the SQLite file: one row per
//! forge, repository and number, replaced whole by each put; the busy ones read least
//! recently changed first on a partial index.

use conclave_core::StoreError;
use conclave_shared::delivery::{Forge, PullRequestReviews};
use rusqlite::{Connection, OptionalExtension, params};

use super::schema::backend;
use crate::delivery_row::to_int;
use crate::pull_request_row::{COLUMNS, PullRequestRow, READ_COLUMNS, Stored, read};

/// The record of one request, if there is one.
pub(super) fn pull_request(
    conn: &Connection,
    forge: Forge,
    repository: &str,
    number: u64,
) -> Result<Option<PullRequestReviews>, StoreError> {
    let sql = format!("SELECT {READ_COLUMNS} FROM pull_requests WHERE forge = ?1 AND repository = ?2 AND number = ?3");
    conn.prepare_cached(&sql)
        .and_then(|mut s| s.query_row(params![forge.name(), repository, to_int(number)], read_columns).optional())
        .map_err(backend)?
        .map(read)
        .transpose()
}

/// Keeps a record, replacing the request's earlier one. A writer job.
pub(super) fn put_pull_request(conn: &Connection, reviews: &PullRequestReviews) -> Result<(), StoreError> {
    let r = PullRequestRow::of(reviews)?;
    let sql = format!(
        "INSERT INTO pull_requests ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
         ON CONFLICT (forge, repository, number) DO UPDATE SET \
         busy = excluded.busy, updated_ms = excluded.updated_ms, record_json = excluded.record_json"
    );
    conn.prepare_cached(&sql)
        .and_then(|mut s| s.execute(params![r.forge, r.repository, r.number, r.busy, r.updated_ms, r.record_json]))
        .map_err(backend)?;
    Ok(())
}

/// The busy records, least recently changed first, at most `limit`.
pub(super) fn busy_pull_requests(conn: &Connection, limit: usize) -> Result<Vec<PullRequestReviews>, StoreError> {
    let mut stmt = conn.prepare_cached(&busy_query()).map_err(backend)?;
    let rows = stmt.query_map(params![i64::try_from(limit).unwrap_or(i64::MAX)], read_columns).map_err(backend)?;
    rows.map(|row| row.map_err(backend).and_then(read)).collect()
}

/// The query behind [`busy_pull_requests`]: `busy = 1` is the `pull_requests_busy`
/// index's own condition and its columns are the order, so SQLite reads that index
/// in order and sorts nothing.
pub(super) fn busy_query() -> String {
    format!(
        "SELECT {READ_COLUMNS} FROM pull_requests WHERE busy = 1 ORDER BY updated_ms, forge, repository, number LIMIT ?1"
    )
}

/// The [`READ_COLUMNS`] of a row.
fn read_columns(row: &rusqlite::Row) -> rusqlite::Result<Stored> {
    Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
}
