//! Workers: claim runs from the run queue and run them on the engine, under a lease
//! renewed while they run.
//!
//! - A run claimed for the first time starts; one claimed again because its earlier
//!   worker stopped renewing (it died) is resumed: what had succeeded is kept.
//! - Every renewal also says whether a cancel was asked for, from any process: the
//!   worker then cancels the run, within one renewal interval.
//! - A worker whose lease was taken over abandons the run without ending it.
//! - A run the worker cannot start (an unreadable spec, a conclave that no longer
//!   checks, a repository gone) ends failed with the reason, so that it is not
//!   claimed again and again.
//! - A review's reports are stored when its run ends, as `conclave review` does.

use conclave_catalog::{CatalogContext, CheckedConclave, check_text};
use conclave_core::{Job, Lease, NewRun, RunQueue, RunStore, StoreError, now_ms, owner_token};
use conclave_engine::{Commands, Engine, EventBus, RunHandle, RunOptions};
use conclave_review::ReviewPolicy;
use conclave_review::diff::Change;
use conclave_review::pipeline;
use conclave_shared::{Budget, Conclave, EventKind, RunEvent, RunRecord, RunStatus};

use crate::forge_service::PullRequestJob;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// What a queued run is, as the API or the CLI enqueued it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum JobSpec {
    /// A run of its conclave with its input.
    Run,
    /// A review of the change in its input.
    Review {
        /// Globs the review tools may read although `.git/` or `.gitignore` hide them.
        #[serde(default)]
        allow_paths: Vec<String>,
        /// Runs of each reviewer (1: once).
        #[serde(default = "one")]
        samples: u32,
        /// The notices of agents moved to the local model when it was prepared,
        /// which make the review degraded.
        #[serde(default)]
        fell_back: Vec<String>,
        /// Whether the cache is ignored: cached nodes run again and keep nothing.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        no_cache: bool,
    },
    /// A review of a pull (merge) request a webhook asked for: its worker fetches the
    /// request and prepares the review first (`forge_service::review`).
    PullRequest(PullRequestJob),
}

fn one() -> u32 {
    1
}

/// Enqueues a run of `conclave` (as it will run) with `input`; its id.
pub async fn enqueue(
    queue: &dyn RunQueue,
    conclave: &Conclave,
    input: Value,
    spec: &JobSpec,
    budget: Option<Budget>,
) -> Result<String, StoreError> {
    let id = uuid::Uuid::now_v7().to_string();
    // The run's budget is stored with its conclave, as `Engine::start` stores it, for
    // the worker that claims it and any that takes it up again.
    let mut conclave = conclave.clone();
    conclave.settings.budget = Budget::tighter(conclave.settings.budget.as_ref(), budget.as_ref());
    let run = NewRun { id: id.clone(), conclave, input, created_ms: now_ms(), owner: owner_token() };
    let spec = serde_json::to_value(spec).map_err(|e| StoreError::Backend(e.to_string()))?;
    queue.enqueue(&run, &spec).await?;
    Ok(id)
}

/// A run this process runs, still going: how to cancel it and follow its events.
#[derive(Debug, Clone)]
pub struct LiveRun {
    /// Cancels it.
    pub cancel: CancellationToken,
    /// Its events, for live subscribers.
    pub bus: Arc<EventBus>,
}

/// The runs a process runs, by id: the API streams them from memory and cancels them
/// at once; the embedded worker of `conclave serve` adds the runs it claims.
pub type LiveRuns = Arc<Mutex<HashMap<String, LiveRun>>>;

/// How a worker works.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// Its name in the queue (unique per process).
    pub id: String,
    /// How long a claim holds without renewal; renewed every third of it.
    pub lease: Duration,
    /// How long to wait before asking again when the queue is empty.
    pub idle: Duration,
    /// Runs it runs at once.
    pub max_runs: usize,
}

/// A worker over a queue, its engine sharing the queue's store.
#[derive(Debug, Clone)]
pub struct Worker {
    queue: Arc<dyn RunQueue>,
    engine: Engine,
    context: CatalogContext,
    config: WorkerConfig,
    live: Option<LiveRuns>,
    forges: Option<Arc<dyn ForgeJobs>>,
    /// Told when a run was queued in this process, so it looks at the queue at once.
    wake: Arc<tokio::sync::Notify>,
}

/// Reviews of pull requests a worker claimed, which it hands to the service that
/// fetches and posts them (`forge_service::review`).
pub trait ForgeJobs: Send + Sync + std::fmt::Debug {
    /// Runs the claimed review `job` of the request `spec` names to its end.
    fn review<'a>(&'a self, worker: &'a Worker, job: &'a Job, spec: PullRequestJob) -> BoxFuture<'a, ()>;
}

