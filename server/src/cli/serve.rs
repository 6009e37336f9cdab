//! `conclave serve`: the HTTP API and the editor on one address. A token is always
//! required (generated at start, printed in the URL, unless `CONCLAVE_TOKEN` is set
//! or `--no-token` is given on loopback), reviews are confined to `--repo-root`, and
//! the listener is bounded (`connections.rs`): a cap on open connections below the
//! open-file limit, the longest-idle connection closed for a new client, and timeouts
//! on reading a request's headers and body, so idle or silent connections cannot
//! exhaust the server. An embedded worker runs queued runs (`--workers N` at once; 0
//! serves the API only), their nodes `--max-concurrency` at once.

use clap::Args;
use conclave_core::{RunQueue, Secret, owner_token};
use conclave_engine::Engine;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tower_http::timeout::RequestBodyTimeout;

use super::concurrency::Concurrency;
use super::connections::{accept, connection_cap, raise_file_limit};
use super::exit;
use crate::api::webhooks::settings::Webhooks;
use crate::api::{AppState, EditorSource, Security, app};
use crate::forge_service::Dispatcher;
use crate::worker::{Worker, WorkerConfig};
use crate::workspace::{Workspace, engine_config_on};

/// How long a client has to send a request's body.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// Arguments of `conclave serve`.
#[derive(Debug, Clone, Args)]
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
    /// Programs that conclaves saved through the API may run in command nodes (a
    /// command does anything its user can). Without it, saving a conclave with a
    /// command node through the API is refused with 403; conclave files on disk run
    /// their commands whatever this says.
    #[arg(long = "allow-commands", value_name = "PROGRAM", num_args = 1..)]
    pub allow_commands: Vec<String>,
    /// Most connections open at once. Kept below the open-file limit (raised to its
    /// hard limit at start) less the files the store and the runs need: 64, and 2 per
    /// node of --max-concurrency. At the cap, the connection idle longest is closed
    /// for a new client; when every one is busy, new clients wait until one closes.
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
    /// How many nodes of those runs (and of runs the API starts from a node) run at once.
    #[command(flatten)]
    pub concurrency: Concurrency,
    /// Review draft pull (merge) requests as ready ones when a webhook says they were
    /// opened or pushed to; without it a draft waits until it is marked ready. The
    /// webhook endpoints exist only when their secrets are set in the environment:
    /// CONCLAVE_GITHUB_WEBHOOK_SECRET for POST /webhooks/github,
    /// CONCLAVE_GITLAB_WEBHOOK_SECRET for POST /webhooks/gitlab.
    #[arg(long)]
    pub review_drafts: bool,
    /// Where the bare mirrors of repositories reviewed for webhooks, and their
    /// worktrees, are kept.
    #[command(flatten)]
    pub forges: super::forges::ForgeArgs,
    /// Whether commands may run unconfined where the kernel cannot confine them.
    #[command(flatten)]
    pub sandboxing: super::sandbox::Sandboxing,
}

/// Serves until Ctrl-C; returns the exit code.
pub async fn run(args: ServeArgs, workspace: Workspace, queue: Arc<dyn RunQueue>) -> u8 {
    let setting_up = args.clone();
    // Checking the roots and the editor's directory, and asking git, block.
    let (security, editor, cap) = match tokio::task::spawn_blocking(move || set_up(&setting_up)).await {
        Ok(Ok(set)) => set,
        Ok(Err(message)) => {
            eprintln!("error: {message}");
            return exit::CONFIG;
        }
        Err(e) => {
            eprintln!("error: setting up the server stopped: {e}");
            return exit::OTHER;
        }
    };
    let token = security.token.clone();
    let mut config = engine_config_on(args.concurrency.nodes(), &queue).await;
    args.sandboxing.apply(&mut config);
    let engine = Engine::new(workspace.providers.clone(), queue.clone(), config);
    let context = workspace.catalog_context().clone();
    // The webhooks' secrets come from the environment only: a flag would show them to
    // anyone who lists processes.
    let webhooks = Webhooks::from_env(&|name| std::env::var(name).ok(), args.review_drafts);
    let receiving = webhook_notice(&webhooks);
    let forges = match forge_service(&args, &workspace, &webhooks).await {
        Ok(forges) => forges,
        Err(code) => return code,
    };
    let kept = webhooks.kept.clone();
    let state = AppState::new(workspace, engine, security, editor)
        .with_metrics(crate::observe::prometheus::install())
        .with_queue(queue.clone())
        .with_webhooks(webhooks);
    let shutdown = CancellationToken::new();
    let background = Background { queue, context, forges, kept };
    if let Err(message) = background.spawn(&args, &state, &shutdown) {
        eprintln!("error: {message}");
        return exit::OTHER;
    }
    // Waits whose time to decide ran out end rejected, even with no one deciding.
    let sweeping = state.clone();
    tokio::spawn(async move {
        let mut every = tokio::time::interval(crate::api::approvals::SWEEP);
        loop {
            every.tick().await;
            crate::api::approvals::expire_approvals(&sweeping).await;
        }
    });
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
         Ctrl-C stops it){receiving}"
    );
    let service = RequestBodyTimeout::new(app(state), BODY_TIMEOUT);
    let code = tokio::select! {
        () = accept(listener, service, cap, Duration::from_secs(args.header_timeout.into())) => exit::OTHER,
        _ = tokio::signal::ctrl_c() => exit::OK,
    };
    // Runs the embedded worker still has are left to other workers (their lease lapses).
    shutdown.cancel();
    code
}

