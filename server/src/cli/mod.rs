//! The `conclave` command line: argument parsing, shared set-up (workspace, store,
//! providers) and the exit codes of DESIGN.md.

mod analyzers;
mod approve;
mod budget;
mod concurrency;
mod connections;
mod dismiss;
mod dismissals;
pub mod docs;
mod eval;
pub mod exit;
mod forges;
mod format_arg;
mod mcp;
mod offload;
mod post;
mod progress;
mod providers;
mod recordings;
mod review;
mod run;
mod runs;
mod sandbox;
mod scan;
mod schema;
mod serve;
mod symbols;
mod validate;
mod validate_mcp;
mod worker;

use clap::{Parser, Subcommand};
use conclave_core::{ProviderRegistry, RunQueue};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

pub use format_arg::format_parser;

use crate::workspace::{Workspace, open_store};
use offload::blocking;

/// Conclave: a graph workflow engine for LLM agents.
#[derive(Debug, Parser)]
#[command(name = "conclave", version, propagate_version = true)]
pub struct Cli {
    /// Where runs and events are kept: a SQLite file, or a PostgreSQL database as a
    /// postgres:// or postgresql:// URL (better given in CONCLAVE_DB when it holds a password).
    #[arg(long, global = true, env = "CONCLAVE_DB", default_value = ".conclave/conclave.db", hide_env_values = true)]
    pub db: PathBuf,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check conclave and schema files without calling any provider.
    Validate(validate::ValidateArgs),
    /// Review a git change with specialist agents and a Writer: Conclave's main job.
    Review(review::ReviewArgs),
    /// List the review conclave's analyzer lanes, whether each is installed, and
    /// which would run on the change (and why each other one is off).
    Analyzers(analyzers::AnalyzersArgs),
    /// Run one of Conclave's own analyzers on the working tree's changes, printing
    /// SARIF (the built-in review conclaves run them as analyzer lanes).
    #[command(subcommand)]
    Scan(scan::ScanCommand),
    /// Record that a finding does not apply, in the repository's .conclave/dismissed.json.
    Dismiss(dismiss::DismissArgs),
    /// The dismissals made by replying `/conclave dismiss` on pull requests, kept in
    /// the --db store: list them, or export them into .conclave/dismissed.json.
    #[command(subcommand)]
    Dismissals(dismissals::DismissalsCommand),
    /// Run a conclave with an input.
    Run(run::RunArgs),
    /// Score a conclave's reviews on a dataset of labelled changes; `eval compare`
    /// compares two evals.
    Eval(eval::EvalArgs),
    /// Approve (or reject) at a waiting approval node, and go on with the run.
    Approve(approve::ApproveArgs),
    /// Serve the HTTP API and the editor (and MCP at /mcp).
    Serve(serve::ServeArgs),
    /// Serve MCP over standard input and output, for a coding agent
    /// (`claude mcp add conclave -- conclave mcp`): review, run and approve as tools.
    Mcp(mcp::McpArgs),
    /// Inspect stored runs.
    #[command(subcommand)]
    Runs(runs::RunsCommand),
    /// Output schemas: references, lowering previews, the file format's schema.
    #[command(subcommand)]
    Schema(schema::SchemaCommand),
    /// List the providers and whether each is configured; `--probe` asks each
    /// configured one which structured-output dialect its server speaks.
    Providers(providers::ProvidersArgs),
    /// Claim queued runs from the --db database and run them.
    Worker(worker::WorkerArgs),
    /// The sandbox commands run in: `conclave sandbox check` says what confines them
    /// here and tests it.
    #[command(subcommand)]
    Sandbox(sandbox::SandboxCommand),
    /// The symbol index the review tools use: where a name is defined, where it is
    /// used, or a file's outline (`--definition`, `--references`, `--outline`).
    Symbols(symbols::SymbolsArgs),
    /// The manual's generated references, as Markdown (for docs/reference/).
    #[command(subcommand, hide = true)]
    Docs(docs::DocsCommand),
}

/// Parses the process arguments and runs the command with these providers.
pub fn main(providers: ProviderRegistry) -> ExitCode {
    // As ssh-agent does: no process of the same user reads Conclave's memory or
    // environment (its keys) through /proc or ptrace, and it leaves no core dump.
    if let Err(e) = conclave_sandbox::make_non_dumpable() {
        eprintln!("warning: could not make this process non-dumpable: {e}");
    }
    let cli = Cli::parse();
    install_process_redactor(&providers, &cli.db);
    // Runs reach the MCP servers their conclaves declare through the SDK's client.
    let providers = match providers.tool_servers() {
        Some(_) => providers,
        None => providers.with_tool_servers(Arc::new(conclave_mcp::McpHost::new())),
    };
    // Conclave's own analyzer lanes (`conclave scan …`) run this executable.
    if let Ok(me) = std::env::current_exe() {
        conclave_review::analyzers::use_conclave_executable(me);
    }
    let traces = crate::observe::init_tracing();
    let code = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime.block_on(dispatch(cli, providers)),
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            exit::OTHER
        }
    };
    // Outside the runtime: the exporter sends what is left, so a short command's
    // spans are not lost.
    if let Some(traces) = traces {
        traces.shutdown();
    }
    ExitCode::from(code)
}

