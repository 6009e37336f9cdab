//! The SQLite run store: one file, created and migrated on open, write-ahead logging
//! on, shared by every local process that opens it.
//!
//! Layout: `schema.rs` opens connections, migrates and maps rows; `writer.rs` is the
//! one writer thread with group commit; `write.rs` the writes it applies; `read.rs`
//! the reads, on blocking threads with read connections of their own;
//! `dismissals.rs` the dismissals' write and read; `deliveries.rs` the webhook
//! deliveries'; `pull_requests.rs` the webhook dispatcher's records of pull
//! requests; `queue.rs` the run queue (claims in the writer's immediate
//! transactions, so one process at a time, and never two workers on one run).
//!
//! **Invariant:** a write returns only after the transaction holding it committed, so
//! the engine's `EventBus` (store, then publish) never publishes an event that is not
//! in the file. A process killed afterwards loses nothing: the commit is in the WAL
//! (`synchronous = NORMAL`: safe against a killed process; an OS crash or power loss
//! may lose the last commits). Nothing here blocks the async runtime's threads.

mod deliveries;
mod dismissals;
mod pull_requests;
mod queue;
mod read;
mod schema;
mod write;
mod writer;

#[cfg(test)]
mod tests;

use async_trait::async_trait;
use conclave_core::{CachedOutput, NewRun, ReviewOf, RunStore, StoreError, StoredDismissal};
use conclave_shared::delivery::{Delivery, Forge, PullRequestReviews};
use conclave_shared::eval::{EvalListing, StoredEval};
use conclave_shared::{OutputDialect, RunEvent, RunRecord, RunSummary};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::folds::Folds;
use read::Readers;
use write::RunRow;
use writer::Writer;

/// Runs in a SQLite file.
#[derive(Debug)]
pub struct SqliteStore {
    path: PathBuf,
    writer: Writer,
    readers: Arc<Readers>,
    folds: Arc<Mutex<Folds>>,
    /// A notice per run whose events this store's writer committed.
    notices: tokio::sync::broadcast::Sender<String>,
}

/// How many notices a slow reader may fall behind before it reads the store anyway.
const NOTICES: usize = 1024;

impl SqliteStore {
    /// Opens (creating and migrating as needed) the database at `path`.
    pub fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| {
                StoreError::Backend(format!("cannot create the directory {} for the run database: {e}", dir.display()))
            })?;
        }
        let writer = Writer::start(schema::open_writer(path)?)?;
        Ok(SqliteStore {
            path: path.to_path_buf(),
            writer,
            readers: Readers::new(path.to_path_buf()),
            folds: Arc::default(),
            notices: tokio::sync::broadcast::channel(NOTICES).0,
        })
    }

    /// Tells readers following `runs` that their events were committed (each once).
    fn notify<'a>(&self, runs: impl Iterator<Item = &'a str>) {
        let mut told: Vec<&str> = Vec::new();
        for run in runs {
            if !told.contains(&run) {
                told.push(run);
                // Nobody following is no error.
                let _ = self.notices.send(run.to_string());
            }
        }
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many transactions this store's writer has committed. With group commit,
    /// concurrent writes share transactions, so this grows slower than the writes.
    pub fn commits(&self) -> u64 {
        self.writer.commits()
    }
}

#[async_trait]
impl RunStore for SqliteStore {
    async fn create_run(&self, run: &NewRun) -> Result<(), StoreError> {
        let row = RunRow::of(run, None)?;
        self.writer.submit(move |conn| write::create_run(conn, &row)).await
    }

    /// Returns once the event is committed; see the module's invariant.
    async fn append_event(&self, event: &RunEvent) -> Result<(), StoreError> {
        let owned = event.clone();
        self.writer.submit(move |conn| write::append_event(conn, &owned)).await?;
        self.notify(std::iter::once(event.run_id.as_str()));
        Ok(())
    }

    /// One job for the writer thread, so the events share a savepoint and a commit.
    async fn append_events(&self, events: &[RunEvent]) -> Result<(), StoreError> {
        let batch = events.to_vec();
        let folds = Arc::clone(&self.folds);
        self.writer
            .submit(move |conn| {
                // Only the writer thread takes this lock.
                let mut folds = folds.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                let written = write::append_events(conn, &batch, &mut folds);
                if written.is_err() {
                    folds.forget(batch.iter().map(|e| e.run_id.as_str()));
                }
                written
            })
            .await?;
        self.notify(events.iter().map(|e| e.run_id.as_str()));
        Ok(())
    }

    /// Notices of the runs whose events this process committed through this store
    /// (its embedded worker's, say); another process's commits to the same file send
    /// none here, so readers still look at the store every so often.
    fn commit_notices(&self) -> Option<tokio::sync::broadcast::Receiver<String>> {
        Some(self.notices.subscribe())
    }

    fn notices_from_every_process(&self) -> bool {
        false
    }

    async fn get_run(&self, run_id: &str) -> Result<Option<RunRecord>, StoreError> {
        let run_id = run_id.to_string();
        self.readers.run(move |conn| read::get_run(conn, &run_id)).await
    }

    async fn list_runs(&self, limit: usize) -> Result<Vec<RunSummary>, StoreError> {
        self.readers.run(move |conn| read::list_runs(conn, limit)).await
    }

    async fn run_summary(&self, run_id: &str) -> Result<Option<RunSummary>, StoreError> {
        let run_id = run_id.to_string();
        self.readers.run(move |conn| read::run_summary(conn, &run_id)).await
    }

    async fn latest_review(&self, review: &ReviewOf) -> Result<Option<String>, StoreError> {
        let review = review.clone();
        self.readers.run(move |conn| read::latest_review(conn, &review)).await
    }

