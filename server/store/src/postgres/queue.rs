//! The run queue in PostgreSQL: queued runs are rows of `runs` with a `queue_spec`;
//! a claim takes the oldest claimable row with `FOR UPDATE SKIP LOCKED`, so workers
//! on any number of machines never get the same run and never wait on each other.

use async_trait::async_trait;
use conclave_core::{Cancel, Job, Lease, NewRun, QueueStats, RunQueue, StoreError, dequeued_event};
use serde_json::Value;

use super::{PostgresStore, backend, corrupt, from_db_int, to_db_int, to_json, writer};

#[async_trait]
impl RunQueue for PostgresStore {
    async fn enqueue(&self, run: &NewRun, spec: &Value) -> Result<(), StoreError> {
        self.insert_run(run, Some(&to_json(spec)?)).await
    }

    async fn claim(&self, worker: &str, now_ms: u64, lease_ms: u64) -> Result<Option<Job>, StoreError> {
        let client = self.client().await?;
        let statement = client
            .prepare_cached(
                "UPDATE runs SET status = 'running', attempt = attempt + 1, worker = $1, \
                     lease_until = $2::bigint + $3::bigint \
                 WHERE id = (SELECT id FROM runs WHERE queue_spec IS NOT NULL \
                     AND (status = 'queued' OR (status = 'running' AND lease_until < $2::bigint)) \
                     ORDER BY created_ms, id LIMIT 1 FOR UPDATE SKIP LOCKED) \
                 RETURNING id, queue_spec, attempt",
            )
            .await
            .map_err(backend)?;
        let row = client
            .query_opt(&statement, &[&worker, &to_db_int(now_ms), &to_db_int(lease_ms)])
            .await
            .map_err(backend)?;
        let Some(row) = row else { return Ok(None) };
        let run_id: String = row.try_get(0).map_err(backend)?;
        let spec: String = row.try_get(1).map_err(backend)?;
        let attempt: i32 = row.try_get(2).map_err(backend)?;
        let spec = serde_json::from_str(&spec).map_err(|e| corrupt(&run_id, format!("its queue spec: {e}")))?;
        Ok(Some(Job { run_id, spec, attempt: u32::try_from(attempt).unwrap_or(0) }))
    }

    async fn renew(&self, run_id: &str, worker: &str, now_ms: u64, lease_ms: u64) -> Result<Lease, StoreError> {
        let client = self.client().await?;
        let statement = client
            .prepare_cached(
                "UPDATE runs SET lease_until = $3::bigint + $4::bigint \
                 WHERE id = $1 AND worker = $2 AND status = 'running' \
                 RETURNING cancel_requested",
            )
            .await
            .map_err(backend)?;
        let row = client
            .query_opt(&statement, &[&run_id, &worker, &to_db_int(now_ms), &to_db_int(lease_ms)])
            .await
            .map_err(backend)?;
        match row {
            Some(row) => Ok(Lease::Held { cancel_requested: row.try_get(0).map_err(backend)? }),
            None if self.run_exists(&client, run_id).await? => Ok(Lease::Lost),
            None => Err(StoreError::UnknownRun(run_id.to_string())),
        }
    }

    async fn request_cancel(&self, run_id: &str, now_ms: u64) -> Result<Cancel, StoreError> {
        let mut client = self.client().await?;
        let mut tx = client.transaction().await.map_err(backend)?;
        let row = tx
            .query_opt("SELECT status, last_seq FROM runs WHERE id = $1 FOR UPDATE", &[&run_id])
            .await
            .map_err(backend)?
            .ok_or_else(|| StoreError::UnknownRun(run_id.to_string()))?;
        let status: String = row.try_get(0).map_err(backend)?;
        let cancel = match status.as_str() {
            "queued" => {
                let event = dequeued_event(run_id, from_db_int(row.try_get(1).map_err(backend)?) + 1, now_ms);
                for result in writer::append_locked(&mut tx, &[&event]).await? {
                    result?;
                }
                Cancel::Dequeued
            }
            "running" => {
                tx.execute("UPDATE runs SET cancel_requested = TRUE WHERE id = $1", &[&run_id])
                    .await
                    .map_err(backend)?;
                Cancel::Requested
            }
            _ => Cancel::AlreadyEnded,
        };
        tx.commit().await.map_err(backend)?;
        Ok(cancel)
    }

    async fn queue_stats(&self, now_ms: u64) -> Result<QueueStats, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_one(
                "SELECT COUNT(*) FILTER (WHERE status = 'queued'), COUNT(*) FILTER (WHERE status = 'running'), \
                 MIN(created_ms) FILTER (WHERE status = 'queued') FROM runs WHERE queue_spec IS NOT NULL",
                &[],
            )
            .await
            .map_err(backend)?;
        let count = |i: usize| row.try_get::<_, i64>(i).map(|n| u64::try_from(n).unwrap_or(0)).map_err(backend);
        let oldest: Option<i64> = row.try_get(2).map_err(backend)?;
        Ok(QueueStats {
            queued: count(0)?,
            running: count(1)?,
            oldest_queued_ms: oldest.map(|created| now_ms.saturating_sub(from_db_int(created))),
        })
    }
}
