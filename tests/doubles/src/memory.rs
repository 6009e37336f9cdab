//! An in-memory run store: for benchmarks of the engine alone and as a second
//! implementation the conformance suite keeps honest. Nothing survives the process.

use async_trait::async_trait;
use conclave_shared::delivery::{Delivery, Forge, PullRequestReviews};
use conclave_shared::eval::{EvalListing, StoredEval};
use conclave_shared::{Conclave, OutputDialect, RunEvent, RunRecord, RunStatus, RunSummary};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Mutex;

use conclave_core::{
    CachedOutput, Cancel, Job, Lease, NewRun, QueueStats, REVIEW_BRANCH_PATH, REVIEW_REPOSITORY_KEY, ReviewOf,
    RunQueue, RunStore, StoreError, StoredDismissal, dequeued_event, interrupted_event,
};

#[derive(Debug)]
struct StoredRun {
    record: RunRecord,
    owner: String,
    /// For runs of the queue: the spec, and who holds the run until when.
    queued: Option<Queued>,
    events: Vec<RunEvent>,
    /// Position of each node in `record.nodes`, so applying an event is O(1).
    node_index: HashMap<String, usize>,
}

/// A run's place in the queue.
#[derive(Debug)]
struct Queued {
    spec: Value,
    attempt: u32,
    lease: Option<(String, u64)>,
    cancel_requested: bool,
}

/// A webhook delivery, and when it was marked dispatched.
type KeptDelivery = (Delivery, Option<u64>);

/// Runs kept in memory.
#[derive(Debug, Default)]
pub struct MemoryStore {
    runs: Mutex<HashMap<String, StoredRun>>,
    order: Mutex<Vec<String>>,
    reports: Mutex<HashMap<(String, String), String>>,
    /// Slots of the queue: holder and lease end, by scope and slot.
    slots: Mutex<HashMap<(String, u32), (String, u64)>>,
    /// When each paused scope resumes.
    pauses: Mutex<HashMap<String, u64>>,
    /// The dialect each provider's server was found to take.
    dialects: Mutex<HashMap<(String, String), OutputDialect>>,
    /// Cached node outputs by key.
    cache: Mutex<HashMap<String, CachedOutput>>,
    /// Kept evals by id.
    evals: Mutex<HashMap<String, StoredEval>>,
    /// Dismissals by repository and fingerprint.
    dismissals: Mutex<std::collections::BTreeMap<(String, String), StoredDismissal>>,
    /// Webhook deliveries by forge and id, with when each was marked dispatched.
    deliveries: Mutex<HashMap<(Forge, String), KeptDelivery>>,
    /// The webhook dispatcher's records of pull requests by forge, repository and number.
    pull_requests: Mutex<HashMap<(Forge, String, u64), PullRequestReviews>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    fn with_runs<T>(&self, f: impl FnOnce(&mut HashMap<String, StoredRun>) -> T) -> T {
        f(&mut self.runs.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }
}

/// Where a busy pull request record comes in the busy listing: least recently
/// changed first, then by forge, repository and number.
fn busy_order(reviews: &PullRequestReviews) -> (u64, Forge, &str, u64) {
    let request = &reviews.pull_request;
    (reviews.updated_ms, request.forge, request.repository.as_str(), request.number)
}

fn push_event(run: &mut StoredRun, event: &RunEvent) -> Result<(), StoreError> {
    let last = run.events.last().map_or(0, |e| e.seq);
    if event.seq <= last {
        return Err(StoreError::OutOfOrder { run_id: event.run_id.clone(), seq: event.seq, last });
    }
    run.record.apply_indexed(event, &mut run.node_index);
    run.events.push(event.clone());
    Ok(())
}

#[async_trait]
impl RunStore for MemoryStore {
    async fn create_run(&self, run: &NewRun) -> Result<(), StoreError> {
        let record = RunRecord::new(run.id.clone(), run.conclave.clone(), run.input.clone(), run.created_ms);
        let inserted = self.with_runs(|runs| {
            if runs.contains_key(&run.id) {
                return false;
            }
            let node_index = record.nodes.iter().enumerate().map(|(i, n)| (n.node_id.clone(), i)).collect();
            let stored = StoredRun { record, owner: run.owner.clone(), queued: None, events: Vec::new(), node_index };
            runs.insert(run.id.clone(), stored);
            true
        });
        if !inserted {
            return Err(StoreError::Backend(format!("a run with id `{}` already exists", run.id)));
        }
        self.order.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(run.id.clone());
        Ok(())
    }

