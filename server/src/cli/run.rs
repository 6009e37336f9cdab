//! `conclave run CONCLAVE`: runs a conclave with live progress and maps the outcome to
//! an exit code. With `--from NODE --reuse RUN_ID` it runs from a node: only that
//! node and its descendants run, the others keep their outputs from the earlier run,
//! whose input is used again (for a review run, its change, through the review
//! pipeline, so the new run's reports are made as for any review). With `--queue` it
//! only puts the run in the run queue, for a worker.

use clap::Args;
use conclave_catalog::{CheckedConclave, Level, LoadError, load_conclave};
use conclave_core::{RunQueue, RunStore};
use conclave_engine::{Engine, Reuse, RunHandle, RunOptions, RunOutcome, StartError};
use conclave_review::diff::Change;
use conclave_review::pipeline::{self, ReviewError, ReviewRequest};
use conclave_review::{ConclaveChoice, ReviewPolicy};
use conclave_shared::{Conclave, ErrorKind, RunStatus};
use serde_json::Value;
use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;

use super::concurrency::Concurrency;
use super::exit;
use super::progress::Progress;
use super::runs::resolve_id;
use crate::workspace::{Workspace, engine_config_on};

/// Arguments of `conclave run`.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// A conclave file, or the id of one in conclaves/.
    pub conclave: String,
    /// The run input as text.
    #[arg(long, conflicts_with_all = ["input_json", "input_file"])]
    pub input: Option<String>,
    /// The run input as JSON.
    #[arg(long, conflicts_with = "input_file")]
    pub input_json: Option<String>,
    /// Read the run input from a file (`-` for standard input); `.json` files are parsed as JSON.
    #[arg(long)]
    pub input_file: Option<PathBuf>,
    /// How many nodes run at once.
    #[command(flatten)]
    pub concurrency: Concurrency,
    /// Whether commands may run unconfined where the kernel cannot confine them.
    #[command(flatten)]
    pub sandboxing: super::sandbox::Sandboxing,
    /// Run from this node: re-run it and everything downstream of it, reusing the
    /// other nodes' outputs from the run given with --reuse.
    #[arg(long = "from", value_name = "NODE", requires = "reuse")]
    pub from: Option<String>,
    /// With --from: the earlier run of this conclave whose outputs are reused (a
    /// unique prefix of its id is enough). Its input is used again unless one is given.
    #[arg(long, value_name = "RUN_ID", requires = "from")]
    pub reuse: Option<String>,
    /// Put the run in the run queue of the --db database for a `conclave worker` (or
    /// `conclave serve`) to run, print its id and return at once.
    #[arg(long, conflicts_with_all = ["from", "reuse"])]
    pub queue: bool,
    /// Run cached nodes again, and keep nothing they answer: the cache is ignored.
    #[arg(long, conflicts_with = "queue")]
    pub no_cache: bool,
    /// Record provider calls, or replay them.
    #[command(flatten)]
    pub recordings: super::recordings::Recordings,
    /// The run's budget.
    #[command(flatten)]
    pub budget: super::budget::BudgetArgs,
}

/// Runs the conclave (or queues it); returns the exit code.
pub async fn run(args: RunArgs, workspace: Workspace, queue: Arc<dyn RunQueue>) -> u8 {
    let reading = args.clone();
    let given = match super::offload::blocking(move || read_input(&reading)).await {
        Ok(v) => v,
        Err(message) => {
            eprintln!("error: {message}");
            return exit::CONFIG;
        }
    };
    if args.queue && (args.recordings.record.is_some() || args.recordings.replay.is_some()) {
        eprintln!(
            "error: --record and --replay act in this process, and --queue hands the run to a worker; run it here \
             (without --queue) to record or replay it"
        );
        return exit::CONFIG;
    }
    if args.queue {
        return enqueue(&args, &workspace, queue.as_ref(), given.unwrap_or_else(|| Value::String(String::new()))).await;
    }
    let mut config = engine_config_on(args.concurrency.nodes(), &queue).await;
    args.sandboxing.apply(&mut config);
    let store: Arc<dyn RunStore> = queue;
    let reuse = match earlier_run(&args, store.as_ref()).await {
        Ok(reuse) => reuse,
        Err((code, message)) => {
            eprintln!("error: {message}");
            return code;
        }
    };
    let engine = Engine::new(workspace.providers.clone(), store.clone(), config);
    if given.is_none()
        && let Some(reuse) = reuse.clone()
        && let Some(change) = Change::from_run_input(&reuse.earlier.input)
    {
        return rerun_review(&args, &workspace, store.as_ref(), &engine, change, reuse).await;
    }
    let input = given
        .or_else(|| reuse.as_ref().map(|r| r.earlier.input.clone()))
        .unwrap_or_else(|| Value::String(String::new()));
    let checked = match load_or_explain(&args.conclave, &workspace).await {
        Ok(c) => c,
        Err(code) => return code,
    };
    let conclave = checked.conclave().clone();
    // Plain runs compare findings-shaped siblings and check counts too; only reviews
    // narrow findings to a change.
    let options = RunOptions {
        policy: Some(Arc::new(ReviewPolicy::default())),
        reuse,
        commands: Some(workspace.commands()),
        no_cache: args.no_cache,
        budget: args.budget.budget(),
        ..RunOptions::default()
    };
    match follow(&conclave, engine.start(checked, input, options).await).await {
        Ok(outcome) => {
            super::budget::print_spending(store.as_ref(), &outcome.run_id).await;
            conclude(&outcome)
        }
        Err(code) => code,
    }
}

