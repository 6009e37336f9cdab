//! The PostgreSQL run store: the same tables and the same semantics as the SQLite
//! store, for several Conclave servers sharing one database. `migrations.rs` is the
//! versioned schema, `writer.rs` the task that commits concurrent appends together,
//! `rows.rs` how an event's `effect_of` changes node and run rows, `queue.rs` the run
//! queue (claims with `FOR UPDATE SKIP LOCKED`), `listen.rs` the LISTEN connection
//! that tells this process about events other servers commit, `evals.rs` the kept
//! evals of conclaves, `dismissals.rs` the dismissals of findings, `deliveries.rs`
//! the webhook deliveries forges sent, `pull_requests.rs` the webhook dispatcher's
//! records of pull requests.
//!
//! **Invariant:** node and run rows change only in the transaction that stores the
//! event causing the change, with the run's row locked, so a stored run always agrees
//! with its event log whichever server wrote it.

mod connection;
mod deliveries;
mod dismissals;
mod evals;
mod listen;
mod lookups;
mod migrations;
mod pull_requests;
mod queue;
mod rows;
mod values;
mod writer;

#[cfg(test)]
mod tests;

use async_trait::async_trait;
use conclave_core::{
    CachedOutput, NewRun, REDACTED, ReviewOf, RunStore, StoreError, StoredDismissal, interrupted_event,
    mask_url_credentials,
};
use conclave_shared::delivery::{Delivery, Forge, PullRequestReviews};
use conclave_shared::eval::{EvalListing, StoredEval};
use conclave_shared::{Conclave, OutputDialect, RunEvent, RunRecord, RunSummary};
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use tokio_postgres::NoTls;
use tokio_postgres::error::SqlState;

use connection::{CONNECT_TIMEOUT, Target, backend, describe_pool, pool_error};
use rows::{SUMMARY_COLUMNS, fold_nodes, read_events, summary_from_row};
use values::{from_db_int, from_json, to_db_int, to_json};
use writer::Writer;

/// The most connections one store opens.
const POOL_SIZE: usize = 16;

/// Runs in a PostgreSQL database.
#[derive(Debug)]
pub struct PostgresStore {
    pool: Pool,
    writer: Writer,
    target: Target,
    /// How to open the LISTEN connection, and the listener once opened.
    config: tokio_postgres::Config,
    listener: std::sync::OnceLock<listen::Listener>,
}

impl PostgresStore {
    /// Connects to the database at `url` (`postgres://` or `postgresql://`), creating
    /// and migrating its tables as needed. TLS is not supported yet: use a server on
    /// a trusted network or a Unix socket.
    pub async fn connect(url: &str) -> Result<PostgresStore, StoreError> {
        let mut config: tokio_postgres::Config = url.parse().map_err(|e| {
            StoreError::Backend(format!(
                "the PostgreSQL URL {} is not valid: {e}; write it as postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE",
                mask_url_credentials(url, REDACTED)
            ))
        })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        let target = Target::of(&config);
        let manager =
            Manager::from_config(config.clone(), NoTls, ManagerConfig { recycling_method: RecyclingMethod::Fast });
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .runtime(Runtime::Tokio1)
            .create_timeout(Some(CONNECT_TIMEOUT))
            .build()
            .map_err(|e| StoreError::Backend(format!("cannot set up connections to {target}: {e}")))?;
        let mut client = pool.get().await.map_err(|e| {
            StoreError::Backend(format!(
                "cannot connect to {target}: {}; check that the server is running and reachable, and the URL given \
                 with --db or CONCLAVE_DB",
                describe_pool(&e)
            ))
        })?;
        migrations::migrate(&mut client, &target).await?;
        drop(client);
        let writer = Writer::spawn(pool.clone());
        Ok(PostgresStore { pool, writer, target, config, listener: std::sync::OnceLock::new() })
    }

    /// Where this store is, without the password: host, port, database and user.
    pub fn target(&self) -> String {
        self.target.to_string()
    }

    /// Transactions the event writer has committed. Appends that arrive while a
    /// commit is in flight share the next one, so this grows slower than the events.
    pub fn event_commits(&self) -> u64 {
        self.writer.commits()
    }