    async fn events(&self, run_id: &str, after_seq: u64) -> Result<Vec<RunEvent>, StoreError> {
        let run_id = run_id.to_string();
        self.readers.run(move |conn| read::events(conn, &run_id, after_seq)).await
    }

    async fn events_page(&self, run_id: &str, after_seq: u64, limit: usize) -> Result<Vec<RunEvent>, StoreError> {
        let run_id = run_id.to_string();
        self.readers.run(move |conn| read::events_page(conn, &run_id, after_seq, limit)).await
    }

    async fn put_report(&self, run_id: &str, format: &str, content: &str) -> Result<(), StoreError> {
        let (run_id, format, content) = (run_id.to_string(), format.to_string(), content.to_string());
        self.writer.submit(move |conn| write::put_report(conn, &run_id, &format, &content)).await
    }

    async fn get_report(&self, run_id: &str, format: &str) -> Result<Option<String>, StoreError> {
        let (run_id, format) = (run_id.to_string(), format.to_string());
        self.readers.run(move |conn| read::get_report(conn, &run_id, &format)).await
    }

    async fn endpoint_dialect(&self, provider: &str, endpoint: &str) -> Result<Option<OutputDialect>, StoreError> {
        let (provider, endpoint) = (provider.to_string(), endpoint.to_string());
        self.readers.run(move |conn| read::endpoint_dialect(conn, &provider, &endpoint)).await
    }

    async fn remember_endpoint_dialect(
        &self,
        provider: &str,
        endpoint: &str,
        dialect: OutputDialect,
    ) -> Result<(), StoreError> {
        let (provider, endpoint, now) = (provider.to_string(), endpoint.to_string(), conclave_core::now_ms());
        self.writer.submit(move |conn| write::remember_endpoint_dialect(conn, &provider, &endpoint, dialect, now)).await
    }

    async fn cached_output(&self, key: &str, now_ms: u64) -> Result<Option<CachedOutput>, StoreError> {
        let key = key.to_string();
        self.readers.run(move |conn| read::cached_output(conn, &key, now_ms)).await
    }

    async fn cache_output(&self, key: &str, entry: &CachedOutput) -> Result<(), StoreError> {
        let (key, entry) = (key.to_string(), entry.clone());
        self.writer.submit(move |conn| write::cache_output(conn, &key, &entry)).await
    }

    /// The summary is serialized here, so the writer thread only writes.
    async fn put_eval(&self, eval: &StoredEval) -> Result<(), StoreError> {
        let summary = schema::to_json(&eval.summary)?;
        let listing = eval.listing();
        self.writer.submit(move |conn| write::put_eval(conn, &listing, &summary)).await
    }

    async fn list_evals(&self, conclave: Option<&str>, limit: usize) -> Result<Vec<EvalListing>, StoreError> {
        let conclave = conclave.map(str::to_string);
        self.readers.run(move |conn| read::list_evals(conn, conclave.as_deref(), limit)).await
    }

    async fn get_eval(&self, id: &str) -> Result<Option<StoredEval>, StoreError> {
        let id = id.to_string();
        self.readers.run(move |conn| read::get_eval(conn, &id)).await
    }

    async fn put_dismissal(&self, dismissal: &StoredDismissal) -> Result<bool, StoreError> {
        let dismissal = dismissal.clone();
        self.writer.submit(move |conn| dismissals::put_dismissal(conn, &dismissal)).await
    }

    async fn dismissals(&self, repository: Option<&str>) -> Result<Vec<StoredDismissal>, StoreError> {
        let repository = repository.map(str::to_string);
        self.readers.run(move |conn| dismissals::dismissals(conn, repository.as_deref())).await
    }

    async fn put_delivery(&self, delivery: &Delivery) -> Result<bool, StoreError> {
        let delivery = delivery.clone();
        self.writer.submit(move |conn| deliveries::put_delivery(conn, &delivery)).await
    }

    async fn pending_deliveries(&self, limit: usize) -> Result<Vec<Delivery>, StoreError> {
        self.readers.run(move |conn| deliveries::pending_deliveries(conn, limit)).await
    }

    async fn mark_delivery_dispatched(&self, forge: Forge, id: &str, at_ms: u64) -> Result<bool, StoreError> {
        let id = id.to_string();
        self.writer.submit(move |conn| deliveries::mark_dispatched(conn, forge, &id, at_ms)).await
    }

    async fn pull_request(
        &self,
        forge: Forge,
        repository: &str,
        number: u64,
    ) -> Result<Option<PullRequestReviews>, StoreError> {
        let repository = repository.to_string();
        self.readers.run(move |conn| pull_requests::pull_request(conn, forge, &repository, number)).await
    }

    async fn put_pull_request(&self, reviews: &PullRequestReviews) -> Result<(), StoreError> {
        let reviews = reviews.clone();
        self.writer.submit(move |conn| pull_requests::put_pull_request(conn, &reviews)).await
    }

    async fn busy_pull_requests(&self, limit: usize) -> Result<Vec<PullRequestReviews>, StoreError> {
        self.readers.run(move |conn| pull_requests::busy_pull_requests(conn, limit)).await
    }

    /// Which runs' owners are dead is asked here, on the caller's side (the check is
    /// the caller's closure); the writer then marks those still running.
    async fn mark_interrupted(
        &self,
        owner_alive: &(dyn for<'s> Fn(&'s str) -> bool + Sync),
        now_ms: u64,
    ) -> Result<Vec<String>, StoreError> {
        let running = self.readers.run(read::running_runs).await?;
        let dead: Vec<String> =
            running.into_iter().filter(|(_, owner)| !owner_alive(owner)).map(|(id, _)| id).collect();
        if dead.is_empty() {
            return Ok(Vec::new());
        }
        self.writer.submit(move |conn| write::interrupt(conn, &dead, now_ms)).await
    }
}