/// Decides once every secret the process knows: those the providers' redactor was
/// given (their keys, the server's token, the forges' tokens, URL credentials) and
/// the password of a `--db` URL. Every rendered report and posted body passes it last.
fn install_process_redactor(providers: &ProviderRegistry, db: &std::path::Path) {
    let known = providers.redactor().map(|r| (*r).clone()).unwrap_or_default();
    let db_secrets =
        conclave_core::redact::find_url_credentials(&db.to_string_lossy()).into_iter().flat_map(|found| found.secrets);
    conclave_core::install_process_redactor(Arc::new(known.with_secrets(db_secrets)));
}

async fn dispatch(cli: Cli, providers: ProviderRegistry) -> u8 {
    let recordings = match &cli.command {
        Command::Run(args) => Some(&args.recordings),
        Command::Review(args) => Some(&args.recordings),
        Command::Eval(args) => Some(&args.recordings),
        _ => None,
    };
    let providers = match recordings.map(|r| r.apply(providers.clone())).unwrap_or(Ok(providers)) {
        Ok(providers) => providers,
        Err(message) => {
            eprintln!("error: {message}");
            return exit::CONFIG;
        }
    };
    let workspace = Workspace::current(providers);
    match cli.command {
        // Commands that only read files and run git, on a blocking thread.
        Command::Validate(args) => blocking(move || validate::run(args, &workspace)).await,
        Command::Schema(cmd) => blocking(move || schema::run(cmd, &workspace)).await,
        Command::Dismiss(args) => blocking(move || dismiss::run(args)).await,
        Command::Analyzers(args) => blocking(move || analyzers::run(args, &workspace)).await,
        Command::Scan(cmd) => blocking(move || scan::run(cmd)).await,
        Command::Sandbox(cmd) => blocking(move || sandbox::run(cmd)).await,
        Command::Symbols(args) => blocking(move || symbols::run(args, &workspace.allow_paths)).await,
        Command::Docs(cmd) => docs::run(cmd, &<Cli as clap::CommandFactory>::command()),
        Command::Providers(args) if args.probe => match store(&cli.db).await {
            Ok(store) => providers::run(args, &workspace, Some(store.as_ref())).await,
            Err(code) => code,
        },
        Command::Providers(args) => providers::run(args, &workspace, None).await,
        Command::Review(args) if review::store_from_the_change(&args, &cli.db).await => exit::CONFIG,
        Command::Review(args) => match store(&cli.db).await {
            Ok(store) => review::run(args, workspace, store).await,
            Err(code) => code,
        },
        Command::Serve(args) => match store(&cli.db).await {
            Ok(store) => serve::run(args, workspace, store).await,
            Err(code) => code,
        },
        Command::Mcp(args) => match store(&cli.db).await {
            Ok(store) => mcp::run(args, workspace, store).await,
            Err(code) => code,
        },
        Command::Eval(args) if args.command.is_some() => blocking(move || eval::compare_command(&args)).await,
        Command::Eval(args) => match store(&cli.db).await {
            Ok(store) => eval::run(args, workspace, store).await,
            Err(code) => code,
        },
        Command::Run(args) => match store(&cli.db).await {
            Ok(store) => run::run(args, workspace, store).await,
            Err(code) => code,
        },
        Command::Approve(args) => match store(&cli.db).await {
            Ok(store) => approve::run(args, workspace, store).await,
            Err(code) => code,
        },
        Command::Dismissals(cmd) => match store(&cli.db).await {
            Ok(store) => dismissals::run(cmd, store).await,
            Err(code) => code,
        },
        Command::Runs(cmd) => match store(&cli.db).await {
            Ok(store) => runs::run(cmd, store).await,
            Err(code) => code,
        },
        Command::Worker(args) => match store(&cli.db).await {
            Ok(queue) => worker::run(args, workspace, queue).await,
            Err(code) => code,
        },
    }
}

/// Opens the run store (with its queue), or says why not and gives the exit code.
async fn store(db: &std::path::Path) -> Result<Arc<dyn RunQueue>, u8> {
    open_store(db).await.map_err(|e| {
        let help = if crate::workspace::postgres_url(db).is_some() {
            "--db and CONCLAVE_DB take a postgres:// URL or a SQLite file"
        } else {
            "pass another file with --db or CONCLAVE_DB"
        };
        eprintln!("error: {e}\n  help: {help}");
        exit::CONFIG
    })
}
