//! Webhook deliveries in PostgreSQL: one row per forge and delivery id, the first
//! kept whichever server received it (`ON CONFLICT DO NOTHING`, so two servers behind
//! one balancer given the same redelivery store it once), the pending ones read
//! oldest first on a partial index.

use conclave_core::StoreError;
use conclave_shared::delivery::{Delivery, Forge};
use deadpool_postgres::Client;

use super::connection::backend;
use crate::delivery_row::{COLUMNS, DeliveryRow, to_int};

/// Keeps a delivery unless one of its forge with its id is kept; whether it was new.
pub(super) async fn put_delivery(client: &Client, delivery: &Delivery) -> Result<bool, StoreError> {
    let r = DeliveryRow::of(delivery)?;
    let sql = format!(
        "INSERT INTO deliveries ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) \
         ON CONFLICT (forge, delivery_id) DO NOTHING"
    );
    let statement = client.prepare_cached(&sql).await.map_err(backend)?;
    let inserted = client
        .execute(
            &statement,
            &[
                &r.forge,
                &r.id,
                &r.event,
                &r.action,
                &r.repository,
                &r.number,
                &r.head_sha,
                &r.base_ref,
                &r.installation,
                &r.sender,
                &r.command,
                &r.ignored,
                &r.received_ms,
            ],
        )
        .await
        .map_err(backend)?;
    Ok(inserted == 1)
}

/// The pending deliveries, oldest first, at most `limit`.
pub(super) async fn pending_deliveries(client: &Client, limit: usize) -> Result<Vec<Delivery>, StoreError> {
    let sql = format!(
        "SELECT {COLUMNS} FROM deliveries WHERE ignored IS NULL AND dispatched_ms IS NULL \
         ORDER BY received_ms, forge, delivery_id LIMIT $1"
    );
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = client.query(&sql, &[&limit]).await.map_err(backend)?;
    rows.iter()
        .map(|row| {
            Ok(DeliveryRow {
                forge: row.try_get(0)?,
                id: row.try_get(1)?,
                event: row.try_get(2)?,
                action: row.try_get(3)?,
                repository: row.try_get(4)?,
                number: row.try_get(5)?,
                head_sha: row.try_get(6)?,
                base_ref: row.try_get(7)?,
                installation: row.try_get(8)?,
                sender: row.try_get(9)?,
                command: row.try_get(10)?,
                ignored: row.try_get(11)?,
                received_ms: row.try_get(12)?,
            })
        })
        .map(|row: Result<DeliveryRow, tokio_postgres::Error>| row.map_err(backend).and_then(DeliveryRow::delivery))
        .collect()
}

/// Marks a pending delivery dispatched; whether it was pending.
pub(super) async fn mark_dispatched(client: &Client, forge: Forge, id: &str, at_ms: u64) -> Result<bool, StoreError> {
    let marked = client
        .execute(
            "UPDATE deliveries SET dispatched_ms = $3 \
             WHERE forge = $1 AND delivery_id = $2 AND ignored IS NULL AND dispatched_ms IS NULL",
            &[&forge.name(), &id, &to_int(at_ms)],
        )
        .await
        .map_err(backend)?;
    Ok(marked == 1)
}
