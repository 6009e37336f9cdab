//! `conclave serve`: the HTTP API and the editor on one address. A token is always
//! required (generated at start, printed in the URL, unless `CONCLAVE_TOKEN` is set
//! or `--no-token` is given on loopback), reviews are confined to `--repo-root`, and
//! the listener is bounded: a cap on open connections, and timeouts on reading a
//! request's headers and body, so silent connections cannot exhaust the server. An
//! embedded worker runs queued runs (`--workers N` at once; 0 serves the API only).

use clap::Args;
use conclave_core::{RunQueue, Secret, owner_token};
use conclave_engine::Engine;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tower_http::timeout::RequestBodyTimeout;

use super::exit;
use crate::api::{AppState, EditorSource, Security, app};
use crate::worker::{Worker, WorkerConfig};
use crate::workspace::{Workspace, engine_config_on};

/// How long a client has to send a request's body.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// Arguments of `conclave serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:7700")]
    pub bind: SocketAddr,
    /// Serve the editor from this directory (a `client/dist` built with
    /// `scripts/build-editor.sh`) instead of the one built into conclave: for editor
    /// development.
    #[arg(long, env = "CONCLAVE_EDITOR_DIR")]
    pub editor_dir: Option<PathBuf>,
    /// Serve without a token. Loopback only; Host and Origin are still checked.
    #[arg(long)]
    pub no_token: bool,
    /// Also answer to this host name (repeatable); loopback names are always allowed.
    #[arg(long = "allowed-host", value_name = "NAME")]
    pub allowed_hosts: Vec<String>,
    /// Repositories under this directory may be reviewed (repeatable; default: the
    /// repository `conclave serve` is started in).
    #[arg(long = "repo-root", value_name = "DIR")]
    pub repo_roots: Vec<PathBuf>,
    /// Most connections open at once; more wait until one closes.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u16).range(1..=4096))]
    pub max_connections: u16,
    /// Seconds a client has to send a request's headers; an idle kept-alive
    /// connection is waiting for headers too, so this also closes idle connections.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u16).range(1..=3600))]
    pub header_timeout: u16,
    /// Runs of the run queue this server runs at once with its embedded worker; 0
    /// serves the API only and leaves queued runs to `conclave worker` processes.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(0..=256))]
    pub workers: u16,
}

/// Serves until Ctrl-C; returns the exit code.
pub async fn run(args: ServeArgs, workspace: Workspace, queue: Arc<dyn RunQueue>) -> u8 {
    let security = match security(&args) {
        Ok(s) => s,
        Err(message) => {
            eprintln!("error: {message}");
            return exit::CONFIG;
        }
    };
    let editor = match &args.editor_dir {
        None => EditorSource::embedded(),
        Some(dir) => match EditorSource::directory(dir) {
            Ok(source) => source,
            Err(e) => {
                eprintln!("error: --editor-dir: {e}");
                return exit::CONFIG;
            }
        },
    };
    if let Some(notice) = editor.notice() {
        eprintln!("note: {notice}");
    }
    let token = security.token.clone();
    let engine = Engine::new(workspace.providers.clone(), queue.clone(), engine_config_on(16, &queue));
    let context = workspace.catalog_context().clone();
    let state = AppState::new(workspace, engine, security, editor)
        .with_metrics(crate::observe::prometheus::install())
        .with_queue(queue.clone());
    let shutdown = CancellationToken::new();
    if args.workers > 0 {
        let config = WorkerConfig {
            id: format!("{}-serve", owner_token()),
            lease: Duration::from_secs(30),
            idle: Duration::from_millis(100),
            max_runs: usize::from(args.workers),
        };
        // The runs it claims are this server's live runs: streamed from memory, cancelled at once.
        let worker = Worker::new(queue, state.engine.clone(), context, config).announcing(state.live.clone());
        tokio::spawn(worker.work(shutdown.clone()));
    }
    let listener = match tokio::net::TcpListener::bind(args.bind).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("error: cannot listen on {}: {e}; choose another address with --bind", args.bind);
            return exit::CONFIG;
        }
    };
    let address = listener.local_addr().map_or_else(|_| args.bind.to_string(), |a| a.to_string());
    let url = match &token {
        Some(token) => format!("http://{address}/#token={}", token.expose()),
        None => format!("http://{address}/"),
    };
    eprintln!(
        "Conclave is serving on {url}\n  (the API is under /api, Prometheus metrics at /metrics with the same token; \
         Ctrl-C stops it)"
    );
    let service = RequestBodyTimeout::new(app(state), BODY_TIMEOUT);
    let code = tokio::select! {
        () = accept(listener, service, usize::from(args.max_connections), Duration::from_secs(args.header_timeout.into())) => exit::OTHER,
        _ = tokio::signal::ctrl_c() => exit::OK,
    };
    // Runs the embedded worker still has are left to other workers (their lease lapses).
    shutdown.cancel();
    code
}

