//! `conclave serve`: the HTTP API and the editor on one address.

use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use conclave_core::{RunStore, Secret};
use conclave_engine::Engine;

use super::exit;
use crate::api::{AppState, app};
use crate::workspace::{Workspace, engine_config};

/// Arguments of `conclave serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on. Anything but loopback requires CONCLAVE_TOKEN.
    #[arg(long, default_value = "127.0.0.1:7700")]
    pub bind: SocketAddr,
    /// The built editor (index.html and the wasm bundle).
    #[arg(long, env = "CONCLAVE_EDITOR_DIR", default_value = "client/dist")]
    pub editor_dir: PathBuf,
}

/// Serves until Ctrl-C; returns the exit code.
pub async fn run(args: ServeArgs, workspace: Workspace, store: Arc<dyn RunStore>) -> u8 {
    let token = std::env::var("CONCLAVE_TOKEN").ok().filter(|t| !t.trim().is_empty()).map(Secret::new);
    if !args.bind.ip().is_loopback() && token.is_none() {
        eprintln!(
            "error: binding to {} exposes the API beyond this machine; set CONCLAVE_TOKEN (clients then send `Authorization: Bearer <token>`), or bind to 127.0.0.1",
            args.bind
        );
        return exit::CONFIG;
    }
    let editor_dir = args.editor_dir.join("index.html").is_file().then(|| args.editor_dir.clone());
    if editor_dir.is_none() {
        eprintln!(
            "note: no editor in {}; serving the API only (build it with `bash scripts/build-editor.sh`)",
            args.editor_dir.display()
        );
    }
    let engine = Engine::new(workspace.providers.clone(), store, engine_config(16));
    let state = AppState::new(workspace, engine, token, editor_dir);
    let listener = match tokio::net::TcpListener::bind(args.bind).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("error: cannot listen on {}: {e}; choose another address with --bind", args.bind);
            return exit::CONFIG;
        }
    };
    let address = listener.local_addr().map_or_else(|_| args.bind.to_string(), |a| a.to_string());
    eprintln!("Conclave is serving on http://{address} (API under /api, Ctrl-C to stop)");
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    match axum::serve(listener, app(state)).with_graceful_shutdown(shutdown).await {
        Ok(()) => exit::OK,
        Err(e) => {
            eprintln!("error: the server stopped: {e}");
            exit::OTHER
        }
    }
}