/// What runs beside the API: the embedded worker and the webhook dispatcher.
struct Background {
    queue: Arc<dyn RunQueue>,
    context: conclave_catalog::CatalogContext,
    forges: Option<Arc<crate::forge_service::ForgeService>>,
    kept: Arc<tokio::sync::Notify>,
}

impl Background {
    /// Spawns the embedded worker (unless `--workers 0`) and, where webhooks are
    /// received, the dispatcher, both stopping with `shutdown`.
    fn spawn(self, args: &ServeArgs, state: &AppState, shutdown: &CancellationToken) -> Result<(), String> {
        let Background { queue, context, forges, kept } = self;
        if args.workers > 0 {
            let config = WorkerConfig {
                id: format!("{}-serve", owner_token()),
                lease: Duration::from_secs(30),
                idle: Duration::from_millis(100),
                max_runs: usize::from(args.workers),
            };
            // The runs it claims are this server's live runs: streamed from memory, cancelled at once.
            let worker = Worker::new(queue.clone(), state.engine.clone(), context, config)
                .announcing(state.live.clone())
                .woken_by(state.queued.clone());
            let worker = match &forges {
                Some(service) => worker.serving_forges(service.clone()),
                None => worker,
            };
            tokio::spawn(worker.work(shutdown.clone()));
        }
        // Deliveries become queued reviews only where a server receives them.
        if let (Some(service), true) = (&forges, state.webhooks.any()) {
            let dispatcher = Dispatcher::new(queue, service.clone(), super::forges::placeholder()?, kept);
            tokio::spawn(dispatcher.run(shutdown.clone()));
        }
        Ok(())
    }
}

/// The service reviewing pull requests, when forge credentials are set; a warning
/// when webhooks are received without them. Exit 2 for credentials set but wrong.
async fn forge_service(
    args: &ServeArgs,
    workspace: &Workspace,
    webhooks: &Webhooks,
) -> Result<Option<Arc<crate::forge_service::ForgeService>>, u8> {
    let forges = super::forges::service(&args.forges, workspace).await.map_err(|message| {
        eprintln!("error: {message}");
        exit::CONFIG
    })?;
    if webhooks.any() && forges.is_none() {
        eprintln!(
            "warning: webhook deliveries are kept, but no review runs from them until forge credentials are set: \
             CONCLAVE_GITHUB_APP_ID and CONCLAVE_GITHUB_APP_KEY_FILE (a GitHub App), CONCLAVE_GITHUB_TOKEN with \
             CONCLAVE_GITHUB_REPOSITORY, or CONCLAVE_GITLAB_TOKEN"
        );
    }
    Ok(forges)
}

/// The line of the banner that says which webhooks the server receives.
fn webhook_notice(webhooks: &Webhooks) -> String {
    let forges: Vec<&str> =
        [("/webhooks/github", webhooks.github.is_some()), ("/webhooks/gitlab", webhooks.gitlab.is_some())]
            .into_iter()
            .filter_map(|(path, on)| on.then_some(path))
            .collect();
    match forges.is_empty() {
        true => String::new(),
        false => format!(
            "\n  (receiving webhook deliveries at POST {}, authenticated by their signatures)",
            forges.join(" and ")
        ),
    }
}

/// What the arguments ask for, checked: the security, the editor's files and the
/// connection cap (the open-file limit raised first). It reads the disk.
fn set_up(args: &ServeArgs) -> Result<(Security, EditorSource, usize), String> {
    let security = security(args)?;
    let editor = match &args.editor_dir {
        None => EditorSource::embedded(),
        Some(dir) => EditorSource::directory(dir).map_err(|e| format!("--editor-dir: {e}"))?,
    };
    if let Some(notice) = editor.notice() {
        eprintln!("note: {notice}");
    }
    let files = raise_file_limit();
    let cap = connection_cap(args.max_connections, files, args.concurrency.nodes())?;
    if cap < usize::from(args.max_connections) {
        eprintln!(
            "note: serving at most {cap} connections at once, not {}: the open-file limit is {files}",
            args.max_connections
        );
    }
    Ok((security, editor, cap))
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
    Ok(Security { token, allowed_hosts, repo_roots, allowed_programs: args.allow_commands.clone() })
}

/// 32 random bytes from the operating system, as hex.
fn new_token() -> Result<String, String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| format!("cannot make a random token: {e}; set CONCLAVE_TOKEN"))?;
    Ok(hex::encode(bytes))
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