impl Worker {
    /// A worker claiming from `queue` and running on `engine` (whose store must be the
    /// queue's), checking conclaves against `context`.
    pub fn new(queue: Arc<dyn RunQueue>, engine: Engine, context: CatalogContext, config: WorkerConfig) -> Worker {
        Worker { queue, engine, context, config, live: None, forges: None, wake: Arc::default() }
    }

    /// The same worker, looking at the queue as soon as `wake` is told (a server's
    /// API queueing a run), besides every `idle`.
    pub fn woken_by(self, wake: Arc<tokio::sync::Notify>) -> Worker {
        Worker { wake, ..self }
    }

    /// The same worker, reviewing the pull requests webhooks queue through `service`.
    pub fn serving_forges(self, service: Arc<dyn ForgeJobs>) -> Worker {
        Worker { forges: Some(service), ..self }
    }

    /// The store its runs are kept in.
    pub(crate) fn store(&self) -> &dyn RunStore {
        self.queue.as_ref()
    }

    /// The engine it runs runs on.
    pub(crate) fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Replaces the conclave and input of a run this worker holds and has not
    /// started (see [`RunQueue::prepare_claimed`]); `false` when it lost the run.
    pub(crate) async fn prepare_claimed(
        &self,
        run_id: &str,
        conclave: &Conclave,
        input: &Value,
    ) -> Result<bool, StoreError> {
        self.queue.prepare_claimed(run_id, &self.config.id, conclave, input).await
    }

    /// The same worker, announcing the runs it runs in `live`.
    pub fn announcing(self, live: LiveRuns) -> Worker {
        Worker { live: Some(live), ..self }
    }

    /// Claims and runs runs until `shutdown`; runs still going then are abandoned to
    /// the next worker, not ended.
    pub async fn work(self, shutdown: CancellationToken) {
        self.work_until(shutdown.clone(), shutdown).await;
    }

    /// Claims runs until `stop`, then lets the runs it has finish; `abort` abandons
    /// them to the next worker instead (their lease runs out, and it resumes them).
    pub async fn work_until(self, stop: CancellationToken, abort: CancellationToken) {
        let mut running: JoinSet<()> = JoinSet::new();
        self.claim_until(&stop, &abort, &mut running).await;
        loop {
            tokio::select! {
                _ = abort.cancelled() => break,
                next = running.join_next() => if next.is_none() { return },
            }
        }
        running.abort_all();
        while running.join_next().await.is_some() {}
    }

