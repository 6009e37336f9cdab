//! The `conclave` command line: argument parsing, shared set-up (workspace, store,
//! providers) and the exit codes of DESIGN.md.

mod progress;
mod review;
mod run;
mod runs;
mod schema;
mod serve;
mod validate;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use crate::catalog::CatalogContext;
use crate::engine::{now_ms, owner_alive};
use crate::providers::ProviderRegistry;
use crate::schema::SchemaCatalog;
use crate::store::SqliteStore;

/// Exit codes, as documented in the README.
pub mod exit {
    /// Success.
    pub const OK: u8 = 0;
    /// Anything not covered below.
    pub const OTHER: u8 = 1;
    /// Configuration or input error found before any provider call.
    pub const CONFIG: u8 = 2;
    /// A provider failed.
    pub const PROVIDER: u8 = 3;
    /// Structured output still invalid after retries.
    pub const CONTRACT: u8 = 4;
    /// A `--fail-on` gate tripped.
    pub const GATE: u8 = 5;
}

/// Conclave: a graph workflow engine for LLM agents.
#[derive(Debug, Parser)]
#[command(name = "conclave", version, about, propagate_version = true)]
pub struct Cli {
    /// SQLite file for runs and events.
    #[arg(long, global = true, env = "CONCLAVE_DB", default_value = ".conclave/conclave.db")]
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
    /// Run a conclave with an input.
    Run(run::RunArgs),
    /// Serve the HTTP API and the editor.
    Serve(serve::ServeArgs),
    /// Inspect stored runs.
    #[command(subcommand)]
    Runs(runs::RunsCommand),
    /// Output schemas: references, lowering previews, the file format's schema.
    #[command(subcommand)]
    Schema(schema::SchemaCommand),
    /// List the providers and whether each is configured.
    Providers,
}

/// Parses the process arguments and runs the command with these providers.
pub fn main(providers: ProviderRegistry) -> ExitCode {
    let cli = Cli::parse();
    init_tracing();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(exit::OTHER);
        }
    };
    ExitCode::from(runtime.block_on(dispatch(cli, providers)))
}

async fn dispatch(cli: Cli, providers: ProviderRegistry) -> u8 {
    let workspace = Workspace::current(providers);
    match cli.command {
        Command::Validate(args) => validate::run(args, &workspace),
        Command::Schema(cmd) => schema::run(cmd, &workspace),
        Command::Providers => {
            for (name, status) in workspace.providers.status() {
                match status {
                    Ok(()) => println!("{name:<12} configured"),
                    Err(crate::providers::ProviderError::Config { message, .. }) => {
                        println!("{name:<12} not configured: {message}")
                    }
                    Err(e) => println!("{name:<12} not usable: {e}"),
                }
            }
            exit::OK
        }
        Command::Review(args) => match open_store(&cli.db).await {
            Ok(store) => review::run(args, &workspace, store).await,
            Err(code) => code,
        },
        Command::Serve(args) => match open_store(&cli.db).await {
            Ok(store) => serve::run(args, &workspace, store).await,
            Err(code) => code,
        },
        Command::Run(args) => match open_store(&cli.db).await {
            Ok(store) => run::run(args, &workspace, store).await,
            Err(code) => code,
        },
        Command::Runs(cmd) => match open_store(&cli.db).await {
            Ok(store) => runs::run(cmd, store).await,
            Err(code) => code,
        },
    }
}

/// Where the command looks for conclaves and schemas, and what it can run.
#[derive(Debug)]
pub struct Workspace {
    /// The directory holding `*.conclave.json` files.
    pub catalog_dir: PathBuf,
    /// Schema search roots.
    pub schemas: SchemaCatalog,
    /// Providers available to runs.
    pub providers: ProviderRegistry,
}

impl Workspace {
    /// The workspace rooted at the current directory.
    pub fn current(providers: ProviderRegistry) -> Workspace {
        // Relative paths keep messages short and identical wherever the repo lives.
        Workspace {
            catalog_dir: PathBuf::from("conclaves"),
            schemas: SchemaCatalog::for_workspace(std::path::Path::new("")),
            providers,
        }
    }

    /// What validation checks against.
    pub fn catalog_context(&self) -> CatalogContext {
        catalog_context(&self.schemas, &self.providers)
    }
}

/// What validation checks against, for these schemas and providers.
pub fn catalog_context(schemas: &SchemaCatalog, providers: &ProviderRegistry) -> CatalogContext {
    CatalogContext {
        schemas: schemas.clone(),
        providers: providers.known_names(),
        tools: crate::BUILTIN_TOOLS.iter().map(|t| t.to_string()).collect(),
    }
}

/// Opens the run store and marks runs whose process died as interrupted.
async fn open_store(path: &std::path::Path) -> Result<Arc<SqliteStore>, u8> {
    let store = SqliteStore::open(path).map_err(|e| {
        eprintln!("error: {e}\n  help: pass another file with --db or CONCLAVE_DB");
        exit::CONFIG
    })?;
    let store = Arc::new(store);
    if let Err(e) = crate::store::RunStore::mark_interrupted(store.as_ref(), &owner_alive, now_ms()).await {
        eprintln!("warning: could not check for interrupted runs: {e}");
    }
    Ok(store)
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("CONCLAVE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).try_init();
}
