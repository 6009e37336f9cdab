//! The writer thread: the one connection that writes, and group commit.
//!
//! Async callers send a job over a channel and await a oneshot reply, so no write
//! blocks the async runtime. The thread takes every job queued while its previous
//! commit ran and applies them, in the order they were sent, in ONE immediate
//! transaction, each job in a savepoint of its own: a job that fails (an event out
//! of order, an unknown run) is rolled back alone and its batch-mates still commit.
//! Replies go out only after the commit, so a job's success means it is durable.

use conclave_core::StoreError;
use rusqlite::{Connection, DropBehavior, TransactionBehavior};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::{mpsc, oneshot};

/// Jobs that may wait for the writer before senders wait to queue more.
const QUEUE: usize = 4096;

/// The most jobs in one transaction, which bounds how long a batch holds the file's
/// write lock and how long its first job waits for the commit.
const MAX_BATCH: usize = 1024;

/// The sending side of the writer thread; dropping it lets the thread finish the
/// jobs already queued and stop.
#[derive(Debug)]
pub(super) struct Writer {
    jobs: mpsc::Sender<Box<dyn Job>>,
    commits: Arc<AtomicU64>,
}

impl Writer {
    /// Starts the thread that owns `conn`.
    pub(super) fn start(conn: Connection) -> Result<Writer, StoreError> {
        let (jobs, queue) = mpsc::channel(QUEUE);
        let commits = Arc::new(AtomicU64::new(0));
        let counter = Arc::clone(&commits);
        std::thread::Builder::new()
            .name("conclave-sqlite-writer".into())
            .spawn(move || run(conn, queue, &counter))
            .map_err(|e| StoreError::Backend(format!("cannot start the run store's writer thread: {e}")))?;
        Ok(Writer { jobs, commits })
    }

    /// Applies `work` on the writer thread and returns its result once the
    /// transaction holding it has committed.
    pub(super) async fn submit<T, F>(&self, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let job = Box::new(Pending { work: Some(work), outcome: None, reply });
        self.jobs.send(job).await.map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }

    /// How many transactions the thread has committed.
    pub(super) fn commits(&self) -> u64 {
        self.commits.load(Ordering::Acquire)
    }
}

fn stopped() -> StoreError {
    StoreError::Backend("the run store's writer thread stopped".into())
}

/// One queued write, its outcome kept until the batch's commit decides its reply.
trait Job: Send + std::fmt::Debug {
    /// Applies the write; whether it succeeded (and its savepoint is to be kept).
    fn apply(&mut self, conn: &Connection) -> bool;
    /// Records that the write could not be attempted.
    fn refuse(&mut self, error: StoreError);
    /// Replies to the caller: its own outcome when the batch committed (or when the
    /// write failed on its own), else why the batch did not commit.
    fn reply(self: Box<Self>, batch: Result<(), &str>);
}

struct Pending<T, F> {
    work: Option<F>,
    outcome: Option<Result<T, StoreError>>,
    reply: oneshot::Sender<Result<T, StoreError>>,
}

impl<T, F> std::fmt::Debug for Pending<T, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending").field("applied", &self.outcome.is_some()).finish_non_exhaustive()
    }
}

impl<T, F> Job for Pending<T, F>
where
    T: Send,
    F: FnOnce(&Connection) -> Result<T, StoreError> + Send,
{
    fn apply(&mut self, conn: &Connection) -> bool {
        let outcome = match self.work.take() {
            Some(work) => work(conn),
            None => Err(StoreError::Backend("a run store write was applied twice".into())),
        };
        let kept = outcome.is_ok();
        self.outcome = Some(outcome);
        kept
    }

    fn refuse(&mut self, error: StoreError) {
        self.work = None;
        self.outcome = Some(Err(error));
    }

    fn reply(self: Box<Self>, batch: Result<(), &str>) {
        let outcome = match (self.outcome, batch) {
            (Some(Err(own)), _) => Err(own),
            (Some(Ok(value)), Ok(())) => Ok(value),
            (_, Err(message)) => Err(StoreError::Backend(message.to_string())),
            (None, Ok(())) => Err(StoreError::Backend("a run store write was never applied".into())),
        };
        // The caller may have stopped waiting; the write stands either way.
        let _ = self.reply.send(outcome);
    }
}

/// The thread's loop: batch whatever is queued, apply, commit, reply.
fn run(mut conn: Connection, mut queue: mpsc::Receiver<Box<dyn Job>>, commits: &AtomicU64) {
    let mut batch = Vec::new();
    while let Some(first) = queue.blocking_recv() {
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        let committed = apply_batch(&mut conn, &mut batch);
        if committed.is_ok() {
            commits.fetch_add(1, Ordering::AcqRel);
        }
        for job in batch.drain(..) {
            job.reply(committed.as_ref().map(|_| ()).map_err(String::as_str));
        }
    }
}

/// Applies `batch` in order in one immediate transaction, each job in its own
/// savepoint, and commits. An error here is the batch's: nothing of it was committed.
fn apply_batch(conn: &mut Connection, batch: &mut [Box<dyn Job>]) -> Result<(), String> {
    // Immediate: take the file's write lock at once, waiting (busy timeout) for another
    // process that holds it, instead of failing on the first write after a read.
    let mut tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(|e| e.to_string())?;
    for job in batch.iter_mut() {
        let mut savepoint = match tx.savepoint() {
            Ok(savepoint) => savepoint,
            Err(e) => {
                job.refuse(StoreError::Backend(e.to_string()));
                continue;
            }
        };
        let ended = if job.apply(&savepoint) {
            savepoint.commit()
        } else {
            // Roll back to the savepoint, then release it: the job leaves no trace.
            savepoint.set_drop_behavior(DropBehavior::Rollback);
            savepoint.finish()
        };
        // A savepoint that cannot be released or rolled back leaves the transaction in
        // an unknown state (SQLite may have rolled all of it back): give up the batch.
        ended.map_err(|e| e.to_string())?;
    }
    tx.commit().map_err(|e| e.to_string())
}
