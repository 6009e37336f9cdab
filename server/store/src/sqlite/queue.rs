//! The run queue in SQLite, for several local processes sharing one file: queued
//! runs are rows of `runs` with a `queue_spec`. Claims, renewals and cancels are
//! writes, applied by the writer thread in immediate transactions, which hold the
//! file's write lock: two processes never claim one run.

use async_trait::async_trait;
use conclave_core::{Cancel, Job, Lease, NewRun, QueueStats, RunQueue, StoreError, dequeued_event};
use conclave_shared::Conclave;
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

use super::SqliteStore;
use super::schema::{backend, run_exists, to_json};
use super::write::{self, RunRow, append_event};

#[async_trait]
impl RunQueue for SqliteStore {
    async fn enqueue(&self, run: &NewRun, spec: &Value) -> Result<(), StoreError> {
        let row = RunRow::of(run, Some(to_json(spec)?))?;
        self.writer.submit(move |conn| write::create_run(conn, &row)).await
    }

    async fn claim(&self, worker: &str, now_ms: u64, lease_ms: u64) -> Result<Option<Job>, StoreError> {
        let worker = worker.to_string();
        let claimed = self.writer.submit(move |conn| claim(conn, &worker, now_ms, lease_ms)).await?;
        let Some((run_id, spec, attempt)) = claimed else { return Ok(None) };
        let spec = serde_json::from_str(&spec)
            .map_err(|e| StoreError::Corrupt { run_id: run_id.clone(), message: format!("its queue spec: {e}") })?;
        Ok(Some(Job { run_id, spec, attempt }))
    }

    /// Both are serialized here, so the writer thread only writes.
    async fn prepare_claimed(
        &self,
        run_id: &str,
        worker: &str,
        conclave: &Conclave,
        input: &Value,
    ) -> Result<bool, StoreError> {
        let (run_id, worker, conclave_id) = (run_id.to_string(), worker.to_string(), conclave.id.clone());
        let (conclave, input) = (to_json(conclave)?, to_json(input)?);
        self.writer
            .submit(move |conn| {
                conn.prepare_cached(PREPARE_CLAIMED)
                    .and_then(|mut s| s.execute(params![run_id, worker, conclave_id, conclave, input]))
                    .map(|changed| changed == 1)
                    .map_err(backend)
            })
            .await
    }

    async fn renew(&self, run_id: &str, worker: &str, now_ms: u64, lease_ms: u64) -> Result<Lease, StoreError> {
        let (run_id, worker) = (run_id.to_string(), worker.to_string());
        self.writer.submit(move |conn| renew(conn, &run_id, &worker, now_ms + lease_ms)).await
    }

    async fn request_cancel(&self, run_id: &str, now_ms: u64) -> Result<Cancel, StoreError> {
        let run_id = run_id.to_string();
        self.writer.submit(move |conn| request_cancel(conn, &run_id, now_ms)).await
    }

    async fn queue_stats(&self, now_ms: u64) -> Result<QueueStats, StoreError> {
        self.readers.run(move |conn| queue_stats(conn, now_ms)).await
    }

    async fn take_slot(
        &self,
        scope: &str,
        limit: u32,
        holder: &str,
        now_ms: u64,
        lease_ms: u64,
    ) -> Result<Option<u32>, StoreError> {
        let (scope, holder) = (scope.to_string(), holder.to_string());
        self.writer.submit(move |conn| take_slot(conn, &scope, limit, &holder, now_ms + lease_ms, now_ms)).await
    }

    async fn renew_slot(
        &self,
        scope: &str,
        slot: u32,
        holder: &str,
        now_ms: u64,
        lease_ms: u64,
    ) -> Result<bool, StoreError> {
        let (scope, holder) = (scope.to_string(), holder.to_string());
        self.writer
            .submit(move |conn| {
                conn.prepare_cached("UPDATE slots SET lease_until = ?4 WHERE scope = ?1 AND slot = ?2 AND holder = ?3")
                    .and_then(|mut s| s.execute(params![scope, slot, holder, now_ms + lease_ms]))
                    .map(|changed| changed == 1)
                    .map_err(backend)
            })
            .await
    }

    async fn pause(&self, scope: &str, until_ms: u64) -> Result<(), StoreError> {
        let scope = scope.to_string();
        self.writer.submit(move |conn| pause(conn, &scope, until_ms)).await
    }

    async fn paused_until(&self, scope: &str, now_ms: u64) -> Result<Option<u64>, StoreError> {
        let scope = scope.to_string();
        self.readers
            .run(move |conn| {
                conn.prepare_cached("SELECT until_ms FROM pauses WHERE scope = ?1 AND until_ms > ?2")
                    .and_then(|mut s| s.query_row(params![scope, now_ms], |r| r.get(0)).optional())
                    .map_err(backend)
            })
            .await
    }

    async fn release_slot(&self, scope: &str, slot: u32, holder: &str) -> Result<(), StoreError> {
        let (scope, holder) = (scope.to_string(), holder.to_string());
        self.writer
            .submit(move |conn| {
                conn.prepare_cached("DELETE FROM slots WHERE scope = ?1 AND slot = ?2 AND holder = ?3")
                    .and_then(|mut s| s.execute(params![scope, slot, holder]))
                    .map(|_| ())
                    .map_err(backend)
            })
            .await
    }
}

