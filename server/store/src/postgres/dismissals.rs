//! Dismissals in PostgreSQL: one row per repository and fingerprint, the first kept
//! (a later one of the same finding is ignored, whichever server writes it), listed
//! by repository then fingerprint on the primary key.

use conclave_core::{StoreError, StoredDismissal};
use deadpool_postgres::Client;

use super::connection::backend;
use super::values::{from_db_int, to_db_int};

/// Keeps a dismissal unless its repository already has one of that fingerprint;
/// whether it was new.
pub(super) async fn put_dismissal(client: &Client, d: &StoredDismissal) -> Result<bool, StoreError> {
    let created = to_db_int(d.created_at_ms);
    let inserted = client
        .execute(
            "INSERT INTO dismissals (repository, fingerprint, reason, author, created_ms, source) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (repository, fingerprint) DO NOTHING",
            &[&d.repository, &d.fingerprint, &d.reason, &d.author, &created, &d.source],
        )
        .await
        .map_err(backend)?;
    Ok(inserted == 1)
}

/// The dismissals of `repository`, or of all, by repository then fingerprint.
pub(super) async fn dismissals(client: &Client, repository: Option<&str>) -> Result<Vec<StoredDismissal>, StoreError> {
    let rows = client
        .query(
            "SELECT repository, fingerprint, reason, author, created_ms, source FROM dismissals \
             WHERE $1::TEXT IS NULL OR repository = $1 ORDER BY repository, fingerprint",
            &[&repository],
        )
        .await
        .map_err(backend)?;
    rows.iter()
        .map(|row| {
            Ok(StoredDismissal {
                repository: row.try_get(0)?,
                fingerprint: row.try_get(1)?,
                reason: row.try_get(2)?,
                author: row.try_get(3)?,
                created_at_ms: from_db_int(row.try_get(4)?),
                source: row.try_get(5)?,
            })
        })
        .collect::<Result<Vec<_>, tokio_postgres::Error>>()
        .map_err(backend)
}