    async fn claim_until(&self, stop: &CancellationToken, abort: &CancellationToken, running: &mut JoinSet<()>) {
        loop {
            while running.len() < self.config.max_runs.max(1) {
                match self.queue.claim(&self.config.id, now_ms(), self.config.lease.as_millis() as u64).await {
                    Ok(Some(job)) => {
                        let worker = self.clone();
                        running.spawn(async move { worker.run_job(job).await });
                    }
                    Ok(None) => break,
                    Err(e) => {
                        tracing::error!(worker = self.config.id, "could not claim a run: {e}");
                        break;
                    }
                }
            }
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = abort.cancelled() => return,
                Some(_) = running.join_next(), if !running.is_empty() => {}
                _ = tokio::time::sleep(self.config.idle) => {}
                () = self.wake.notified() => {}
            }
        }
    }

    /// Runs one claimed run to its end (or until its lease is lost).
    async fn run_job(&self, job: Job) {
        if let Ok(JobSpec::PullRequest(spec)) = serde_json::from_value::<JobSpec>(job.spec.clone()) {
            return match &self.forges {
                Some(service) => service.review(self, &job, spec).await,
                None => {
                    let reason = "this worker reviews no pull requests: start it with the forge's credentials \
                                  (CONCLAVE_GITHUB_APP_ID and CONCLAVE_GITHUB_APP_KEY_FILE, CONCLAVE_GITHUB_TOKEN or \
                                  CONCLAVE_GITLAB_TOKEN)";
                    self.fail(&job.run_id, reason.into()).await
                }
            };
        }
        let started = match self.start(&job).await {
            Ok(started) => started,
            Err(reason) => return self.fail(&job.run_id, reason).await,
        };
        let (handle, fell_back) = started;
        self.announce(&job.run_id, Some(LiveRun { cancel: handle.cancel_token(), bus: handle.bus() }));
        let held = self.hold_lease(&job.run_id, handle).await;
        self.announce(&job.run_id, None);
        let Some(status) = held else { return };
        if let Some(fell_back) = fell_back
            && status != RunStatus::Cancelled
        {
            let store: &dyn RunStore = self.queue.as_ref();
            if let Err(e) = pipeline::finish_against(store, &job.run_id, None, &fell_back).await {
                tracing::error!(run_id = job.run_id, "could not store the review's reports: {e}");
            }
        }
    }

    /// Adds (or, with `None`, removes) a run in the process's live runs.
    pub(crate) fn announce(&self, run_id: &str, run: Option<LiveRun>) {
        let Some(live) = &self.live else { return };
        let mut live = live.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match run {
            Some(run) => live.insert(run_id.to_string(), run),
            None => live.remove(run_id),
        };
    }

    /// Starts (or resumes) the claimed run; for a review, also the notices that make
    /// it degraded.
    async fn start(&self, job: &Job) -> Result<(RunHandle, Option<Vec<String>>), String> {
        let spec: JobSpec = serde_json::from_value(job.spec.clone())
            .map_err(|e| format!("the run's queue entry is unreadable: {e}"))?;
        let record = self
            .queue
            .get_run(&job.run_id)
            .await
            .map_err(|e| e.to_string())?
            .ok_or_else(|| "the run is gone from the store".to_string())?;
        let (run_id, context) = (job.run_id.clone(), self.context.clone());
        // Checking the conclave reads its schema files, and a review opens its
        // repository: a blocking thread's work.
        let prepared = tokio::task::spawn_blocking(move || prepare_job(&run_id, &record, spec, &context))
            .await
            .map_err(|e| format!("preparing the run stopped: {e}"))?;
        let (conclave, options, fell_back) = prepared?;
        let handle = self.engine.resume(conclave, &job.run_id, options).await.map_err(|e| e.to_string())?;
        Ok((handle, fell_back))
    }

    /// Waits for the run while renewing its lease: cancels it when asked, abandons
    /// it when the lease is lost (`None`). Returns how it ended.
    pub(crate) async fn hold_lease(&self, run_id: &str, handle: RunHandle) -> Option<RunStatus> {
        let cancel = handle.cancel_token();
        let abort = handle.abandoner();
        // A third of the lease keeps it held through a missed renewal; at least every
        // half second, so a cancel asked for elsewhere arrives within a second.
        let every = (self.config.lease / 3).min(Duration::from_millis(500));
        let lease_ms = self.config.lease.as_millis() as u64;
        let wait = handle.wait();
        tokio::pin!(wait);
        loop {
            tokio::select! {
                outcome = &mut wait => return Some(outcome.status),
                _ = tokio::time::sleep(every) => {
                    match self.queue.renew(run_id, &self.config.id, now_ms(), lease_ms).await {
                        Ok(Lease::Held { cancel_requested: true }) => cancel.cancel(),
                        Ok(Lease::Held { .. }) => {}
                        Ok(Lease::Lost) => {
                            tracing::warn!(run_id, worker = self.config.id, "lease lost: another worker has the run");
                            abort.abandon();
                            return None;
                        }
                        // The store may recover; the lease holds until it expires.
                        Err(e) => tracing::warn!(run_id, "could not renew the lease: {e}"),
                    }
                }
            }
        }
    }

    /// Ends a run the worker could not start as failed, with the reason.
    pub(crate) async fn fail(&self, run_id: &str, reason: String) {
        tracing::error!(run_id, worker = self.config.id, "cannot run: {reason}");
        let last = self.queue.events(run_id, 0).await.ok().and_then(|e| e.last().map(|e| e.seq)).unwrap_or(0);
        let kind = EventKind::RunFinished { status: RunStatus::Failed, failed_node: None, error: Some(reason) };
        let event = RunEvent { run_id: run_id.to_string(), seq: last + 1, at_ms: now_ms(), kind };
        if let Err(e) = self.queue.append_event(&event).await {
            tracing::error!(run_id, "could not record the failure: {e}");
        }
    }
}

/// A claimed run's conclave, checked here, and its engine options (a review's tools
/// and policy, and the notices that make it degraded). It reads files.
pub(crate) fn prepare_job(
    run_id: &str,
    record: &RunRecord,
    spec: JobSpec,
    context: &CatalogContext,
) -> Result<(CheckedConclave, RunOptions, Option<Vec<String>>), String> {
    let text = serde_json::to_string(&record.conclave).map_err(|e| e.to_string())?;
    let conclave: CheckedConclave = check_text(&format!("<run {run_id}>"), &text, context)
        .map_err(|e| format!("the run's conclave does not check here: {e}"))?;
    let (options, fell_back) = match spec {
        // Queued from a file of the workspace, or one the API let through its allowed programs.
        JobSpec::Run => (
            RunOptions {
                policy: Some(Arc::new(ReviewPolicy::default())),
                commands: Some(Arc::new(Commands::any(Some(".".into())))),
                ..RunOptions::default()
            },
            None,
        ),
        JobSpec::Review { allow_paths, samples, fell_back, no_cache } => {
            let change = Change::from_run_input(&record.input)
                .ok_or_else(|| "the run's input is not a review's change".to_string())?;
            let mut review = pipeline::prepare_recorded(change, conclave.clone(), &allow_paths, samples)
                .map_err(|e| e.to_string())?;
            review.no_cache = no_cache;
            (pipeline::run_options(&review, None), Some(fell_back))
        }
        JobSpec::PullRequest(_) => {
            return Err("a pull request's review is prepared by the worker that fetches it".into());
        }
    };
    Ok((conclave, options, fell_back))
}