    /// Records a new run: running, or queued with its spec. Its nodes are stored when
    /// it ends (see `rows.rs`).
    async fn insert_run(&self, run: &NewRun, spec: Option<&str>) -> Result<(), StoreError> {
        let conclave = to_json(&run.conclave)?;
        let input = to_json(&run.input)?;
        let client = self.client().await?;
        client
            .execute(
                "INSERT INTO runs (id, conclave_id, conclave_json, input_json, status, created_ms, owner, queue_spec) \
             VALUES ($1, $2, $3, $4, CASE WHEN $7::text IS NULL THEN 'running' ELSE 'queued' END, $5, $6, $7)",
                &[&run.id, &run.conclave.id, &conclave, &input, &to_db_int(run.created_ms), &run.owner, &spec],
            )
            .await
            .map_err(|e| match e.code() {
                Some(&SqlState::UNIQUE_VIOLATION) => {
                    StoreError::Backend(format!("a run with id `{}` already exists in {}", run.id, self.target))
                }
                _ => backend(e),
            })?;
        Ok(())
    }

    async fn client(&self) -> Result<deadpool_postgres::Client, StoreError> {
        self.pool.get().await.map_err(pool_error)
    }

    async fn run_exists(&self, client: &deadpool_postgres::Client, run_id: &str) -> Result<bool, StoreError> {
        let statement = client.prepare_cached("SELECT 1 FROM runs WHERE id = $1").await.map_err(backend)?;
        Ok(client.query_opt(&statement, &[&run_id]).await.map_err(backend)?.is_some())
    }
}

#[async_trait]
impl RunStore for PostgresStore {
    async fn create_run(&self, run: &NewRun) -> Result<(), StoreError> {
        self.insert_run(run, None).await
    }

    async fn append_event(&self, event: &RunEvent) -> Result<(), StoreError> {
        self.writer.append(event).await
    }

    /// Queued for the writer together, so they land in one batch.
    async fn append_events(&self, events: &[RunEvent]) -> Result<(), StoreError> {
        self.writer.append_all(events).await
    }

    /// LISTEN/NOTIFY on `conclave_events`: every committed batch notifies the runs
    /// it wrote to. The listening connection opens on the first call.
    fn commit_notices(&self) -> Option<tokio::sync::broadcast::Receiver<String>> {
        Some(self.listener.get_or_init(|| listen::Listener::start(self.config.clone())).subscribe())
    }

    async fn get_run(&self, run_id: &str) -> Result<Option<RunRecord>, StoreError> {
        let client = self.client().await?;
        let sql = format!("SELECT {SUMMARY_COLUMNS}, conclave_json, input_json, nodes_json FROM runs WHERE id = $1");
        let statement = client.prepare_cached(&sql).await.map_err(backend)?;
        let Some(row) = client.query_opt(&statement, &[&run_id]).await.map_err(backend)? else { return Ok(None) };
        let summary = summary_from_row(&row).map_err(backend)?;
        let conclave: Conclave = from_json(run_id, row.try_get("conclave_json").map_err(backend)?)?;
        let input = from_json(run_id, row.try_get("input_json").map_err(backend)?)?;
        // A run that ended stored its nodes; a running one's are its event log.
        let ended: Option<&str> = row.try_get("nodes_json").map_err(backend)?;
        let nodes = match ended.filter(|_| summary.status.is_terminal()) {
            Some(json) => from_json(run_id, json)?,
            None => fold_nodes(&client, run_id, conclave.clone()).await?,
        };
        Ok(Some(RunRecord { summary, conclave, input, nodes }))
    }

    async fn list_runs(&self, limit: usize) -> Result<Vec<RunSummary>, StoreError> {
        let client = self.client().await?;
        let sql = format!("SELECT {SUMMARY_COLUMNS} FROM runs ORDER BY created_ms DESC, id DESC LIMIT $1");
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = client.query(&sql, &[&limit]).await.map_err(backend)?;
        rows.iter().map(|row| summary_from_row(row).map_err(backend)).collect()
    }

    async fn run_summary(&self, run_id: &str) -> Result<Option<RunSummary>, StoreError> {
        lookups::run_summary(&self.client().await?, run_id).await
    }

