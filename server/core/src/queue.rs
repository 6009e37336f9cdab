//! The durable run queue: starting a run enqueues it in the run store's database,
//! and workers (in `conclave serve`, or `conclave worker` processes on any machine
//! sharing the database) claim runs under a lease they renew while they run them.
//!
//! - A run is enqueued with a *spec*: what a worker needs besides the stored
//!   conclave and input to start it (which kind of run, its options). The queue
//!   stores the spec and never reads it.
//! - [`RunQueue::claim`] hands the oldest queued run to exactly one worker, or a run
//!   whose worker stopped renewing its lease (it died): that run is handed out again
//!   with a higher `attempt`, and the worker resumes it (the engine keeps what had
//!   succeeded and runs the rest).
//! - [`RunQueue::renew`] extends a lease and tells the worker whether a cancel was
//!   asked for, from any process; a worker whose lease was taken over stops.
//! - Runs created without the queue ([`RunStore::create_run`]: a `conclave review`
//!   running in its own process) are never claimed, and queued runs are never marked
//!   interrupted by [`RunStore::mark_interrupted`]: their lease says whether they live.
//!
//! - Slots ([`RunQueue::take_slot`]) are leased counters shared by every process on
//!   the database: the engine takes one per provider call, so a provider's limit
//!   holds across the fleet, and a dead process's slots free themselves.
//!
//! Every store implements the same queue (memory for tests, SQLite for one machine,
//! PostgreSQL for a fleet), checked by the queue suite of `conclave-doubles`.

use async_trait::async_trait;
use serde_json::Value;

use conclave_shared::Conclave;

use crate::store::{NewRun, RunStore, StoreError};

/// A run handed to a worker.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// The run; its conclave and input are in the store.
    pub run_id: String,
    /// What the run was enqueued with.
    pub spec: Value,
    /// How many times it has been claimed, this time included: above 1, an earlier
    /// worker's lease expired and this worker resumes the run.
    pub attempt: u32,
}

impl Job {
    /// Whether an earlier worker had the run: it is to be resumed, not started.
    pub fn is_resumed(&self) -> bool {
        self.attempt > 1
    }
}

/// Where a lease stands after a renewal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lease {
    /// The worker still holds it; `cancel_requested` when someone asked to cancel.
    Held {
        /// A cancel was asked for.
        cancel_requested: bool,
    },
    /// The run ended, or another worker took it over: stop working on it.
    Lost,
}

/// What asking to cancel a run did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cancel {
    /// It was still queued: it ended cancelled at once and will never run.
    Dequeued,
    /// It is running: its worker will stop it at its next renewal.
    Requested,
    /// It had already ended.
    AlreadyEnded,
}

/// How the queue stands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// Runs waiting for a worker.
    pub queued: u64,
    /// Runs a worker holds.
    pub running: u64,
    /// How long the oldest queued run has waited, in milliseconds.
    pub oldest_queued_ms: Option<u64>,
}

/// The run queue, in the same database as the runs.
#[async_trait]
pub trait RunQueue: RunStore {
    /// Records a new run, status `queued`, with the spec a worker starts it from.
    async fn enqueue(&self, run: &NewRun, spec: &Value) -> Result<(), StoreError>;

    /// Hands `worker` the oldest queued run, or a running one whose lease expired
    /// before `now_ms`, leased until `now_ms + lease_ms`; `None` when there is none.
    /// Two workers never get the same claim.
    async fn claim(&self, worker: &str, now_ms: u64, lease_ms: u64) -> Result<Option<Job>, StoreError>;

    /// Replaces the conclave and the input of `run_id`, which `worker` holds and which
    /// has no event yet: a run enqueued before what it runs could be known (a review
    /// of a pull request, whose conclave the base's configuration chooses once the
    /// worker has fetched it). `false` when the worker does not hold it or it has
    /// events (it is then resumed with what it has).
    async fn prepare_claimed(
        &self,
        run_id: &str,
        worker: &str,
        conclave: &Conclave,
        input: &Value,
    ) -> Result<bool, StoreError>;

    /// Extends `worker`'s lease on `run_id` to `now_ms + lease_ms`.
    async fn renew(&self, run_id: &str, worker: &str, now_ms: u64, lease_ms: u64) -> Result<Lease, StoreError>;

    /// Asks for `run_id` to be cancelled, whichever process runs it.
    async fn request_cancel(&self, run_id: &str, now_ms: u64) -> Result<Cancel, StoreError>;

    /// How many runs wait and run, and the oldest wait.
    async fn queue_stats(&self, now_ms: u64) -> Result<QueueStats, StoreError>;

    /// Takes one of the `limit` slots of `scope` (such as one provider's calls, across
    /// every process on the database) for `holder` until `now_ms + lease_ms`; `None`
    /// when every slot is held by a lease that has not expired.
    async fn take_slot(
        &self,
        scope: &str,
        limit: u32,
        holder: &str,
        now_ms: u64,
        lease_ms: u64,
    ) -> Result<Option<u32>, StoreError>;

    /// Extends `holder`'s lease on a slot; `false` when it lost the slot.
    async fn renew_slot(
        &self,
        scope: &str,
        slot: u32,
        holder: &str,
        now_ms: u64,
        lease_ms: u64,
    ) -> Result<bool, StoreError>;

    /// Gives a slot back (nothing happens when `holder` no longer holds it).
    async fn release_slot(&self, scope: &str, slot: u32, holder: &str) -> Result<(), StoreError>;

    /// Pauses `scope` (such as one provider's calls, after it answered "retry after")
    /// until `until_ms` for every process on the database; a later pause extends it,
    /// an earlier one changes nothing.
    async fn pause(&self, scope: &str, until_ms: u64) -> Result<(), StoreError>;

    /// When `scope`'s pause ends, if it is paused at `now_ms`.
    async fn paused_until(&self, scope: &str, now_ms: u64) -> Result<Option<u64>, StoreError>;
}
