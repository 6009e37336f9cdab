//! `conclave eval DATASET --conclave ID`: reviews each labelled change of a dataset
//! with a conclave and scores its findings against the golden issues; `conclave eval
//! compare A.json B.json`: the differences between two evals, with paired-bootstrap
//! intervals.

use clap::{Args, Subcommand, ValueEnum};
use conclave_core::{RunQueue, RunStore};
use conclave_engine::Engine;
use conclave_review::ConclaveChoice;
use conclave_review::eval::summary::{Comparison, EvalSummary};
use conclave_review::eval::{self, EvalContext, EvalError, EvalRequest, compare, html, markdown};
use conclave_review::pipeline::AnalyzerSelection;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use super::concurrency::Concurrency;
use super::exit;
use super::recordings::Recordings;
use crate::workspace::{Workspace, engine_config_on};

/// Arguments of `conclave eval`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct EvalArgs {
    /// Compare two evals instead.
    #[command(subcommand)]
    pub command: Option<EvalCommand>,
    /// The dataset: a directory with cases.jsonl (see docs/eval.md).
    #[arg(required = true)]
    pub dataset: Option<PathBuf>,
    /// The conclave file or id that reviews each case (default: light-code-review).
    #[arg(long)]
    pub conclave: Option<String>,
    /// Run every agent on this provider.
    #[arg(long)]
    pub provider: Option<String>,
    /// With --provider: the model for every agent.
    #[arg(long, requires = "provider")]
    pub model: Option<String>,
    /// Run each reviewer K times and merge their findings (as `conclave review --samples`).
    #[arg(long, value_name = "K", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=16))]
    pub samples: u32,
    /// Count only result findings that at least N reviewers raised (0: every finding).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub min_support: u32,
    /// Most lines between a finding and the golden issue it matches.
    #[arg(long, value_name = "LINES", default_value_t = 3)]
    pub window: u64,
    /// A conclave that judges whether a finding and an issue are the same (its agent
    /// answers `{"same": true|false}`), instead of the wording rule.
    #[arg(long, value_name = "CONCLAVE")]
    pub judge: Option<String>,
    /// The summary's format.
    #[arg(long, value_enum, default_value = "markdown")]
    pub format: EvalFormat,
    /// Write the summary here instead of standard output.
    #[arg(long)]
    pub output_file: Option<PathBuf>,
    /// Cases reviewed at once.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub jobs: u16,
    /// Most bytes of diff sent to the agents.
    #[arg(long, value_name = "BYTES")]
    pub max_diff_bytes: Option<usize>,
    /// Run cached nodes again, and keep nothing they answer.
    #[arg(long)]
    pub no_cache: bool,
    /// The analyzer lanes to run on each case, by name (comma-separated), or `none`
    /// (the default: what is installed differs between machines, and an eval and
    /// its recordings must give the same figures everywhere).
    #[arg(long, value_name = "NAME,...|none")]
    pub analyzers: Option<String>,
    /// How many nodes run at once.
    #[command(flatten)]
    pub concurrency: Concurrency,
    /// Whether commands may run unconfined where the kernel cannot confine them.
    #[command(flatten)]
    pub sandboxing: super::sandbox::Sandboxing,
    /// Record provider calls, or replay them.
    #[command(flatten)]
    pub recordings: Recordings,
}

/// `conclave eval compare`.
#[derive(Debug, Subcommand)]
pub enum EvalCommand {
    /// Print the differences between two evals' JSON summaries (B − A), with 95%
    /// intervals from a paired bootstrap over their common cases.
    Compare {
        /// The first summary (`conclave eval --format json`).
        a: PathBuf,
        /// The second.
        b: PathBuf,
        /// Markdown or JSON.
        #[arg(long, value_enum, default_value = "markdown")]
        format: EvalFormat,
        /// Write it here instead of standard output.
        #[arg(long)]
        output_file: Option<PathBuf>,
    },
}

/// How an eval is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EvalFormat {
    /// Tables.
    Markdown,
    /// The summary's JSON, which `eval compare` reads.
    Json,
    /// One self-contained page with charts.
    Html,
}