/// Checks the conclave and puts the run in the queue; prints its id.
async fn enqueue(args: &RunArgs, workspace: &Workspace, queue: &dyn RunQueue, input: Value) -> u8 {
    let checked = match load_or_explain(&args.conclave, workspace).await {
        Ok(c) => c,
        Err(code) => return code,
    };
    let (spec, budget) = (crate::worker::JobSpec::Run, args.budget.budget());
    match crate::worker::enqueue(queue, checked.conclave(), input, &spec, budget).await {
        Ok(id) => {
            eprintln!("queued run {id}: a `conclave worker` on this database runs it (`conclave runs show {id}`)");
            println!("{id}");
            exit::OK
        }
        Err(e) => {
            eprintln!("error: cannot queue the run: {e}");
            exit::OTHER
        }
    }
}

/// The earlier run `--reuse` names, with the node `--from` names; `None` without them.
async fn earlier_run(args: &RunArgs, store: &dyn RunStore) -> Result<Option<Reuse>, (u8, String)> {
    let (Some(from_node), Some(run)) = (&args.from, &args.reuse) else { return Ok(None) };
    let id = resolve_id(store, run).await?;
    let earlier = store
        .get_run(&id)
        .await
        .map_err(|e| (exit::OTHER, e.to_string()))?
        .ok_or_else(|| (exit::CONFIG, format!("no run `{run}`; `conclave runs list` shows the recent ones")))?;
    Ok(Some(Reuse { from_node: from_node.clone(), earlier: Arc::new(earlier) }))
}

/// Runs from a node of an earlier review run: its change again, through the review
/// pipeline (the same provider fallback, tools and narrowing), then its reports.
async fn rerun_review(
    args: &RunArgs,
    workspace: &Workspace,
    store: &dyn RunStore,
    engine: &Engine,
    change: Change,
    reuse: Reuse,
) -> u8 {
    let request = ReviewRequest {
        repository: change.root.clone(),
        base: change.base.clone(),
        conclave: ConclaveChoice::PathOrId(args.conclave.clone()),
        provider: None,
        model: None,
        fallback: true,
        allow_paths: workspace.allow_paths.clone(),
        max_diff_bytes: workspace.max_diff_bytes,
        max_parts: conclave_review::diff::DEFAULT_MAX_PARTS,
        samples: 1,
        no_cache: args.no_cache,
        budget: args.budget.budget(),
        analyzers: Default::default(),
        scope: None,
        rules: Vec::new(),
        // The earlier review read its configuration from the base of its change; so
        // does the run from its node.
        trust: Default::default(),
        allow_unsandboxed: engine.allows_unsandboxed(),
    };
    let (dir, context, providers) =
        (workspace.catalog_dir.clone(), workspace.catalog_context().clone(), workspace.providers.clone());
    let review = match super::offload::blocking(move || {
        let catalog = conclave_review::Catalog { dir: &dir, context: &context };
        pipeline::prepare_change(change, &request, catalog, &providers)
    })
    .await
    {
        Ok(review) => review,
        Err(ReviewError::Conclave(e)) => return explain_load_error(e),
        Err(e) => {
            eprintln!("error: {e}");
            return if matches!(e, ReviewError::Store(_)) { exit::OTHER } else { exit::CONFIG };
        }
    };
    warn(&review.conclave);
    for notice in &review.notices {
        eprintln!("{notice}");
    }
    let started = pipeline::start_with(engine, &review, Some(reuse)).await;
    let outcome = match follow(review.conclave.conclave(), started).await {
        Ok(outcome) => outcome,
        Err(code) => return code,
    };
    if let Err(e) = pipeline::finish(store, &outcome.run_id).await {
        eprintln!("error: the review's reports could not be stored: {e}");
        return exit::OTHER;
    }
    conclude(&outcome)
}

/// Prints a finished run's result (when it succeeded) and how it ended; the exit code.
pub(super) fn conclude(outcome: &RunOutcome) -> u8 {
    if outcome.status == RunStatus::Succeeded {
        println!("{}", serde_json::to_string_pretty(&outcome.result).unwrap_or_default());
    }
    announce(outcome);
    exit_code(outcome)
}

