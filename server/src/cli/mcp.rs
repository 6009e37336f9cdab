//! `conclave mcp`: Conclave as an MCP server over standard input and output, for a
//! coding agent that starts it (`claude mcp add conclave -- conclave mcp`). It
//! answers from this directory's workspace and run store, runs reviews and conclaves
//! in this process on one engine, and reviews any repository its user can read, the
//! working directory by default, as `conclave review` does. Standard output carries
//! only the protocol; notes go to standard error.

use clap::Args;
use conclave_core::RunQueue;
use conclave_engine::Engine;
use std::sync::Arc;

use super::concurrency::Concurrency;
use super::exit;
use crate::api::{AppState, EditorSource, Security};
use crate::workspace::{Workspace, engine_config_on};

/// Arguments of `conclave mcp`.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// How many nodes of its runs run at once.
    #[command(flatten)]
    pub concurrency: Concurrency,
    /// Whether commands may run unconfined where the kernel cannot confine them.
    #[command(flatten)]
    pub sandboxing: super::sandbox::Sandboxing,
}

/// Serves MCP on stdio until the client closes it; returns the exit code.
pub async fn run(args: McpArgs, workspace: Workspace, queue: Arc<dyn RunQueue>) -> u8 {
    let workdir = match std::env::current_dir() {
        Ok(dir) => dir,
        Err(e) => {
            eprintln!("error: cannot read the working directory: {e}");
            return exit::CONFIG;
        }
    };
    let mut config = engine_config_on(args.concurrency.nodes(), &queue).await;
    args.sandboxing.apply(&mut config);
    let engine = Engine::new(workspace.providers.clone(), queue, config);
    // The client is the user's own process: no token, no Host, and any repository the
    // user can read, as on the command line. Runs start here, not in a queue.
    let security =
        Security { token: None, allowed_hosts: Vec::new(), repo_roots: Vec::new(), allowed_programs: Vec::new() };
    let state = AppState::new(workspace, engine, security, EditorSource::Missing);
    eprintln!("conclave mcp: serving MCP on stdio from {}", workdir.display());
    match crate::mcp::serve_stdio(state, workdir).await {
        Ok(()) => exit::OK,
        Err(message) => {
            eprintln!("error: {message}");
            exit::OTHER
        }
    }
}
