//! The workspace a `conclave` process works in: where conclave files and schemas are
//! found, the providers it can run and what conclaves are checked against. Also the
//! engine settings read from the environment and opening the run store, which the
//! CLI and `conclave serve` share.

use conclave_catalog::CatalogContext;
use conclave_core::{BUILTIN_TOOLS, PriceTable, ProviderRegistry, RunQueue, StoreError, now_ms, owner_alive};
use conclave_engine::{Commands, EngineConfig, FleetLimits};
use conclave_review::Catalog;
use conclave_schema::SchemaCatalog;
use conclave_shared::LowerTarget;
use conclave_store::{PostgresStore, SqliteStore};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where conclaves and schemas are found, and what can run them.
#[derive(Debug, Clone)]
pub struct Workspace {
    /// The directory holding `*.conclave.json` files.
    pub catalog_dir: PathBuf,
    /// Schema search roots.
    pub schemas: SchemaCatalog,
    /// Providers available to runs.
    pub providers: ProviderRegistry,
    /// Globs of files the review tools may read although `.git/` or `.gitignore`
    /// hide them (`CONCLAVE_ALLOW_PATHS`, comma-separated).
    pub allow_paths: Vec<String>,
    /// The most diff text a review sends to providers (`CONCLAVE_MAX_DIFF_BYTES`).
    pub max_diff_bytes: usize,
    context: CatalogContext,
}

impl Workspace {
    /// The workspace rooted at the current directory.
    pub fn current(providers: ProviderRegistry) -> Workspace {
        // Relative paths keep messages short and identical wherever the repo lives.
        Workspace::new(PathBuf::from("conclaves"), SchemaCatalog::for_workspace(Path::new("")), providers)
    }

    /// A workspace with its catalog in `catalog_dir`.
    pub fn new(catalog_dir: PathBuf, schemas: SchemaCatalog, providers: ProviderRegistry) -> Workspace {
        let context = CatalogContext {
            schemas: schemas.clone(),
            providers: providers.known_names(),
            tools: BUILTIN_TOOLS.iter().map(|t| t.to_string()).collect(),
            programs: None,
            catalog: Some(catalog_dir.clone()),
        };
        let allow_paths = std::env::var("CONCLAVE_ALLOW_PATHS")
            .map(|v| v.split(',').map(str::trim).filter(|g| !g.is_empty()).map(str::to_string).collect())
            .unwrap_or_default();
        let max_diff_bytes = std::env::var("CONCLAVE_MAX_DIFF_BYTES")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(conclave_review::diff::DEFAULT_MAX_DIFF_BYTES);
        Workspace { catalog_dir, schemas, providers, allow_paths, max_diff_bytes, context }
    }

    /// What the command nodes of the workspace's own conclave files may run: any
    /// program (the files are the user's own), in the workspace's directory.
    pub fn commands(&self) -> Arc<Commands> {
        let root = self.catalog_dir.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        Arc::new(Commands::any(Some(root.to_path_buf())))
    }

    /// What conclaves are checked against.
    pub fn catalog_context(&self) -> &CatalogContext {
        &self.context
    }

    /// A review request a server makes (the API, MCP, a webhook's review) before the
    /// caller's choices: this workspace's settings, the local-model fallback on,
    /// configuration from the base, no rules files beyond the repository's (a path on
    /// the server's disk is not a caller's to name), and analyzer lanes unconfined
    /// only where `allow_unsandboxed`.
    pub fn review_request(
        &self,
        repository: PathBuf,
        conclave: conclave_review::ConclaveChoice,
        allow_unsandboxed: bool,
    ) -> conclave_review::ReviewRequest {
        conclave_review::ReviewRequest {
            repository,
            base: None,
            conclave,
            provider: None,
            model: None,
            fallback: true,
            allow_paths: self.allow_paths.clone(),
            max_diff_bytes: self.max_diff_bytes,
            max_parts: conclave_review::diff::DEFAULT_MAX_PARTS,
            samples: 1,
            no_cache: false,
            budget: None,
            analyzers: Default::default(),
            scope: None,
            rules: Vec::new(),
            trust: Default::default(),
            allow_unsandboxed,
        }
    }

    /// The catalog, as the review pipeline takes it.
    pub fn catalog(&self) -> Catalog<'_> {
        Catalog { dir: &self.catalog_dir, context: &self.context }
    }

    /// The lowering `provider`'s native structured output takes: what a registered
    /// provider's capabilities say, else what the built-in provider of that name
    /// takes (one this build leaves out); `None` for a provider without native
    /// structured output (it gets the prompt contract).
    pub fn native_schema(&self, provider: &str) -> Option<LowerTarget> {
        match self.providers.get(provider) {
            Some(registered) => registered.capabilities().native_schema,
            None => conclave_providers::dialect::native_target(provider),
        }
    }
}