    async fn latest_review(&self, review: &ReviewOf) -> Result<Option<String>, StoreError> {
        lookups::latest_review(&self.client().await?, review).await
    }

    async fn events(&self, run_id: &str, after_seq: u64) -> Result<Vec<RunEvent>, StoreError> {
        let client = self.client().await?;
        if !self.run_exists(&client, run_id).await? {
            return Err(StoreError::UnknownRun(run_id.to_string()));
        }
        read_events(&client, run_id, after_seq).await
    }

    async fn events_page(&self, run_id: &str, after_seq: u64, limit: usize) -> Result<Vec<RunEvent>, StoreError> {
        lookups::events_page(&mut self.client().await?, run_id, after_seq, limit).await
    }

    async fn put_report(&self, run_id: &str, format: &str, content: &str) -> Result<(), StoreError> {
        let client = self.client().await?;
        client
            .execute(
                "INSERT INTO reports (run_id, format, content) VALUES ($1, $2, $3) \
                 ON CONFLICT (run_id, format) DO UPDATE SET content = excluded.content",
                &[&run_id, &format, &content],
            )
            .await
            .map_err(|e| match e.code() {
                Some(&SqlState::FOREIGN_KEY_VIOLATION) => StoreError::UnknownRun(run_id.to_string()),
                _ => backend(e),
            })?;
        Ok(())
    }