    async fn append_event(&self, event: &RunEvent) -> Result<(), StoreError> {
        self.with_runs(|runs| {
            let run = runs.get_mut(&event.run_id).ok_or_else(|| StoreError::UnknownRun(event.run_id.clone()))?;
            push_event(run, event)
        })
    }

    async fn get_run(&self, run_id: &str) -> Result<Option<RunRecord>, StoreError> {
        Ok(self.with_runs(|runs| runs.get(run_id).map(|r| r.record.clone())))
    }

    async fn list_runs(&self, limit: usize) -> Result<Vec<RunSummary>, StoreError> {
        let order = self.order.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        let mut summaries: Vec<RunSummary> = self
            .with_runs(|runs| order.iter().filter_map(|id| runs.get(id).map(|r| r.record.summary.clone())).collect());
        summaries.sort_by(|a, b| b.created_ms.cmp(&a.created_ms).then_with(|| b.id.cmp(&a.id)));
        summaries.truncate(limit);
        Ok(summaries)
    }

    async fn latest_review(&self, review: &ReviewOf) -> Result<Option<String>, StoreError> {
        let matches = |input: &Value| {
            let repository = input.get(REVIEW_REPOSITORY_KEY).and_then(Value::as_str);
            let branch = REVIEW_BRANCH_PATH.iter().try_fold(input, |v, key| v.get(key)).and_then(Value::as_str);
            repository == Some(review.repository.as_str())
                && branch.is_some_and(|b| review.branches.iter().any(|n| n == b))
        };
        Ok(self.with_runs(|runs| {
            runs.values()
                .map(|r| &r.record)
                .filter(|r| r.summary.status == RunStatus::Succeeded && matches(&r.input))
                .max_by(|a, b| (a.summary.created_ms, &a.summary.id).cmp(&(b.summary.created_ms, &b.summary.id)))
                .map(|r| r.summary.id.clone())
        }))
    }

    async fn events(&self, run_id: &str, after_seq: u64) -> Result<Vec<RunEvent>, StoreError> {
        self.events_page(run_id, after_seq, usize::MAX).await
    }

    async fn events_page(&self, run_id: &str, after_seq: u64, limit: usize) -> Result<Vec<RunEvent>, StoreError> {
        self.with_runs(|runs| {
            let run = runs.get(run_id).ok_or_else(|| StoreError::UnknownRun(run_id.to_string()))?;
            let start = run.events.partition_point(|e| e.seq <= after_seq);
            Ok(run.events[start..].iter().take(limit).cloned().collect())
        })
    }

    async fn put_report(&self, run_id: &str, format: &str, content: &str) -> Result<(), StoreError> {
        if !self.with_runs(|runs| runs.contains_key(run_id)) {
            return Err(StoreError::UnknownRun(run_id.to_string()));
        }
        let mut reports = self.reports.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        reports.insert((run_id.to_string(), format.to_string()), content.to_string());
        Ok(())
    }

    async fn get_report(&self, run_id: &str, format: &str) -> Result<Option<String>, StoreError> {
        let reports = self.reports.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        Ok(reports.get(&(run_id.to_string(), format.to_string())).cloned())
    }

    async fn endpoint_dialect(&self, provider: &str, endpoint: &str) -> Result<Option<OutputDialect>, StoreError> {
        let dialects = self.dialects.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        Ok(dialects.get(&(provider.to_string(), endpoint.to_string())).copied())
    }

