//! The run store boundary: where runs, their events and node outputs are kept, the
//! evals of conclaves (`conclave eval`'s summaries), the dismissals of findings
//! made by replying on a pull request, and the webhook deliveries forges sent.
//!
//! The engine appends events; the store derives run and node state from them in the
//! same write, so a stored run is always consistent with its event log.
//!
//! **Invariant:** the engine depends on [`RunStore`] only; SQL lives in `conclave-store`.
//! How an event changes a run is `conclave_shared::effect_of`, the same for every backend.

use async_trait::async_trait;
use conclave_shared::delivery::{Delivery, Forge, PullRequestReviews};
use conclave_shared::eval::{EvalListing, StoredEval};
use conclave_shared::{Conclave, NodeOutput, OutputDialect, RunEvent, RunRecord, RunSummary};
use serde_json::Value;
use std::fmt;

/// The key of a review run's input that records the repository's root (as text).
pub const REVIEW_REPOSITORY_KEY: &str = "repository";
/// The keys, outermost first, of a review run's input under which the branch it
/// reviewed is recorded (`{"head": {"branch": "main"}}`).
pub const REVIEW_BRANCH_PATH: [&str; 2] = ["head", "branch"];

/// Which stored review [`RunStore::latest_review`] looks for: one of a repository,
/// whose reviewed head was one of some branch names. The review pipeline writes
/// these into a review run's input ([`REVIEW_REPOSITORY_KEY`],
/// [`REVIEW_BRANCH_PATH`]); stores index them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewOf {
    /// The repository's root, exactly as the run input records it.
    pub repository: String,
    /// The branch names that count; a review of any of them matches.
    pub branches: Vec<String>,
}

/// A finding dismissed for one repository, kept in the run store so that every
/// server and worker sharing it applies it to later reviews of that repository.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StoredDismissal {
    /// The repository's key, as the forge names it (`owner/name` on GitHub, the
    /// project's path or id on GitLab), or as `--repository-key` gives it.
    pub repository: String,
    /// The finding's fingerprint.
    pub fingerprint: String,
    /// Why it does not apply.
    pub reason: String,
    /// Who dismissed it.
    pub author: String,
    /// When it was stored, Unix milliseconds.
    pub created_at_ms: u64,
    /// Where it was made, for people: `github acme/app#7 comment 123`.
    pub source: String,
}

/// A run about to start.
#[derive(Debug, Clone)]
pub struct NewRun {
    /// Run id.
    pub id: String,
    /// The conclave exactly as it will run.
    pub conclave: Conclave,
    /// The run input.
    pub input: Value,
    /// Creation time, Unix milliseconds.
    pub created_ms: u64,
    /// Which process runs it (see [`crate::owner_token`]), so that a later
    /// process can tell a live run from one whose process died.
    pub owner: String,
}

/// Why the store failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database refused or failed.
    #[error("run store error: {0}")]
    Backend(String),
    /// The run does not exist.
    #[error("no run with id `{0}`")]
    UnknownRun(String),
    /// An event arrived out of order.
    #[error("event {seq} for run `{run_id}` is not after the last stored event {last}")]
    OutOfOrder {
        /// The run.
        run_id: String,
        /// The rejected sequence number.
        seq: u64,
        /// The last stored one.
        last: u64,
    },
    /// Stored data could not be read back.
    #[error("stored data for run `{run_id}` is unreadable: {message}")]
    Corrupt {
        /// The run.
        run_id: String,
        /// What failed to parse.
        message: String,
    },
}

/// Durable storage of runs.
#[async_trait]
pub trait RunStore: Send + Sync + fmt::Debug {
    /// Records a new run in status `running`, every node `queued`.
    async fn create_run(&self, run: &NewRun) -> Result<(), StoreError>;

    /// Appends one event and applies it to the run's and nodes' state atomically.
    /// Sequence numbers must increase strictly within a run. Returns only once the
    /// event is durable (committed): the event bus publishes it after this returns.
    async fn append_event(&self, event: &RunEvent) -> Result<(), StoreError>;