/// Replaces a claimed run's conclave and input in one statement, only while `worker`
/// holds it and it has no event: the writer applies it between other writes, so no
/// event lands between the check and the change.
const PREPARE_CLAIMED: &str = "UPDATE runs SET conclave_id = ?3, conclave_json = ?4, input_json = ?5 \
     WHERE id = ?1 AND worker = ?2 AND status = 'running' AND queue_spec IS NOT NULL \
     AND NOT EXISTS (SELECT 1 FROM event_blocks WHERE run_id = ?1)";

/// Pauses `scope` until `until_ms`, unless it is paused longer already.
fn pause(conn: &Connection, scope: &str, until_ms: u64) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO pauses (scope, until_ms) VALUES (?1, ?2) \
         ON CONFLICT (scope) DO UPDATE SET until_ms = MAX(until_ms, excluded.until_ms)",
    )
    .and_then(|mut s| s.execute(params![scope, until_ms]))
    .map(|_| ())
    .map_err(backend)
}

/// The first of `limit` slots of `scope` that nobody holds, or whose lease ended
/// before `now_ms`, taken for `holder` until `until_ms`.
fn take_slot(
    conn: &Connection,
    scope: &str,
    limit: u32,
    holder: &str,
    until_ms: u64,
    now_ms: u64,
) -> Result<Option<u32>, StoreError> {
    let held: Vec<u32> = conn
        .prepare_cached("SELECT slot FROM slots WHERE scope = ?1 AND lease_until >= ?2")
        .and_then(|mut s| s.query_map(params![scope, now_ms], |r| r.get(0))?.collect())
        .map_err(backend)?;
    let Some(free) = (0..limit).find(|slot| !held.contains(slot)) else { return Ok(None) };
    conn.prepare_cached("INSERT OR REPLACE INTO slots (scope, slot, holder, lease_until) VALUES (?1, ?2, ?3, ?4)")
        .and_then(|mut s| s.execute(params![scope, free, holder, until_ms]))
        .map_err(backend)?;
    Ok(Some(free))
}

/// Takes the oldest queued run, or a running one whose lease expired, for `worker`.
fn claim(
    conn: &Connection,
    worker: &str,
    now_ms: u64,
    lease_ms: u64,
) -> Result<Option<(String, String, u32)>, StoreError> {
    conn.prepare_cached(
        "UPDATE runs SET status = 'running', attempt = attempt + 1, worker = ?1, lease_until = ?2 + ?3 \
         WHERE id = (SELECT id FROM runs WHERE queue_spec IS NOT NULL \
             AND (status = 'queued' OR (status = 'running' AND lease_until < ?2)) \
             ORDER BY created_ms, id LIMIT 1) \
         RETURNING id, queue_spec, attempt",
    )
    .and_then(|mut s| {
        s.query_row(params![worker, now_ms, lease_ms], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).optional()
    })
    .map_err(backend)
}

fn renew(conn: &Connection, run_id: &str, worker: &str, until_ms: u64) -> Result<Lease, StoreError> {
    let held: Option<bool> = conn
        .prepare_cached(
            "UPDATE runs SET lease_until = ?3 WHERE id = ?1 AND worker = ?2 AND status = 'running' \
             RETURNING cancel_requested",
        )
        .and_then(|mut s| s.query_row(params![run_id, worker, until_ms], |r| r.get(0)).optional())
        .map_err(backend)?;
    match held {
        Some(cancel_requested) => Ok(Lease::Held { cancel_requested }),
        None if run_exists(conn, run_id)? => Ok(Lease::Lost),
        None => Err(StoreError::UnknownRun(run_id.to_string())),
    }
}

fn request_cancel(conn: &Connection, run_id: &str, now_ms: u64) -> Result<Cancel, StoreError> {
    let status: Option<String> = conn
        .prepare_cached("SELECT status FROM runs WHERE id = ?1")
        .and_then(|mut s| s.query_row([run_id], |r| r.get(0)).optional())
        .map_err(backend)?;
    match status.as_deref() {
        None => Err(StoreError::UnknownRun(run_id.to_string())),
        Some("queued") => {
            let last: u64 = conn
                .prepare_cached("SELECT COALESCE(MAX(last_seq), 0) FROM event_blocks WHERE run_id = ?1")
                .and_then(|mut s| s.query_row([run_id], |r| r.get(0)))
                .map_err(backend)?;
            append_event(conn, &dequeued_event(run_id, last + 1, now_ms))?;
            Ok(Cancel::Dequeued)
        }
        Some("running") => {
            conn.prepare_cached("UPDATE runs SET cancel_requested = 1 WHERE id = ?1")
                .and_then(|mut s| s.execute([run_id]))
                .map_err(backend)?;
            Ok(Cancel::Requested)
        }
        Some(_) => Ok(Cancel::AlreadyEnded),
    }
}

fn queue_stats(conn: &Connection, now_ms: u64) -> Result<QueueStats, StoreError> {
    conn.prepare_cached(
        "SELECT COALESCE(SUM(status = 'queued'), 0), COALESCE(SUM(status = 'running'), 0), \
         MIN(CASE WHEN status = 'queued' THEN created_ms END) FROM runs WHERE queue_spec IS NOT NULL",
    )
    .and_then(|mut s| {
        s.query_row([], |r| {
            let oldest: Option<u64> = r.get(2)?;
            Ok(QueueStats {
                queued: r.get(0)?,
                running: r.get(1)?,
                oldest_queued_ms: oldest.map(|created| now_ms.saturating_sub(created)),
            })
        })
    })
    .map_err(backend)
}
