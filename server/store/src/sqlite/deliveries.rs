//! Webhook deliveries in the SQLite file: one row per forge and delivery id, the
//! first kept (a redelivery is ignored), the pending ones (asking something, not yet
//! dispatched) read oldest first on a partial index.

use conclave_core::StoreError;
use conclave_shared::delivery::{Delivery, Forge};
use rusqlite::{Connection, params};

use super::schema::backend;
use crate::delivery_row::{COLUMNS, DeliveryRow, to_int};

/// Keeps a delivery unless one of its forge with its id is kept; whether it was new.
/// A writer job.
pub(super) fn put_delivery(conn: &Connection, delivery: &Delivery) -> Result<bool, StoreError> {
    let r = DeliveryRow::of(delivery)?;
    let sql = format!(
        "INSERT INTO deliveries ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13) \
         ON CONFLICT (forge, delivery_id) DO NOTHING"
    );
    let inserted = conn
        .prepare_cached(&sql)
        .and_then(|mut s| {
            s.execute(params![
                r.forge,
                r.id,
                r.event,
                r.action,
                r.repository,
                r.number,
                r.head_sha,
                r.base_ref,
                r.installation,
                r.sender,
                r.command,
                r.ignored,
                r.received_ms
            ])
        })
        .map_err(backend)?;
    Ok(inserted == 1)
}

/// The pending deliveries, oldest first, at most `limit`.
pub(super) fn pending_deliveries(conn: &Connection, limit: usize) -> Result<Vec<Delivery>, StoreError> {
    let sql = format!(
        "SELECT {COLUMNS} FROM deliveries WHERE ignored IS NULL AND dispatched_ms IS NULL \
         ORDER BY received_ms, forge, delivery_id LIMIT ?1"
    );
    let mut stmt = conn.prepare_cached(&sql).map_err(backend)?;
    let rows = stmt
        .query_map(params![i64::try_from(limit).unwrap_or(i64::MAX)], |r| {
            Ok(DeliveryRow {
                forge: r.get(0)?,
                id: r.get(1)?,
                event: r.get(2)?,
                action: r.get(3)?,
                repository: r.get(4)?,
                number: r.get(5)?,
                head_sha: r.get(6)?,
                base_ref: r.get(7)?,
                installation: r.get(8)?,
                sender: r.get(9)?,
                command: r.get(10)?,
                ignored: r.get(11)?,
                received_ms: r.get(12)?,
            })
        })
        .map_err(backend)?;
    rows.map(|row| row.map_err(backend).and_then(DeliveryRow::delivery)).collect()
}

/// Marks a pending delivery dispatched; whether it was pending. A writer job.
pub(super) fn mark_dispatched(conn: &Connection, forge: Forge, id: &str, at_ms: u64) -> Result<bool, StoreError> {
    let marked = conn
        .prepare_cached(
            "UPDATE deliveries SET dispatched_ms = ?3 \
             WHERE forge = ?1 AND delivery_id = ?2 AND ignored IS NULL AND dispatched_ms IS NULL",
        )
        .and_then(|mut s| s.execute(params![forge.name(), id, to_int(at_ms)]))
        .map_err(backend)?;
    Ok(marked == 1)
}