    async fn remember_endpoint_dialect(
        &self,
        provider: &str,
        endpoint: &str,
        dialect: OutputDialect,
    ) -> Result<(), StoreError> {
        let mut dialects = self.dialects.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        dialects.insert((provider.to_string(), endpoint.to_string()), dialect);
        Ok(())
    }

    async fn cached_output(&self, key: &str, now_ms: u64) -> Result<Option<CachedOutput>, StoreError> {
        let cache = self.cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        Ok(cache.get(key).filter(|e| e.expires_ms.is_none_or(|end| end > now_ms)).cloned())
    }

    async fn cache_output(&self, key: &str, entry: &CachedOutput) -> Result<(), StoreError> {
        let mut cache = self.cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        cache.insert(key.to_string(), entry.clone());
        Ok(())
    }

    async fn put_eval(&self, eval: &StoredEval) -> Result<(), StoreError> {
        let mut evals = self.evals.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        evals.insert(eval.id.clone(), eval.clone());
        Ok(())
    }

    async fn list_evals(&self, conclave: Option<&str>, limit: usize) -> Result<Vec<EvalListing>, StoreError> {
        let evals = self.evals.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut listed: Vec<EvalListing> =
            evals.values().filter(|e| conclave.is_none_or(|c| e.conclave == c)).map(StoredEval::listing).collect();
        listed.sort_by(|a, b| (b.created_ms, &b.id).cmp(&(a.created_ms, &a.id)));
        listed.truncate(limit);
        Ok(listed)
    }

    async fn get_eval(&self, id: &str) -> Result<Option<StoredEval>, StoreError> {
        let evals = self.evals.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        Ok(evals.get(id).cloned())
    }

    async fn put_dismissal(&self, dismissal: &StoredDismissal) -> Result<bool, StoreError> {
        let mut kept = self.dismissals.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let key = (dismissal.repository.clone(), dismissal.fingerprint.clone());
        if kept.contains_key(&key) {
            return Ok(false);
        }
        kept.insert(key, dismissal.clone());
        Ok(true)
    }

    async fn dismissals(&self, repository: Option<&str>) -> Result<Vec<StoredDismissal>, StoreError> {
        let kept = self.dismissals.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        Ok(kept.values().filter(|d| repository.is_none_or(|r| d.repository == r)).cloned().collect())
    }

    async fn put_delivery(&self, delivery: &Delivery) -> Result<bool, StoreError> {
        let mut kept = self.deliveries.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let key = (delivery.forge, delivery.id.clone());
        if kept.contains_key(&key) {
            return Ok(false);
        }
        kept.insert(key, (delivery.clone(), None));
        Ok(true)
    }

    async fn pending_deliveries(&self, limit: usize) -> Result<Vec<Delivery>, StoreError> {
        let kept = self.deliveries.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut pending: Vec<&Delivery> = kept
            .values()
            .filter(|(d, dispatched)| dispatched.is_none() && d.ignored().is_none())
            .map(|(d, _)| d)
            .collect();
        pending.sort_by(|a, b| (a.received_ms, a.forge, &a.id).cmp(&(b.received_ms, b.forge, &b.id)));
        Ok(pending.into_iter().take(limit).cloned().collect())
    }

