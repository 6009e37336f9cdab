//! Dismissals in the SQLite file: one row per repository and fingerprint, the first
//! kept (a later one of the same finding is ignored), listed by repository then
//! fingerprint on the table's primary key.

use conclave_core::{StoreError, StoredDismissal};
use rusqlite::{Connection, params};

use super::schema::backend;

/// Keeps a dismissal unless its repository already has one of that fingerprint;
/// whether it was new. A writer job.
pub(super) fn put_dismissal(conn: &Connection, d: &StoredDismissal) -> Result<bool, StoreError> {
    let created = i64::try_from(d.created_at_ms).unwrap_or(i64::MAX);
    let inserted = conn
        .prepare_cached(
            "INSERT INTO dismissals (repository, fingerprint, reason, author, created_ms, source) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (repository, fingerprint) DO NOTHING",
        )
        .and_then(|mut s| s.execute(params![d.repository, d.fingerprint, d.reason, d.author, created, d.source]))
        .map_err(backend)?;
    Ok(inserted == 1)
}

/// The dismissals of `repository`, or of all, by repository then fingerprint.
pub(super) fn dismissals(conn: &Connection, repository: Option<&str>) -> Result<Vec<StoredDismissal>, StoreError> {
    let sql = "SELECT repository, fingerprint, reason, author, created_ms, source FROM dismissals \
               WHERE ?1 IS NULL OR repository = ?1 ORDER BY repository, fingerprint";
    let mut stmt = conn.prepare_cached(sql).map_err(backend)?;
    let rows = stmt
        .query_map(params![repository], |r| {
            Ok(StoredDismissal {
                repository: r.get(0)?,
                fingerprint: r.get(1)?,
                reason: r.get(2)?,
                author: r.get(3)?,
                created_at_ms: u64::try_from(r.get::<_, i64>(4)?).unwrap_or(0),
                source: r.get(5)?,
            })
        })
        .map_err(backend)?;
    rows.collect::<Result<Vec<_>, _>>().map_err(backend)
}
