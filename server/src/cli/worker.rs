//! `conclave worker`: claims runs from the run queue in the `--db` database and runs
//! them, any number of processes on any machine sharing it. The first Ctrl-C (or
//! SIGTERM) stops claiming and lets the runs it has finish; a second abandons them
//! to the other workers, which resume them once their lease runs out.

use clap::Args;
use conclave_core::RunQueue;
use conclave_engine::Engine;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

use super::concurrency::Concurrency;
use super::exit;
use crate::worker::{Worker, WorkerConfig};
use crate::workspace::{Workspace, engine_config_on};

/// Arguments of `conclave worker`.
#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// Runs this worker runs at once.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub runs: u16,
    /// Seconds a claim holds without renewal; the worker renews it every third of
    /// that, and another worker resumes the run when it lapses.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u16).range(1..=3600))]
    pub lease_secs: u16,
    /// How many nodes run at once.
    #[command(flatten)]
    pub concurrency: Concurrency,
    /// Whether commands may run unconfined where the kernel cannot confine them.
    #[command(flatten)]
    pub sandboxing: super::sandbox::Sandboxing,
    /// Where the bare mirrors of repositories reviewed for webhooks are kept.
    #[command(flatten)]
    pub forges: super::forges::ForgeArgs,
}

/// Runs the worker until it is stopped; returns the exit code.
pub async fn run(args: WorkerArgs, workspace: Workspace, queue: Arc<dyn RunQueue>) -> u8 {
    let forges = match super::forges::service(&args.forges, &workspace).await {
        Ok(forges) => forges,
        Err(message) => {
            eprintln!("error: {message}");
            return exit::CONFIG;
        }
    };
    let mut config = engine_config_on(args.concurrency.nodes(), &queue).await;
    args.sandboxing.apply(&mut config);
    let engine = Engine::new(workspace.providers.clone(), queue.clone(), config);
    let id = format!("{}-{}", conclave_core::owner_token(), uuid::Uuid::now_v7().simple());
    let config = WorkerConfig {
        id: id.clone(),
        lease: Duration::from_secs(u64::from(args.lease_secs)),
        idle: Duration::from_millis(250),
        max_runs: usize::from(args.runs),
    };
    let (stop, abort) = (CancellationToken::new(), CancellationToken::new());
    tokio::spawn(signals(stop.clone(), abort.clone()));
    eprintln!("worker {id} claiming runs (up to {} at once); Ctrl-C stops it", args.runs);
    let worker = Worker::new(queue, engine, workspace.catalog_context().clone(), config);
    let worker = match forges {
        Some(service) => worker.serving_forges(service),
        None => worker,
    };
    worker.work_until(stop, abort).await;
    eprintln!("worker {id} stopped");
    exit::OK
}

/// The first Ctrl-C or SIGTERM cancels `stop`, the second `abort`.
async fn signals(stop: CancellationToken, abort: CancellationToken) {
    for (token, message) in [
        (stop, "stopping: no new runs; the runs in progress finish (again to leave them to other workers)"),
        (abort, "leaving the runs in progress to other workers"),
    ] {
        wait_for_signal().await;
        eprintln!("{message}");
        token.cancel();
    }
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(term) => term,
            Err(_) => return std::future::pending().await,
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
