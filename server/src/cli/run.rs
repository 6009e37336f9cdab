//! `conclave run CONCLAVE`: runs a conclave with live progress and maps the outcome to
//! an exit code.

use clap::Args;
use conclave_shared::RunStatus;
use serde_json::Value;
use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;

use super::progress::Progress;
use super::{Workspace, exit};
use crate::catalog::{LoadError, load_conclave};
use crate::engine::{Engine, EngineConfig, EngineError, RunOutcome};
use crate::providers::pricing::PriceTable;
use crate::store::RunStore;
use conclave_shared::Conclave;

/// Arguments of `conclave run`.
#[derive(Debug, Args)]
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
    /// Most nodes running at once.
    #[arg(long, default_value_t = 16)]
    pub max_concurrency: usize,
}

/// Runs the conclave; returns the exit code.
pub async fn run(args: RunArgs, workspace: &Workspace, store: Arc<dyn RunStore>) -> u8 {
    let input = match read_input(&args) {
        Ok(v) => v,
        Err(message) => {
            eprintln!("error: {message}");
            return exit::CONFIG;
        }
    };
    let conclave = match load_or_explain(&args.conclave, workspace) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let engine =
        Engine::new(workspace.providers.clone(), store, workspace.schemas.clone(), engine_config(args.max_concurrency));
    match run_with_progress(&engine, &conclave, input).await {
        Ok(outcome) => {
            if outcome.status == RunStatus::Succeeded {
                println!("{}", serde_json::to_string_pretty(&outcome.result).unwrap_or_default());
            }
            announce(&outcome);
            exit_code(&outcome)
        }
        Err(code) => code,
    }
}

/// Loads a conclave by path or id, printing its errors and warnings; the exit code on
/// failure.
pub fn load_or_explain(given: &str, workspace: &Workspace) -> Result<Conclave, u8> {
    match load_conclave(given, &workspace.catalog_dir, &workspace.catalog_context()) {
        Ok((conclave, diagnostics)) => {
            for d in diagnostics.iter().filter(|d| d.severity != crate::catalog::Severity::Note) {
                eprintln!("{d}\n");
            }
            Ok(conclave)
        }
        Err(LoadError::Invalid { file, diagnostics }) => {
            for d in &diagnostics {
                eprintln!("{d}\n");
            }
            eprintln!("error: {file} is not valid; fix the errors above (`conclave validate {file}` lists them)");
            Err(exit::CONFIG)
        }
        Err(e) => {
            eprintln!("error: {e}");
            Err(exit::CONFIG)
        }
    }
}

/// Starts a run, shows its progress, and waits for it; Ctrl-C cancels it. The exit
/// code when it could not start.
pub async fn run_with_progress(engine: &Engine, conclave: &Conclave, input: Value) -> Result<RunOutcome, u8> {
    let mut handle = match engine.start(conclave.clone(), input).await {
        Ok(h) => h,
        Err(e @ EngineError::Store(_)) => {
            eprintln!("error: {e}");
            return Err(exit::OTHER);
        }
        Err(e) => {
            eprintln!("error: {e}");
            return Err(exit::CONFIG);
        }
    };
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

/// Engine settings from the environment, with this concurrency.
pub fn engine_config(max_concurrency: usize) -> EngineConfig {
    let mut config = EngineConfig { max_concurrency: max_concurrency.max(1), ..EngineConfig::default() };
    // One local generation at a time: they share the CPU, and parallel ones only thrash.
    config.provider_limits.insert("local".into(), 1);
    if let Some(retries) = std::env::var("CONCLAVE_PROVIDER_RETRIES").ok().and_then(|v| v.trim().parse().ok()) {
        config.retry.max_retries = retries;
    }
    config.prices = Arc::new(PriceTable::load(crate::schema::refs::user_config_dir().as_deref()));
    config
}

/// One line on standard error saying how the run ended.
pub fn announce(outcome: &RunOutcome) {
    match outcome.status {
        RunStatus::Succeeded => eprintln!("run {} succeeded", outcome.run_id),
        RunStatus::Failed => {
            eprintln!("run {} failed: {}", outcome.run_id, outcome.error.as_deref().unwrap_or("unknown error"));
            eprintln!("  help: `conclave runs show {}` lists every node and event", outcome.run_id);
        }
        other => eprintln!("run {} {}", outcome.run_id, other.as_str()),
    }
}

/// The exit code of a finished run.
pub fn exit_code(outcome: &RunOutcome) -> u8 {
    match (outcome.status, outcome.error_kind.as_deref()) {
        (RunStatus::Succeeded, _) => exit::OK,
        (RunStatus::Failed, Some("provider" | "timeout")) => exit::PROVIDER,
        (RunStatus::Failed, Some("invalid_output")) => exit::CONTRACT,
        _ => exit::OTHER,
    }
}

fn read_input(args: &RunArgs) -> Result<Value, String> {
    if let Some(text) = &args.input {
        return Ok(Value::String(text.clone()));
    }
    if let Some(json) = &args.input_json {
        return serde_json::from_str(json).map_err(|e| format!("--input-json is not valid JSON: {e}"));
    }
    let Some(path) = &args.input_file else { return Ok(Value::String(String::new())) };
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
        serde_json::from_str(&text).map_err(|e| format!("{} is not valid JSON: {e}", path.display()))
    } else {
        Ok(Value::String(text))
    }
}
