//! The batcher: one worker thread per loaded model takes the jobs that provider calls
//! submit. Batched (the default), jobs that arrive together or while others run
//! decode as sequences of one shared context (`shared_context.rs`); with
//! `CONCLAVE_LOCAL_BATCH=off` they run one at a time, each in a context of its own,
//! as before batching.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use super::generate::{LoadedModel, RunSettings, generate};
use super::job::{Counters, Job};
use super::sequence::Prepared;
use super::shared_context::SharedContext;
use conclave_core::ProviderError;

/// After a first job reaches an idle worker, how long it waits for siblings (agents
/// started together reach it milliseconds apart): a quiet gap this long ends the wait.
const GATHER_GAP: Duration = Duration::from_millis(40);
/// The longest the wait for siblings lasts in all.
const GATHER_MAX: Duration = Duration::from_millis(250);

/// The handle of one model's worker thread; dropping it ends the thread once its
/// jobs are done.
#[derive(Debug)]
pub struct Batcher {
    jobs: Sender<Job>,
}

impl Batcher {
    /// Starts the worker thread for `loaded`. `batched` false runs jobs one at a time.
    pub fn start(
        loaded: Arc<LoadedModel>,
        settings: RunSettings,
        batched: bool,
        counters: Arc<Counters>,
    ) -> Result<Batcher, ProviderError> {
        let (jobs, inbox) = mpsc::channel();
        std::thread::Builder::new()
            .name("conclave-local".into())
            .spawn(move || {
                if batched {
                    run_batched(&loaded, settings, &counters, inbox)
                } else {
                    run_alone(&loaded, settings, &counters, inbox)
                }
            })
            .map_err(|e| ProviderError::Malformed(format!("cannot start the local model's thread: {e}")))?;
        Ok(Batcher { jobs })
    }

    /// Hands `job` to the worker.
    pub fn submit(&self, job: Job) -> Result<(), ProviderError> {
        self.jobs
            .send(job)
            .map_err(|_| ProviderError::Malformed("the local model's thread has stopped; run the review again".into()))
    }
}

/// One job at a time, each in a context of its own.
fn run_alone(loaded: &LoadedModel, settings: RunSettings, counters: &Counters, inbox: Receiver<Job>) {
    for job in inbox {
        if job.is_cancelled() {
            continue;
        }
        let result = generate(
            loaded,
            settings,
            &job.messages,
            job.schema.as_ref(),
            job.max_tokens,
            &job.cancelled,
            &mut |piece| job.send(piece),
        );
        if let Ok(generation) = &result {
            let prompt = generation.timings.prompt_tokens;
            counters.record(prompt, prompt, 0);
        }
        job.finish(result);
    }
}

/// Jobs as sequences of one shared context: waiting jobs join at each step when
/// their cells fit.
fn run_batched(loaded: &LoadedModel, settings: RunSettings, counters: &Counters, inbox: Receiver<Job>) {
    let mut shared = SharedContext::new(loaded, settings, counters);
    let mut waiting: VecDeque<Prepared> = VecDeque::new();
    let mut open = true;
    loop {
        if shared.is_idle() && waiting.is_empty() {
            if !open {
                return;
            }
            let Ok(first) = inbox.recv() else { return };
            prepare(loaded, settings, first, &mut waiting);
            open = gather(loaded, settings, &inbox, &mut waiting);
        }
        loop {
            match inbox.try_recv() {
                Ok(job) => prepare(loaded, settings, job, &mut waiting),
                Err(mpsc::TryRecvError::Empty) => break,
                Err(mpsc::TryRecvError::Disconnected) => {
                    open = false;
                    break;
                }
            }
        }
        shared.admit(&mut waiting);
        shared.step();
    }
}

/// Waits briefly for jobs submitted together with the first; false once no more can come.
fn gather(
    loaded: &LoadedModel,
    settings: RunSettings,
    inbox: &Receiver<Job>,
    waiting: &mut VecDeque<Prepared>,
) -> bool {
    let deadline = Instant::now() + GATHER_MAX;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return true;
        }
        match inbox.recv_timeout(GATHER_GAP.min(left)) {
            Ok(job) => prepare(loaded, settings, job, waiting),
            Err(RecvTimeoutError::Timeout) => return true,
            Err(RecvTimeoutError::Disconnected) => return false,
        }
    }
}

/// Tokenizes and compiles `job` into the waiting line (or it ends with its error).
fn prepare(loaded: &LoadedModel, settings: RunSettings, job: Job, waiting: &mut VecDeque<Prepared>) {
    waiting.extend(Prepared::new(loaded, settings, job));
}