/// Engine settings from the environment, with this concurrency, and the provider
/// limits of `CONCLAVE_PROVIDER_LIMITS` and providers' "retry after" held across
/// every process on `queue`'s database too.
pub async fn engine_config_on(max_concurrency: usize, queue: &Arc<dyn RunQueue>) -> EngineConfig {
    let mut config = engine_config(max_concurrency).await;
    // Always on: a provider's "retry after" pauses every process on the database.
    config.fleet = Some(FleetLimits { slots: queue.clone(), providers: provider_limits(), lease: FLEET_LEASE });
    config
}

/// How long a provider slot holds without renewal, should its process die.
const FLEET_LEASE: std::time::Duration = std::time::Duration::from_secs(30);

/// `CONCLAVE_PROVIDER_LIMITS`: `name=N` pairs, comma-separated (`anthropic=4,openai=8`);
/// malformed pairs are skipped with a warning.
fn provider_limits() -> HashMap<String, u32> {
    let Ok(text) = std::env::var("CONCLAVE_PROVIDER_LIMITS") else { return HashMap::new() };
    let mut limits = HashMap::new();
    for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match pair.split_once('=').map(|(name, n)| (name.trim(), n.trim().parse::<u32>())) {
            Some((name, Ok(n))) if !name.is_empty() && n > 0 => {
                limits.insert(name.to_string(), n);
            }
            _ => eprintln!("warning: CONCLAVE_PROVIDER_LIMITS: `{pair}` is not `provider=N` with N above 0; ignored"),
        }
    }
    limits
}

/// Engine settings from the environment, with this concurrency. The user's price
/// table is read on a blocking thread.
pub async fn engine_config(max_concurrency: usize) -> EngineConfig {
    let mut config = EngineConfig { max_concurrency: max_concurrency.max(1), ..EngineConfig::default() };
    // Sibling agents reach the local provider together: it decodes them as sequences of
    // one context on one worker thread (their shared prompt prefix read once), so the
    // CPU is never split between generations and more at once only fill the batch.
    config.provider_limits.insert("local".into(), 4);
    for (name, n) in provider_limits() {
        config.provider_limits.insert(name, n as usize);
    }
    if let Some(retries) = std::env::var("CONCLAVE_PROVIDER_RETRIES").ok().and_then(|v| v.trim().parse().ok()) {
        config.retry.max_retries = retries;
    }
    let prices = tokio::task::spawn_blocking(|| PriceTable::load(conclave_schema::refs::user_config_dir().as_deref()));
    config.prices = Arc::new(prices.await.unwrap_or_else(|_| PriceTable::builtin()));
    config.capture_message_content = crate::observe::otel::capture_content_from_env();
    config
}

/// Opens the run store `--db` names, a SQLite file or a PostgreSQL URL (see
/// [`postgres_url`]), with its run queue, and marks runs whose process died as
/// interrupted (runs of the queue are left to their lease).
pub async fn open_store(db: &Path) -> Result<Arc<dyn RunQueue>, StoreError> {
    let stopped = |e: tokio::task::JoinError| StoreError::Backend(format!("opening the run store stopped: {e}"));
    let store: Arc<dyn RunQueue> = match postgres_url(db) {
        Some(url) => Arc::new(PostgresStore::connect(url).await?),
        // Creating the file's directory and migrating it block.
        None => {
            let path = db.to_path_buf();
            Arc::new(tokio::task::spawn_blocking(move || SqliteStore::open(&path)).await.map_err(stopped)??)
        }
    };
    // Whether each owner lives is read from the process table: the whole check runs
    // on a blocking thread, awaiting the store from there.
    let (marking, runtime) = (store.clone(), tokio::runtime::Handle::current());
    let marked =
        tokio::task::spawn_blocking(move || runtime.block_on(marking.mark_interrupted(&owner_alive, now_ms()))).await;
    if let Err(e) = marked.map_err(stopped).and_then(|marked| marked) {
        eprintln!("warning: could not check for interrupted runs: {e}");
    }
    Ok(store)
}

/// The PostgreSQL URL in `db` when it is one (`postgres://` or `postgresql://`);
/// anything else is a SQLite file.
pub fn postgres_url(db: &Path) -> Option<&str> {
    db.to_str().filter(|text| ["postgres://", "postgresql://"].iter().any(|scheme| text.starts_with(scheme)))
}