    /// Appends events, in order, each as [`RunStore::append_event`] would. Returns
    /// once all of them are committed. On an error, some of them (a prefix) may have
    /// been stored. Stores override it to commit them together.
    async fn append_events(&self, events: &[RunEvent]) -> Result<(), StoreError> {
        for event in events {
            self.append_event(event).await?;
        }
        Ok(())
    }

    /// A run with its nodes, or `None` if unknown.
    async fn get_run(&self, run_id: &str) -> Result<Option<RunRecord>, StoreError>;

    /// The newest runs first.
    async fn list_runs(&self, limit: usize) -> Result<Vec<RunSummary>, StoreError>;

    /// A run's summary (its row, without nodes or events), or `None` if unknown.
    /// Stores override it to read only the row; the default reads the whole run.
    async fn run_summary(&self, run_id: &str) -> Result<Option<RunSummary>, StoreError> {
        Ok(self.get_run(run_id).await?.map(|run| run.summary))
    }

    /// The id of the newest (by creation time, then id, as [`RunStore::list_runs`]
    /// orders) succeeded run whose input records `review.repository` as its
    /// repository and one of `review.branches` as its head's branch; `None` when
    /// there is none. One indexed query, however many runs are stored.
    async fn latest_review(&self, review: &ReviewOf) -> Result<Option<String>, StoreError>;

    /// A run's events with `seq > after_seq`, in order.
    async fn events(&self, run_id: &str, after_seq: u64) -> Result<Vec<RunEvent>, StoreError>;

    /// The first `limit` of a run's events with `seq > after_seq`, in order: fewer
    /// only when the run has no more yet. Reads at most `limit` events (plus the
    /// rest of the last block of events one write stored), so a reader paging
    /// through a long log holds one page at a time.
    async fn events_page(&self, run_id: &str, after_seq: u64, limit: usize) -> Result<Vec<RunEvent>, StoreError>;

    /// Stores (or replaces) a rendered report of a run.
    async fn put_report(&self, run_id: &str, format: &str, content: &str) -> Result<(), StoreError>;

    /// A stored report, or `None`.
    async fn get_report(&self, run_id: &str, format: &str) -> Result<Option<String>, StoreError>;

    /// The structured-output dialect last found to work for `provider` at `endpoint`
    /// (a server's base URL), when a run had to step down to it.
    async fn endpoint_dialect(&self, provider: &str, endpoint: &str) -> Result<Option<OutputDialect>, StoreError>;

    /// Remembers that `provider` at `endpoint` takes `dialect`, for later runs.
    async fn remember_endpoint_dialect(
        &self,
        provider: &str,
        endpoint: &str,
        dialect: OutputDialect,
    ) -> Result<(), StoreError>;

    /// The output cached under `key` (a hash of everything that determined it) that
    /// has not expired at `now_ms`, or `None`.
    async fn cached_output(&self, key: &str, now_ms: u64) -> Result<Option<CachedOutput>, StoreError>;

    /// Keeps `entry` under `key`, replacing what was there.
    async fn cache_output(&self, key: &str, entry: &CachedOutput) -> Result<(), StoreError>;

    /// Keeps an eval (`conclave eval`'s summary with its id, conclave, dataset and
    /// time), replacing one kept under the same id.
    async fn put_eval(&self, eval: &StoredEval) -> Result<(), StoreError>;

    /// The kept evals, newest first (by `created_ms`, then id), of `conclave` only
    /// when one is named; at most `limit` of them.
    async fn list_evals(&self, conclave: Option<&str>, limit: usize) -> Result<Vec<EvalListing>, StoreError>;

    /// A kept eval, whole, or `None` when there is none with this id.
    async fn get_eval(&self, id: &str) -> Result<Option<StoredEval>, StoreError>;

    /// Keeps a dismissal, once per repository and fingerprint: a later one of the
    /// same finding leaves the first as it is. Returns whether it was new.
    async fn put_dismissal(&self, dismissal: &StoredDismissal) -> Result<bool, StoreError>;

    /// The dismissals of `repository` (of every repository when `None`), ordered by
    /// repository, then fingerprint.
    async fn dismissals(&self, repository: Option<&str>) -> Result<Vec<StoredDismissal>, StoreError>;

