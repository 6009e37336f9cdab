//! A run queue around another that tells the bench the moment a pull request's
//! record first names a queued review: the exact end of "delivery to a queued
//! review", with no polling of the store beside the dispatcher.

use async_trait::async_trait;
use conclave_core::{
    CachedOutput, Cancel, Job, Lease, NewRun, QueueStats, ReviewOf, RunQueue, RunStore, StoreError, StoredDismissal,
};
use conclave_shared::delivery::{Delivery, Forge, PullRequestReviews};
use conclave_shared::eval::{EvalListing, StoredEval};
use conclave_shared::{Conclave, OutputDialect, RunEvent, RunRecord, RunSummary};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::oneshot;

/// When a request's record first named its review run, and the run's id.
pub type Queued = (Instant, String);

/// Another queue, with the puts of pull request records watched.
#[derive(Debug)]
pub struct WatchedQueue {
    inner: Arc<dyn RunQueue>,
    /// Who waits for which pull request's review, by number (the bench's requests
    /// are all of one repository).
    waiting: Mutex<HashMap<u64, oneshot::Sender<Queued>>>,
}

impl WatchedQueue {
    /// Watches the puts on `inner`.
    pub fn new(inner: Arc<dyn RunQueue>) -> WatchedQueue {
        WatchedQueue { inner, waiting: Mutex::new(HashMap::new()) }
    }

    /// Answers once a put of pull request `number`'s record that names a run has
    /// committed; ask before delivering, so the answer cannot be missed.
    pub fn expect(&self, number: u64) -> oneshot::Receiver<Queued> {
        let (tell, told) = oneshot::channel();
        self.waiting.lock().expect("lock").insert(number, tell);
        told
    }
}

#[async_trait]
impl RunStore for WatchedQueue {
    /// The inner store's put; the time is taken as soon as it has returned, which is
    /// when a reader of the store could first see the run on the record.
    async fn put_pull_request(&self, reviews: &PullRequestReviews) -> Result<(), StoreError> {
        self.inner.put_pull_request(reviews).await?;
        let now = Instant::now();
        if let Some(run) = &reviews.run {
            let waiter = self.waiting.lock().expect("lock").remove(&reviews.pull_request.number);
            if let Some(tell) = waiter {
                let _ = tell.send((now, run.clone()));
            }
        }
        Ok(())
    }
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
        self.inner.get_run(run_id).await
    }
    async fn list_runs(&self, limit: usize) -> Result<Vec<RunSummary>, StoreError> {
        self.inner.list_runs(limit).await
    }
    async fn run_summary(&self, run_id: &str) -> Result<Option<RunSummary>, StoreError> {
        self.inner.run_summary(run_id).await
    }
    async fn latest_review(&self, review: &ReviewOf) -> Result<Option<String>, StoreError> {
        self.inner.latest_review(review).await
    }
    async fn events(&self, run_id: &str, after_seq: u64) -> Result<Vec<RunEvent>, StoreError> {
        self.inner.events(run_id, after_seq).await
    }
    async fn events_page(&self, run_id: &str, after_seq: u64, limit: usize) -> Result<Vec<RunEvent>, StoreError> {
        self.inner.events_page(run_id, after_seq, limit).await
    }
    async fn put_report(&self, run_id: &str, format: &str, content: &str) -> Result<(), StoreError> {
        self.inner.put_report(run_id, format, content).await
    }
    async fn get_report(&self, run_id: &str, format: &str) -> Result<Option<String>, StoreError> {
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
        self.inner.list_evals(conclave, limit).await
    }
    async fn get_eval(&self, id: &str) -> Result<Option<StoredEval>, StoreError> {
        self.inner.get_eval(id).await
    }
    async fn put_dismissal(&self, dismissal: &StoredDismissal) -> Result<bool, StoreError> {
        self.inner.put_dismissal(dismissal).await
    }
    async fn dismissals(&self, repository: Option<&str>) -> Result<Vec<StoredDismissal>, StoreError> {
        self.inner.dismissals(repository).await
    }
    async fn put_delivery(&self, delivery: &Delivery) -> Result<bool, StoreError> {
        self.inner.put_delivery(delivery).await
    }
    async fn pending_deliveries(&self, limit: usize) -> Result<Vec<Delivery>, StoreError> {
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
    async fn busy_pull_requests(&self, limit: usize) -> Result<Vec<PullRequestReviews>, StoreError> {
        self.inner.busy_pull_requests(limit).await
    }
    fn commit_notices(&self) -> Option<tokio::sync::broadcast::Receiver<String>> {
        self.inner.commit_notices()
    }

    fn notices_from_every_process(&self) -> bool {
        self.inner.notices_from_every_process()
    }
    async fn mark_interrupted(
        &self,
        owner_alive: &(dyn for<'s> Fn(&'s str) -> bool + Sync),
        now_ms: u64,
    ) -> Result<Vec<String>, StoreError> {
        self.inner.mark_interrupted(owner_alive, now_ms).await
    }
}

#[async_trait]
impl RunQueue for WatchedQueue {
    async fn enqueue(&self, run: &NewRun, spec: &Value) -> Result<(), StoreError> {
        self.inner.enqueue(run, spec).await
    }
    async fn claim(&self, worker: &str, now_ms: u64, lease_ms: u64) -> Result<Option<Job>, StoreError> {
        self.inner.claim(worker, now_ms, lease_ms).await
    }
    async fn prepare_claimed(
        &self,
        run_id: &str,
        worker: &str,
        conclave: &Conclave,
        input: &Value,
    ) -> Result<bool, StoreError> {
        self.inner.prepare_claimed(run_id, worker, conclave, input).await
    }
    async fn renew(&self, run_id: &str, worker: &str, now_ms: u64, lease_ms: u64) -> Result<Lease, StoreError> {
        self.inner.renew(run_id, worker, now_ms, lease_ms).await
    }
    async fn request_cancel(&self, run_id: &str, now_ms: u64) -> Result<Cancel, StoreError> {
        self.inner.request_cancel(run_id, now_ms).await
    }
    async fn queue_stats(&self, now_ms: u64) -> Result<QueueStats, StoreError> {
        self.inner.queue_stats(now_ms).await
    }
    async fn take_slot(
        &self,
        scope: &str,
        limit: u32,
        holder: &str,
        now_ms: u64,
        lease_ms: u64,
    ) -> Result<Option<u32>, StoreError> {
        self.inner.take_slot(scope, limit, holder, now_ms, lease_ms).await
    }
    async fn renew_slot(
        &self,
        scope: &str,
        slot: u32,
        holder: &str,
        now_ms: u64,
        lease_ms: u64,
    ) -> Result<bool, StoreError> {
        self.inner.renew_slot(scope, slot, holder, now_ms, lease_ms).await
    }
    async fn release_slot(&self, scope: &str, slot: u32, holder: &str) -> Result<(), StoreError> {
        self.inner.release_slot(scope, slot, holder).await
    }
    async fn pause(&self, scope: &str, until_ms: u64) -> Result<(), StoreError> {
        self.inner.pause(scope, until_ms).await
    }
    async fn paused_until(&self, scope: &str, now_ms: u64) -> Result<Option<u64>, StoreError> {
        self.inner.paused_until(scope, now_ms).await
    }
}