/// The token, the allowed hosts and the repository roots from the arguments.
fn security(args: &ServeArgs) -> Result<Security, String> {
    let loopback = args.bind.ip().is_loopback();
    let token = match (std::env::var("CONCLAVE_TOKEN").ok().filter(|t| !t.trim().is_empty()), args.no_token) {
        (Some(token), _) => Some(Secret::new(token)),
        (None, true) if loopback => None,
        (None, true) => {
            return Err(format!(
                "--no-token is allowed on loopback only; binding to {} needs a token (leave --no-token out to get one)",
                args.bind
            ));
        }
        (None, false) => Some(Secret::new(new_token()?)),
    };
    let mut allowed_hosts = args.allowed_hosts.clone();
    if !args.bind.ip().is_unspecified() && !loopback {
        allowed_hosts.push(args.bind.ip().to_string());
    }
    let repo_roots = if args.repo_roots.is_empty() { vec![default_repo_root()] } else { args.repo_roots.clone() };
    for root in &repo_roots {
        if !root.is_dir() {
            return Err(format!("--repo-root {} is not a directory", root.display()));
        }
    }
    Ok(Security { token, allowed_hosts, repo_roots })
}

/// 32 random bytes from the operating system, as hex.
fn new_token() -> Result<String, String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| format!("cannot make a random token: {e}; set CONCLAVE_TOKEN"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The repository the server is started in, or the working directory.
fn default_repo_root() -> PathBuf {
    let here = PathBuf::from(".");
    std::process::Command::new("git")
        .args(["rev-parse", "--show-toplevel"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        .unwrap_or(here)
}

/// The service `serve` runs: the app with a time limit on request bodies.
type Served = RequestBodyTimeout<crate::api::App>;

/// Accepts connections, at most `max` open at once, each served with header and
/// keep-alive timeouts.
async fn accept(listener: tokio::net::TcpListener, service: Served, max: usize, header_timeout: Duration) {
    let slots = Arc::new(Semaphore::new(max));
    loop {
        // Wait for a free slot before accepting, so excess clients queue in the
        // kernel's backlog instead of holding file descriptors here.
        let Ok(slot) = slots.clone().acquire_owned().await else { return };
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                tracing::warn!("accepting a connection failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let service = TowerToHyperService::new(service.clone());
        tokio::spawn(async move {
            // A client that connects and says nothing is let go: the header timeout
            // only starts once bytes arrive.
            let mut first = [0u8; 1];
            if !matches!(tokio::time::timeout(header_timeout, stream.peek(&mut first)).await, Ok(Ok(1..))) {
                return;
            }
            let mut builder = auto::Builder::new(TokioExecutor::new());
            builder.http1().timer(TokioTimer::new()).header_read_timeout(header_timeout).keep_alive(true);
            builder.http2().timer(TokioTimer::new()).keep_alive_interval(Some(Duration::from_secs(30)));
            if let Err(e) = builder.serve_connection_with_upgrades(TokioIo::new(stream), service).await {
                tracing::debug!("a connection ended with an error: {e}");
            }
            drop(slot);
        });
    }
}