    /// Keeps a webhook delivery, once per forge and delivery id: a redelivery leaves
    /// the first as it is. Returns whether it was new. Returns once it is committed.
    async fn put_delivery(&self, delivery: &Delivery) -> Result<bool, StoreError>;

    /// The deliveries that ask for something (not ignored) and were not yet marked
    /// dispatched, oldest first (by `received_ms`, then forge and id); at most `limit`.
    async fn pending_deliveries(&self, limit: usize) -> Result<Vec<Delivery>, StoreError>;

    /// Marks a delivery dispatched at `at_ms`, so it is no longer pending. Returns
    /// whether this call marked it (`false`: unknown, ignored, or already marked).
    async fn mark_delivery_dispatched(&self, forge: Forge, id: &str, at_ms: u64) -> Result<bool, StoreError>;

    /// The webhook dispatcher's record of pull (merge) request `number` of
    /// `repository` on `forge`, if it has one.
    async fn pull_request(
        &self,
        forge: Forge,
        repository: &str,
        number: u64,
    ) -> Result<Option<PullRequestReviews>, StoreError>;

    /// Keeps the dispatcher's record of a pull request, replacing the earlier one.
    async fn put_pull_request(&self, reviews: &PullRequestReviews) -> Result<(), StoreError>;

    /// The records with work on them ([`PullRequestReviews::is_busy`]), least
    /// recently changed first; at most `limit`.
    async fn busy_pull_requests(&self, limit: usize) -> Result<Vec<PullRequestReviews>, StoreError>;

    /// Notices, pushed by the database, of runs whose events any process sharing the
    /// store has just committed (a run id per notice), so that a server streams another
    /// process's run without polling: PostgreSQL's LISTEN/NOTIFY. `None` when the store
    /// cannot push them; readers then poll.
    fn commit_notices(&self) -> Option<tokio::sync::broadcast::Receiver<String>> {
        None
    }

    /// Whether [`commit_notices`](RunStore::commit_notices) come for every process's
    /// commits (PostgreSQL's), or only for this process's own (SQLite's, from its one
    /// writer): with only its own, a reader still polls for the others'.
    fn notices_from_every_process(&self) -> bool {
        true
    }

    /// Marks runs still `running` whose owner is not alive as `interrupted`, appending a
    /// final `run_finished` event to each. Returns their ids.
    async fn mark_interrupted(
        &self,
        owner_alive: &(dyn for<'s> Fn(&'s str) -> bool + Sync),
        now_ms: u64,
    ) -> Result<Vec<String>, StoreError>;
}

/// A node's output kept for later runs with the same inputs (a cached node).
#[derive(Debug, Clone, PartialEq)]
pub struct CachedOutput {
    /// The output.
    pub output: NodeOutput,
    /// The run that produced it.
    pub run_id: String,
    /// The node that produced it.
    pub node_id: String,
    /// When it was stored, in Unix milliseconds.
    pub stored_ms: u64,
    /// When it stops being usable; `None` for never.
    pub expires_ms: Option<u64>,
}

impl fmt::Display for NewRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "run {} of {}", self.id, self.conclave.id)
    }
}

/// The event a store appends when it finds a run whose process died.
pub fn interrupted_event(run_id: &str, seq: u64, at_ms: u64) -> RunEvent {
    RunEvent {
        run_id: run_id.to_string(),
        seq,
        at_ms,
        kind: conclave_shared::EventKind::RunFinished {
            status: conclave_shared::RunStatus::Interrupted,
            failed_node: None,
            error: Some("the process running this run stopped before it finished".to_string()),
        },
    }
}

/// The event a store appends when a queued run is cancelled before any worker took it.
pub fn dequeued_event(run_id: &str, seq: u64, at_ms: u64) -> RunEvent {
    RunEvent {
        run_id: run_id.to_string(),
        seq,
        at_ms,
        kind: conclave_shared::EventKind::RunFinished {
            status: conclave_shared::RunStatus::Cancelled,
            failed_node: None,
            error: Some("cancelled by request before it started".to_string()),
        },
    }
}