/// Runs `conclave eval`; returns the exit code.
pub async fn run(args: EvalArgs, workspace: Workspace, queue: Arc<dyn RunQueue>) -> u8 {
    let Some(dataset) = args.dataset.clone() else { return exit::CONFIG };
    let mut config = engine_config_on(args.concurrency.nodes(), &queue).await;
    args.sandboxing.apply(&mut config);
    let store: Arc<dyn RunStore> = queue;
    let engine = Engine::new(workspace.providers.clone(), store.clone(), config);
    let request = EvalRequest {
        dataset,
        conclave: args.conclave.clone().map_or(ConclaveChoice::Default, ConclaveChoice::PathOrId),
        provider: args.provider.clone(),
        model: args.model.clone(),
        samples: args.samples,
        min_support: args.min_support,
        window: args.window,
        judge: args.judge.clone().map(ConclaveChoice::PathOrId),
        jobs: usize::from(args.jobs),
        max_diff_bytes: args.max_diff_bytes.unwrap_or(workspace.max_diff_bytes),
        no_cache: args.no_cache,
        analyzers: args.analyzers.as_deref().map_or(AnalyzerSelection::None, AnalyzerSelection::parse),
    };
    let ctx =
        EvalContext { catalog: workspace.catalog(), providers: &workspace.providers, engine: &engine, store: &store };
    let started = Instant::now();
    let summary = match eval::run_eval(&request, ctx, &|line| eprintln!("{line}")).await {
        Ok(summary) => summary,
        Err(error) => return explain(&error),
    };
    // Kept for the API and the editor's Evals panel; the summary is still written
    // when the store fails.
    let kept = conclave_shared::eval::StoredEval {
        id: uuid::Uuid::now_v7().to_string(),
        conclave: summary.conclave.clone(),
        dataset: summary.dataset.clone(),
        created_ms: conclave_core::now_ms(),
        summary: summary.clone(),
    };
    match store.put_eval(&kept).await {
        Ok(()) => eprintln!("eval {} kept", kept.id),
        Err(e) => eprintln!("warning: the eval was not kept in the run store: {e}"),
    }
    eprintln!(
        "evaluated {} case(s) in {:.1} s: precision {:.3}, recall {:.3}, F1 {:.3}",
        summary.cases,
        started.elapsed().as_secs_f64(),
        summary.precision,
        summary.recall,
        summary.f1
    );
    let failed = summary.cases_detail.iter().filter(|c| c.status != "succeeded").count();
    if failed > 0 {
        eprintln!("warning: {failed} case(s) did not succeed; their issues count as missed (see cases_detail)");
    }
    let text = match args.format {
        EvalFormat::Markdown => markdown::summary_markdown(&summary),
        EvalFormat::Json => json_text(&summary),
        EvalFormat::Html => html::summary_html(&summary),
    };
    let output = args.output_file.clone();
    super::offload::blocking(move || write_out(&text, output.as_deref())).await
}

fn explain(error: &EvalError) -> u8 {
    eprintln!("error: {error}");
    match error {
        EvalError::Internal(_) => exit::OTHER,
        EvalError::Start { error, .. } => super::run::start_error_code(error),
        _ => exit::CONFIG,
    }
}

fn json_text<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default() + "\n"
}

fn write_out(text: &str, file: Option<&Path>) -> u8 {
    match file {
        Some(path) => match std::fs::write(path, text) {
            Ok(()) => exit::OK,
            Err(e) => {
                eprintln!("error: cannot write {}: {e}", path.display());
                exit::OTHER
            }
        },
        None => {
            print!("{text}");
            exit::OK
        }
    }
}

fn read_summary(path: &Path) -> Result<EvalSummary, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&text)
        .map_err(|e| format!("{}: not the JSON summary of `conclave eval --format json` ({e})", path.display()))
}

/// Runs `conclave eval compare`; returns the exit code.
pub fn compare_command(args: &EvalArgs) -> u8 {
    match &args.command {
        Some(EvalCommand::Compare { a, b, format, output_file }) => {
            compare_files(a, b, *format, output_file.as_deref())
        }
        None => exit::CONFIG,
    }
}

fn compare_files(a: &Path, b: &Path, format: EvalFormat, output: Option<&Path>) -> u8 {
    let compared: Result<Comparison, String> = read_summary(a)
        .and_then(|a_summary| read_summary(b).and_then(|b_summary| compare::compare(&a_summary, &b_summary)));
    let comparison = match compared {
        Ok(c) => c,
        Err(message) => {
            eprintln!("error: {message}");
            return exit::CONFIG;
        }
    };
    let text = match format {
        EvalFormat::Json => json_text(&comparison),
        EvalFormat::Markdown | EvalFormat::Html => markdown::comparison_markdown(&comparison),
    };
    write_out(&text, output)
}
