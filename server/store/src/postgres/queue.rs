//! The run queue in PostgreSQL: queued runs are rows of `runs` with a `queue_spec`;
//! a claim takes the oldest claimable row with `FOR UPDATE SKIP LOCKED`, so workers
//! on any number of machines never get the same run and never wait on each other.

use async_trait::async_trait;
use conclave_core::{Cancel, Job, Lease, NewRun, QueueStats, RunQueue, StoreError, dequeued_event};
use conclave_shared::Conclave;
use serde_json::Value;

use super::connection::{backend, corrupt};
use super::values::{from_db_int, to_db_int, to_json};
use super::{PostgresStore, writer};

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

    /// One `UPDATE`: `last_seq` is 0 until the transaction storing the run's first
    /// event commits, and that transaction holds the row's lock, so the update waits
    /// for it and then finds the event.
    async fn prepare_claimed(
        &self,
        run_id: &str,
        worker: &str,
        conclave: &Conclave,
        input: &Value,
    ) -> Result<bool, StoreError> {
        let (conclave_json, input) = (to_json(conclave)?, to_json(input)?);
        let client = self.client().await?;
        let statement = client
            .prepare_cached(
                "UPDATE runs SET conclave_id = $3, conclave_json = $4, input_json = $5 \
                 WHERE id = $1 AND worker = $2 AND status = 'running' AND queue_spec IS NOT NULL AND last_seq = 0",
            )
            .await
            .map_err(backend)?;
        let changed = client
            .execute(&statement, &[&run_id, &worker, &conclave.id, &conclave_json, &input])
            .await
            .map_err(backend)?;
        Ok(changed == 1)
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
                for result in writer::append_locked(&mut tx, &[&event], None).await? {
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

    async fn take_slot(
        &self,
        scope: &str,
        limit: u32,
        holder: &str,
        now_ms: u64,
        lease_ms: u64,
    ) -> Result<Option<u32>, StoreError> {
        let client = self.client().await?;
        let limit = i32::try_from(limit).unwrap_or(i32::MAX);
        client
            .execute(
                "INSERT INTO slots (scope, slot) SELECT $1, s FROM generate_series(0, $2 - 1) AS s \
                 ON CONFLICT DO NOTHING",
                &[&scope, &limit],
            )
            .await
            .map_err(backend)?;
        let row = client
            .query_opt(
                "UPDATE slots SET holder = $3, lease_until = $4::bigint + $5::bigint \
                 WHERE (scope, slot) = (SELECT scope, slot FROM slots WHERE scope = $1 AND slot < $2 \
                     AND (holder IS NULL OR lease_until < $4::bigint) ORDER BY slot LIMIT 1 FOR UPDATE SKIP LOCKED) \
                 RETURNING slot",
                &[&scope, &limit, &holder, &to_db_int(now_ms), &to_db_int(lease_ms)],
            )
            .await
            .map_err(backend)?;
        row.map(|r| r.try_get::<_, i32>(0).map(|slot| u32::try_from(slot).unwrap_or(0)).map_err(backend)).transpose()
    }

    async fn renew_slot(
        &self,
        scope: &str,
        slot: u32,
        holder: &str,
        now_ms: u64,
        lease_ms: u64,
    ) -> Result<bool, StoreError> {
        let client = self.client().await?;
        let slot = i32::try_from(slot).unwrap_or(i32::MAX);
        let changed = client
            .execute(
                "UPDATE slots SET lease_until = $4::bigint + $5::bigint WHERE scope = $1 AND slot = $2 AND holder = $3",
                &[&scope, &slot, &holder, &to_db_int(now_ms), &to_db_int(lease_ms)],
            )
            .await
            .map_err(backend)?;
        Ok(changed == 1)
    }

    async fn release_slot(&self, scope: &str, slot: u32, holder: &str) -> Result<(), StoreError> {
        let client = self.client().await?;
        let slot = i32::try_from(slot).unwrap_or(i32::MAX);
        client
            .execute(
                "UPDATE slots SET holder = NULL, lease_until = 0 WHERE scope = $1 AND slot = $2 AND holder = $3",
                &[&scope, &slot, &holder],
            )
            .await
            .map_err(backend)?;
        Ok(())
    }

    async fn pause(&self, scope: &str, until_ms: u64) -> Result<(), StoreError> {
        let client = self.client().await?;
        client
            .execute(
                "INSERT INTO pauses (scope, until_ms) VALUES ($1, $2) \
                 ON CONFLICT (scope) DO UPDATE SET until_ms = GREATEST(pauses.until_ms, excluded.until_ms)",
                &[&scope, &to_db_int(until_ms)],
            )
            .await
            .map_err(backend)?;
        Ok(())
    }

    async fn paused_until(&self, scope: &str, now_ms: u64) -> Result<Option<u64>, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt("SELECT until_ms FROM pauses WHERE scope = $1 AND until_ms > $2", &[&scope, &to_db_int(now_ms)])
            .await
            .map_err(backend)?;
        row.map(|r| r.try_get::<_, i64>(0).map(from_db_int).map_err(backend)).transpose()
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