    async fn mark_delivery_dispatched(&self, forge: Forge, id: &str, at_ms: u64) -> Result<bool, StoreError> {
        let mut kept = self.deliveries.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match kept.get_mut(&(forge, id.to_string())) {
            Some((delivery, dispatched @ None)) if delivery.ignored().is_none() => {
                *dispatched = Some(at_ms);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn pull_request(
        &self,
        forge: Forge,
        repository: &str,
        number: u64,
    ) -> Result<Option<PullRequestReviews>, StoreError> {
        let kept = self.pull_requests.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        Ok(kept.get(&(forge, repository.to_string(), number)).cloned())
    }

    async fn put_pull_request(&self, reviews: &PullRequestReviews) -> Result<(), StoreError> {
        let mut kept = self.pull_requests.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let request = &reviews.pull_request;
        kept.insert((request.forge, request.repository.clone(), request.number), reviews.clone());
        Ok(())
    }

    async fn busy_pull_requests(&self, limit: usize) -> Result<Vec<PullRequestReviews>, StoreError> {
        let kept = self.pull_requests.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut busy: Vec<&PullRequestReviews> = kept.values().filter(|r| r.is_busy()).collect();
        busy.sort_by(|a, b| busy_order(a).cmp(&busy_order(b)));
        Ok(busy.into_iter().take(limit).cloned().collect())
    }

    async fn mark_interrupted(
        &self,
        owner_alive: &(dyn for<'s> Fn(&'s str) -> bool + Sync),
        now_ms: u64,
    ) -> Result<Vec<String>, StoreError> {
        self.with_runs(|runs| {
            let mut marked = Vec::new();
            for (id, run) in runs.iter_mut() {
                // A queued run's lease, not its owner, says whether it lives.
                if run.record.summary.status == RunStatus::Running && run.queued.is_none() && !owner_alive(&run.owner) {
                    let seq = run.events.last().map_or(0, |e| e.seq) + 1;
                    push_event(run, &interrupted_event(id, seq, now_ms))?;
                    marked.push(id.clone());
                }
            }
            marked.sort();
            Ok(marked)
        })
    }
}

#[async_trait]
impl RunQueue for MemoryStore {
    async fn enqueue(&self, run: &NewRun, spec: &Value) -> Result<(), StoreError> {
        self.create_run(run).await?;
        self.with_runs(|runs| {
            if let Some(stored) = runs.get_mut(&run.id) {
                stored.record.summary.status = RunStatus::Queued;
                stored.queued = Some(Queued { spec: spec.clone(), attempt: 0, lease: None, cancel_requested: false });
            }
        });
        Ok(())
    }

    async fn claim(&self, worker: &str, now_ms: u64, lease_ms: u64) -> Result<Option<Job>, StoreError> {
        let order = self.order.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        Ok(self.with_runs(|runs| {
            let claimable = |run: &StoredRun| match (&run.queued, run.record.summary.status) {
                (Some(_), RunStatus::Queued) => true,
                (Some(q), RunStatus::Running) => q.lease.as_ref().is_none_or(|(_, until)| *until < now_ms),
                _ => false,
            };
            let id = order.iter().find(|id| runs.get(*id).is_some_and(claimable))?;
            let run = runs.get_mut(id)?;
            run.record.summary.status = RunStatus::Running;
            let queued = run.queued.as_mut()?;
            queued.attempt += 1;
            queued.lease = Some((worker.to_string(), now_ms + lease_ms));
            Some(Job { run_id: id.clone(), spec: queued.spec.clone(), attempt: queued.attempt })
        }))
    }

    async fn prepare_claimed(
        &self,
        run_id: &str,
        worker: &str,
        conclave: &Conclave,
        input: &Value,
    ) -> Result<bool, StoreError> {
        Ok(self.with_runs(|runs| {
            let Some(run) = runs.get_mut(run_id) else { return false };
            let held = run.record.summary.status == RunStatus::Running
                && run.queued.as_ref().is_some_and(|q| q.lease.as_ref().is_some_and(|(w, _)| w == worker));
            if !held || !run.events.is_empty() {
                return false;
            }
            // With no event, the record is what a new run of this conclave and input is.
            let created_ms = run.record.summary.created_ms;
            let mut record = RunRecord::new(run_id.to_string(), conclave.clone(), input.clone(), created_ms);
            record.summary.status = RunStatus::Running;
            run.node_index = record.nodes.iter().enumerate().map(|(i, n)| (n.node_id.clone(), i)).collect();
            run.record = record;
            true
        }))
    }

    async fn renew(&self, run_id: &str, worker: &str, now_ms: u64, lease_ms: u64) -> Result<Lease, StoreError> {
        self.with_runs(|runs| {
            let run = runs.get_mut(run_id).ok_or_else(|| StoreError::UnknownRun(run_id.to_string()))?;
            let running = run.record.summary.status == RunStatus::Running;
            let Some(queued) =
                run.queued.as_mut().filter(|q| running && q.lease.as_ref().is_some_and(|(w, _)| w == worker))
            else {
                return Ok(Lease::Lost);
            };
            queued.lease = Some((worker.to_string(), now_ms + lease_ms));
            Ok(Lease::Held { cancel_requested: queued.cancel_requested })
        })
    }

    async fn request_cancel(&self, run_id: &str, now_ms: u64) -> Result<Cancel, StoreError> {
        self.with_runs(|runs| {
            let run = runs.get_mut(run_id).ok_or_else(|| StoreError::UnknownRun(run_id.to_string()))?;
            match run.record.summary.status {
                RunStatus::Queued => {
                    let seq = run.events.last().map_or(0, |e| e.seq) + 1;
                    push_event(run, &dequeued_event(run_id, seq, now_ms))?;
                    Ok(Cancel::Dequeued)
                }
                RunStatus::Running => {
                    if let Some(queued) = run.queued.as_mut() {
                        queued.cancel_requested = true;
                    }
                    Ok(Cancel::Requested)
                }
                _ => Ok(Cancel::AlreadyEnded),
            }
        })
    }

    async fn take_slot(
        &self,
        scope: &str,
        limit: u32,
        holder: &str,
        now_ms: u64,
        lease_ms: u64,
    ) -> Result<Option<u32>, StoreError> {
        let mut slots = self.slots.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let free =
            (0..limit).find(|&slot| slots.get(&(scope.to_string(), slot)).is_none_or(|(_, until)| *until < now_ms));
        if let Some(slot) = free {
            slots.insert((scope.to_string(), slot), (holder.to_string(), now_ms + lease_ms));
        }
        Ok(free)
    }

    async fn renew_slot(
        &self,
        scope: &str,
        slot: u32,
        holder: &str,
        now_ms: u64,
        lease_ms: u64,
    ) -> Result<bool, StoreError> {
        let mut slots = self.slots.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match slots.get_mut(&(scope.to_string(), slot)) {
            Some((held_by, until)) if held_by == holder => {
                *until = now_ms + lease_ms;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn release_slot(&self, scope: &str, slot: u32, holder: &str) -> Result<(), StoreError> {
        let mut slots = self.slots.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if slots.get(&(scope.to_string(), slot)).is_some_and(|(held_by, _)| held_by == holder) {
            slots.remove(&(scope.to_string(), slot));
        }
        Ok(())
    }

    async fn pause(&self, scope: &str, until_ms: u64) -> Result<(), StoreError> {
        let mut pauses = self.pauses.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let until = pauses.entry(scope.to_string()).or_default();
        *until = (*until).max(until_ms);
        Ok(())
    }

    async fn paused_until(&self, scope: &str, now_ms: u64) -> Result<Option<u64>, StoreError> {
        let pauses = self.pauses.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        Ok(pauses.get(scope).copied().filter(|&until| until > now_ms))
    }

    async fn queue_stats(&self, now_ms: u64) -> Result<QueueStats, StoreError> {
        Ok(self.with_runs(|runs| {
            let mut stats = QueueStats::default();
            for run in runs.values().filter(|r| r.queued.is_some()) {
                match run.record.summary.status {
                    RunStatus::Queued => {
                        stats.queued += 1;
                        let waited = now_ms.saturating_sub(run.record.summary.created_ms);
                        stats.oldest_queued_ms = Some(stats.oldest_queued_ms.map_or(waited, |w| w.max(waited)));
                    }
                    RunStatus::Running => stats.running += 1,
                    _ => {}
                }
            }
            stats
        }))
    }
}