/// Loads a conclave by path or id (on a blocking thread: it reads files), printing
/// its errors and warnings; the exit code on failure.
pub async fn load_or_explain(given: &str, workspace: &Workspace) -> Result<CheckedConclave, u8> {
    let (given, dir, context) = (given.to_string(), workspace.catalog_dir.clone(), workspace.catalog_context().clone());
    super::offload::blocking(move || load_conclave(&given, &dir, &context).map_err(explain_load_error).inspect(warn))
        .await
}

/// Prints a checked conclave's warnings.
pub fn warn(conclave: &CheckedConclave) {
    for d in conclave.diagnostics().iter().filter(|d| d.severity != Level::Note) {
        eprintln!("{d}\n");
    }
}

/// Prints why a conclave could not be loaded; the exit code.
pub fn explain_load_error(error: LoadError) -> u8 {
    match error {
        LoadError::Invalid { file, diagnostics } => {
            for d in &diagnostics {
                eprintln!("{d}\n");
            }
            eprintln!("error: {file} is not valid; fix the errors above (`conclave validate {file}` lists them)");
            exit::CONFIG
        }
        e @ LoadError::NotFound { .. } => {
            eprintln!("error: {e}");
            exit::CONFIG
        }
    }
}

/// Shows a started run's progress and waits for it; Ctrl-C cancels it. The exit code
/// when it could not start.
pub async fn follow(conclave: &Conclave, started: Result<RunHandle, StartError>) -> Result<RunOutcome, u8> {
    let mut handle = started.map_err(|e| {
        eprintln!("error: {e}");
        start_error_code(&e)
    })?;
    let events = handle.take_events();
    let cancel = handle.cancel_token();
    let progress = tokio::spawn(Progress::new(conclave, handle.run_id()).follow(events));
    let ctrl_c = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            cancel.cancel();
        }
    });
    let outcome = handle.wait().await;
    ctrl_c.abort();
    let _ = progress.await;
    Ok(outcome)
}

/// The exit code of a run that could not start: a store failure or a fault of
/// Conclave's own (a panicking policy or planning thread) is 1, anything else is a
/// configuration error found before any provider call.
pub fn start_error_code(error: &StartError) -> u8 {
    match error {
        StartError::Store(_) | StartError::Policy(_) | StartError::Internal(_) => exit::OTHER,
        _ => exit::CONFIG,
    }
}

/// One line on standard error saying how the run ended.
pub fn announce(outcome: &RunOutcome) {
    match outcome.status {
        RunStatus::Succeeded => eprintln!("run {} succeeded", outcome.run_id),
        RunStatus::Failed => {
            eprintln!("run {} failed: {}", outcome.run_id, outcome.error.as_deref().unwrap_or("unknown error"));
            eprintln!("  help: `conclave runs show {}` lists every node and event", outcome.run_id);
        }
        RunStatus::Waiting => {
            let waiting = outcome.error.as_deref().unwrap_or("waiting for a decision");
            eprintln!("run {} is {waiting}", outcome.run_id);
            eprintln!(
                "  help: `conclave approve {} NODE [--reject] [--comment TEXT]` decides and goes on",
                outcome.run_id
            );
        }
        RunStatus::Rejected => {
            eprintln!("run {} stopped: {}", outcome.run_id, outcome.error.as_deref().unwrap_or("rejected"))
        }
        other => eprintln!("run {} {}", outcome.run_id, other.as_str()),
    }
}

/// The exit code of a finished run.
pub fn exit_code(outcome: &RunOutcome) -> u8 {
    match (outcome.status, outcome.error_kind) {
        (RunStatus::Succeeded, _) => exit::OK,
        (RunStatus::Failed, Some(ErrorKind::Config)) => exit::CONFIG,
        (RunStatus::Failed, Some(ErrorKind::Provider | ErrorKind::Timeout | ErrorKind::Budget)) => exit::PROVIDER,
        (RunStatus::Failed, Some(ErrorKind::InvalidOutput)) => exit::CONTRACT,
        (RunStatus::Waiting, _) => exit::WAITING,
        (RunStatus::Rejected, _) => exit::REJECTED,
        _ => exit::OTHER,
    }
}

/// The input given on the command line, if any.
fn read_input(args: &RunArgs) -> Result<Option<Value>, String> {
    if let Some(text) = &args.input {
        return Ok(Some(Value::String(text.clone())));
    }
    if let Some(json) = &args.input_json {
        return serde_json::from_str(json).map(Some).map_err(|e| format!("--input-json is not valid JSON: {e}"));
    }
    let Some(path) = &args.input_file else { return Ok(None) };
    let text = if path.as_os_str() == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| format!("cannot read the input from standard input: {e}"))?;
        s
    } else {
        std::fs::read_to_string(path).map_err(|e| format!("cannot read the input file {}: {e}", path.display()))?
    };
    if path.extension().is_some_and(|e| e == "json") {
        serde_json::from_str(&text).map(Some).map_err(|e| format!("{} is not valid JSON: {e}", path.display()))
    } else {
        Ok(Some(Value::String(text)))
    }
}