    async fn get_report(&self, run_id: &str, format: &str) -> Result<Option<String>, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt("SELECT content FROM reports WHERE run_id = $1 AND format = $2", &[&run_id, &format])
            .await
            .map_err(backend)?;
        row.map(|r| r.try_get(0).map_err(backend)).transpose()
    }

    async fn endpoint_dialect(&self, provider: &str, endpoint: &str) -> Result<Option<OutputDialect>, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                "SELECT dialect FROM endpoint_dialects WHERE provider = $1 AND endpoint = $2",
                &[&provider, &endpoint],
            )
            .await
            .map_err(backend)?;
        let name: Option<String> = row.map(|r| r.try_get(0).map_err(backend)).transpose()?;
        // A name this build does not know (written by a newer one) counts as nothing.
        Ok(name.as_deref().and_then(OutputDialect::parse))
    }

    async fn remember_endpoint_dialect(
        &self,
        provider: &str,
        endpoint: &str,
        dialect: OutputDialect,
    ) -> Result<(), StoreError> {
        let client = self.client().await?;
        let now = conclave_core::now_ms() as i64;
        client
            .execute(
                "INSERT INTO endpoint_dialects (provider, endpoint, dialect, updated_ms) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (provider, endpoint) DO UPDATE SET dialect = excluded.dialect, updated_ms = excluded.updated_ms",
                &[&provider, &endpoint, &dialect.as_str(), &now],
            )
            .await
            .map_err(backend)?;
        Ok(())
    }

    async fn cached_output(&self, key: &str, now_ms: u64) -> Result<Option<CachedOutput>, StoreError> {
        let client = self.client().await?;
        let now = now_ms as i64;
        let row = client
            .query_opt(
                "SELECT output_json, run_id, node_id, stored_ms, expires_ms FROM node_cache \
                 WHERE key = $1 AND (expires_ms IS NULL OR expires_ms > $2)",
                &[&key, &now],
            )
            .await
            .map_err(backend)?;
        let Some(row) = row else { return Ok(None) };
        let output: String = row.try_get(0).map_err(backend)?;
        let output = serde_json::from_str(&output).map_err(|e| StoreError::Backend(format!("a cached output: {e}")))?;
        let (stored, expires): (i64, Option<i64>) =
            (row.try_get(3).map_err(backend)?, row.try_get(4).map_err(backend)?);
        Ok(Some(CachedOutput {
            output,
            run_id: row.try_get(1).map_err(backend)?,
            node_id: row.try_get(2).map_err(backend)?,
            stored_ms: stored as u64,
            expires_ms: expires.map(|e| e as u64),
        }))
    }

    async fn cache_output(&self, key: &str, entry: &CachedOutput) -> Result<(), StoreError> {
        let client = self.client().await?;
        let output = serde_json::to_string(&entry.output).map_err(|e| StoreError::Backend(e.to_string()))?;
        let (stored, expires) = (entry.stored_ms as i64, entry.expires_ms.map(|e| e as i64));
        client
            .execute(
                "INSERT INTO node_cache (key, output_json, run_id, node_id, stored_ms, expires_ms) \
                 VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (key) DO UPDATE SET output_json = excluded.output_json, \
                 run_id = excluded.run_id, node_id = excluded.node_id, stored_ms = excluded.stored_ms, \
                 expires_ms = excluded.expires_ms",
                &[&key, &output, &entry.run_id, &entry.node_id, &stored, &expires],
            )
            .await
            .map_err(backend)?;
        Ok(())
    }

    async fn put_eval(&self, eval: &StoredEval) -> Result<(), StoreError> {
        evals::put_eval(&self.client().await?, eval).await
    }

    async fn list_evals(&self, conclave: Option<&str>, limit: usize) -> Result<Vec<EvalListing>, StoreError> {
        evals::list_evals(&self.client().await?, conclave, limit).await
    }

    async fn get_eval(&self, id: &str) -> Result<Option<StoredEval>, StoreError> {
        evals::get_eval(&self.client().await?, id).await
    }

    async fn put_dismissal(&self, dismissal: &StoredDismissal) -> Result<bool, StoreError> {
        dismissals::put_dismissal(&self.client().await?, dismissal).await
    }

    async fn dismissals(&self, repository: Option<&str>) -> Result<Vec<StoredDismissal>, StoreError> {
        dismissals::dismissals(&self.client().await?, repository).await
    }

    async fn put_delivery(&self, delivery: &Delivery) -> Result<bool, StoreError> {
        deliveries::put_delivery(&self.client().await?, delivery).await
    }

    async fn pending_deliveries(&self, limit: usize) -> Result<Vec<Delivery>, StoreError> {
        deliveries::pending_deliveries(&self.client().await?, limit).await
    }

    async fn mark_delivery_dispatched(&self, forge: Forge, id: &str, at_ms: u64) -> Result<bool, StoreError> {
        deliveries::mark_dispatched(&self.client().await?, forge, id, at_ms).await
    }

    async fn pull_request(
        &self,
        forge: Forge,
        repository: &str,
        number: u64,
    ) -> Result<Option<PullRequestReviews>, StoreError> {
        pull_requests::pull_request(&self.client().await?, forge, repository, number).await
    }

    async fn put_pull_request(&self, reviews: &PullRequestReviews) -> Result<(), StoreError> {
        pull_requests::put_pull_request(&self.client().await?, reviews).await
    }

    async fn busy_pull_requests(&self, limit: usize) -> Result<Vec<PullRequestReviews>, StoreError> {
        pull_requests::busy_pull_requests(&self.client().await?, limit).await
    }

    async fn mark_interrupted(
        &self,
        owner_alive: &(dyn for<'s> Fn(&'s str) -> bool + Sync),
        now_ms: u64,
    ) -> Result<Vec<String>, StoreError> {
        let mut client = self.client().await?;
        let mut tx = client.transaction().await.map_err(backend)?;
        let rows = tx
            // A queued run's lease, not its owner, says whether it lives.
            .query(
                "SELECT id, owner, last_seq FROM runs WHERE status = 'running' AND queue_spec IS NULL ORDER BY id \
                 FOR UPDATE",
                &[],
            )
            .await
            .map_err(backend)?;
        let mut events = Vec::new();
        for row in &rows {
            let owner: String = row.try_get(1).map_err(backend)?;
            if !owner_alive(&owner) {
                let id: String = row.try_get(0).map_err(backend)?;
                events.push(interrupted_event(&id, from_db_int(row.try_get(2).map_err(backend)?) + 1, now_ms));
            }
        }
        let refs: Vec<&RunEvent> = events.iter().collect();
        for result in writer::append_locked(&mut tx, &refs, None).await? {
            result?;
        }
        tx.commit().await.map_err(backend)?;
        Ok(events.into_iter().map(|e| e.run_id).collect())
    }
}
