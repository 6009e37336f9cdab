//! Evals of conclaves in PostgreSQL: each kept whole as JSON beside the figures its
//! listing shows, listed newest first, of one conclave or of all.

use conclave_core::StoreError;
use conclave_shared::eval::{EvalListing, StoredEval};
use deadpool_postgres::Client;

use super::connection::backend;
use super::values::{from_db_int, to_db_int, to_json};

/// The columns of an eval's listing, in the order [`listing_from_row`] reads them.
const LISTING_COLUMNS: &str = "id, conclave, dataset, created_ms, cases, precision, recall, f1";

/// Keeps an eval, replacing one kept under the same id.
pub(super) async fn put_eval(client: &Client, eval: &StoredEval) -> Result<(), StoreError> {
    let summary = to_json(&eval.summary)?;
    let listing = eval.listing();
    let (created, cases) = (to_db_int(listing.created_ms), to_db_int(listing.cases as u64));
    client
        .execute(
            "INSERT INTO evals (id, conclave, dataset, created_ms, cases, precision, recall, f1, summary_json) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
             ON CONFLICT (id) DO UPDATE SET conclave = excluded.conclave, dataset = excluded.dataset, \
             created_ms = excluded.created_ms, cases = excluded.cases, precision = excluded.precision, \
             recall = excluded.recall, f1 = excluded.f1, summary_json = excluded.summary_json",
            &[
                &listing.id,
                &listing.conclave,
                &listing.dataset,
                &created,
                &cases,
                &listing.precision,
                &listing.recall,
                &listing.f1,
                &summary,
            ],
        )
        .await
        .map_err(backend)?;
    Ok(())
}

/// Kept evals, newest first, of `conclave` when one is named.
pub(super) async fn list_evals(
    client: &Client,
    conclave: Option<&str>,
    limit: usize,
) -> Result<Vec<EvalListing>, StoreError> {
    let limit = to_db_int(limit as u64);
    let order = "ORDER BY created_ms DESC, id DESC LIMIT";
    let rows = match conclave {
        Some(conclave) => {
            let sql = format!("SELECT {LISTING_COLUMNS} FROM evals WHERE conclave = $1 {order} $2");
            client.query(&sql, &[&conclave, &limit]).await
        }
        None => client.query(&format!("SELECT {LISTING_COLUMNS} FROM evals {order} $1"), &[&limit]).await,
    }
    .map_err(backend)?;
    rows.iter().map(|row| listing_from_row(row).map_err(backend)).collect()
}

fn listing_from_row(row: &tokio_postgres::Row) -> Result<EvalListing, tokio_postgres::Error> {
    Ok(EvalListing {
        id: row.try_get(0)?,
        conclave: row.try_get(1)?,
        dataset: row.try_get(2)?,
        created_ms: from_db_int(row.try_get(3)?),
        cases: from_db_int(row.try_get(4)?) as usize,
        precision: row.try_get(5)?,
        recall: row.try_get(6)?,
        f1: row.try_get(7)?,
    })
}

/// A kept eval, whole.
pub(super) async fn get_eval(client: &Client, id: &str) -> Result<Option<StoredEval>, StoreError> {
    let row = client
        .query_opt("SELECT conclave, dataset, created_ms, summary_json FROM evals WHERE id = $1", &[&id])
        .await
        .map_err(backend)?;
    let Some(row) = row else { return Ok(None) };
    let summary: String = row.try_get(3).map_err(backend)?;
    let summary = serde_json::from_str(&summary)
        .map_err(|e| StoreError::Backend(format!("the kept eval `{id}` is unreadable: {e}")))?;
    Ok(Some(StoredEval {
        id: id.to_string(),
        conclave: row.try_get(0).map_err(backend)?,
        dataset: row.try_get(1).map_err(backend)?,
        created_ms: from_db_int(row.try_get(2).map_err(backend)?),
        summary,
    }))
}
