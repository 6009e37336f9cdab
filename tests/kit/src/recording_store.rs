//! A run store around another that writes down every read it is asked for, so a test
//! can count a caller's reads: one query to find a baseline, pages of events (never
//! the whole log) for an event stream.

use async_trait::async_trait;
use conclave_core::{CachedOutput, NewRun, ReviewOf, RunStore, StoreError, StoredDismissal};
use conclave_shared::delivery::{Delivery, Forge, PullRequestReviews};
use conclave_shared::eval::{EvalListing, StoredEval};
use conclave_shared::{OutputDialect, RunEvent, RunRecord, RunSummary};
use std::sync::{Arc, Mutex};

/// One read a caller asked for: the method, and the limit it gave, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Read {
    /// The `RunStore` method.
    pub method: &'static str,
    /// `list_runs`', `events_page`'s and `list_evals`' limit.
    pub limit: Option<usize>,
}

/// Another store, with the reads asked of it written down.
#[derive(Debug)]
pub struct RecordingStore {
    inner: Arc<dyn RunStore>,
    reads: Mutex<Vec<Read>>,
}

impl RecordingStore {
    /// Records the reads asked of `inner`.
    pub fn new(inner: Arc<dyn RunStore>) -> RecordingStore {
        RecordingStore { inner, reads: Mutex::new(Vec::new()) }
    }

    /// The reads asked for since the last call, in order; the record starts again.
    pub fn take_reads(&self) -> Vec<Read> {
        std::mem::take(&mut *self.reads.lock().expect("lock"))
    }

    fn read(&self, method: &'static str, limit: Option<usize>) {
        self.reads.lock().expect("lock").push(Read { method, limit });
    }
}

#[async_trait]
impl RunStore for RecordingStore {
    async fn create_run(&self, run: &NewRun) -> Result<(), StoreError> {
        self.inner.create_run(run).await
    }
    async fn append_event(&self, event: &RunEvent) -> Result<(), StoreError> {
        self.inner.append_event(event).await
    }
    async fn append_events(&self, events: &[RunEvent]) -> Result<(), StoreError> {
        self.inner.append_events(events).await
    }
    async fn get_run(&self, run_id: &str) -> Result<Option<RunRecord>, StoreError> {
        self.read("get_run", None);
        self.inner.get_run(run_id).await
    }
    async fn list_runs(&self, limit: usize) -> Result<Vec<RunSummary>, StoreError> {
        self.read("list_runs", Some(limit));
        self.inner.list_runs(limit).await
    }
    async fn run_summary(&self, run_id: &str) -> Result<Option<RunSummary>, StoreError> {
        self.read("run_summary", None);
        self.inner.run_summary(run_id).await
    }
    async fn latest_review(&self, review: &ReviewOf) -> Result<Option<String>, StoreError> {
        self.read("latest_review", None);
        self.inner.latest_review(review).await
    }
    async fn events(&self, run_id: &str, after_seq: u64) -> Result<Vec<RunEvent>, StoreError> {
        self.read("events", None);
        self.inner.events(run_id, after_seq).await
    }
    async fn events_page(&self, run_id: &str, after_seq: u64, limit: usize) -> Result<Vec<RunEvent>, StoreError> {
        self.read("events_page", Some(limit));
        self.inner.events_page(run_id, after_seq, limit).await
    }
    async fn put_report(&self, run_id: &str, format: &str, content: &str) -> Result<(), StoreError> {
        self.inner.put_report(run_id, format, content).await
    }
    async fn get_report(&self, run_id: &str, format: &str) -> Result<Option<String>, StoreError> {
        self.read("get_report", None);
        self.inner.get_report(run_id, format).await
    }
    async fn endpoint_dialect(&self, provider: &str, endpoint: &str) -> Result<Option<OutputDialect>, StoreError> {
        self.inner.endpoint_dialect(provider, endpoint).await
    }
    async fn remember_endpoint_dialect(
        &self,
        provider: &str,
        endpoint: &str,
        dialect: OutputDialect,
    ) -> Result<(), StoreError> {
        self.inner.remember_endpoint_dialect(provider, endpoint, dialect).await
    }
    fn commit_notices(&self) -> Option<tokio::sync::broadcast::Receiver<String>> {
        self.inner.commit_notices()
    }

    fn notices_from_every_process(&self) -> bool {
        self.inner.notices_from_every_process()
    }
    async fn cached_output(&self, key: &str, now_ms: u64) -> Result<Option<CachedOutput>, StoreError> {
        self.inner.cached_output(key, now_ms).await
    }
    async fn cache_output(&self, key: &str, entry: &CachedOutput) -> Result<(), StoreError> {
        self.inner.cache_output(key, entry).await
    }
    async fn put_eval(&self, eval: &StoredEval) -> Result<(), StoreError> {
        self.inner.put_eval(eval).await
    }
    async fn list_evals(&self, conclave: Option<&str>, limit: usize) -> Result<Vec<EvalListing>, StoreError> {
        self.read("list_evals", Some(limit));
        self.inner.list_evals(conclave, limit).await
    }
    async fn get_eval(&self, id: &str) -> Result<Option<StoredEval>, StoreError> {
        self.read("get_eval", None);
        self.inner.get_eval(id).await
    }
    async fn put_dismissal(&self, dismissal: &StoredDismissal) -> Result<bool, StoreError> {
        self.inner.put_dismissal(dismissal).await
    }
    async fn dismissals(&self, repository: Option<&str>) -> Result<Vec<StoredDismissal>, StoreError> {
        self.read("dismissals", None);
        self.inner.dismissals(repository).await
    }
    async fn put_delivery(&self, delivery: &Delivery) -> Result<bool, StoreError> {
        self.inner.put_delivery(delivery).await
    }
    async fn pending_deliveries(&self, limit: usize) -> Result<Vec<Delivery>, StoreError> {
        self.read("pending_deliveries", None);
        self.inner.pending_deliveries(limit).await
    }
    async fn mark_delivery_dispatched(&self, forge: Forge, id: &str, at_ms: u64) -> Result<bool, StoreError> {
        self.inner.mark_delivery_dispatched(forge, id, at_ms).await
    }
    async fn pull_request(
        &self,
        forge: Forge,
        repository: &str,
        number: u64,
    ) -> Result<Option<PullRequestReviews>, StoreError> {
        self.inner.pull_request(forge, repository, number).await
    }
    async fn put_pull_request(&self, reviews: &PullRequestReviews) -> Result<(), StoreError> {
        self.inner.put_pull_request(reviews).await
    }
    async fn busy_pull_requests(&self, limit: usize) -> Result<Vec<PullRequestReviews>, StoreError> {
        self.inner.busy_pull_requests(limit).await
    }
    async fn mark_interrupted(
        &self,
        owner_alive: &(dyn for<'s> Fn(&'s str) -> bool + Sync),
        now_ms: u64,
    ) -> Result<Vec<String>, StoreError> {
        self.inner.mark_interrupted(owner_alive, now_ms).await
    }
}
