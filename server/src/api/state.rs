//! What the API serves from: the workspace, the engine every run goes through, the
//! live runs, the admission rules, the editor's files, the metrics and the run queue.

use conclave_core::{RunQueue, RunStore};
use conclave_engine::Engine;
use metrics_exporter_prometheus::PrometheusHandle;
use std::sync::Arc;

use super::catalog_listing::Listing;
use super::conclave_files::ConclaveFiles;
use super::editor::EditorSource;
use super::guard::Security;
use super::webhooks::settings::Webhooks;
use crate::worker::{LiveRun, LiveRuns};
use crate::workspace::Workspace;

/// What the API serves from.
#[derive(Debug, Clone)]
pub struct AppState {
    /// Where conclaves and schemas are, and the providers.
    pub workspace: Arc<Workspace>,
    /// The engine every run started here goes through, so its limits hold across them.
    pub engine: Engine,
    /// Runs started by this server (or its embedded worker) that have not finished.
    pub live: LiveRuns,
    /// How requests are admitted: token, hosts, repository roots.
    pub security: Arc<Security>,
    /// Where the editor's files come from.
    pub editor: EditorSource,
    /// What `GET /metrics` renders; `None` when this server records no metrics.
    pub metrics: Option<PrometheusHandle>,
    /// The run queue of the store, when the server has one: a cancel of a run another
    /// process runs goes through it.
    pub queue: Option<Arc<dyn RunQueue>>,
    /// The catalog's conclave files, read and written with their ETags.
    pub files: Arc<ConclaveFiles>,
    /// The catalog listing's summaries, kept while their files are unchanged.
    pub listing: Arc<Listing>,
    /// Which forges' webhooks this server receives.
    pub webhooks: Arc<Webhooks>,
    /// Told each time this server queues a run, so its embedded worker claims it at
    /// once instead of at its next look at the queue.
    pub queued: Arc<tokio::sync::Notify>,
}

impl AppState {
    /// The state of a server over `workspace` and `engine`.
    pub fn new(workspace: Workspace, engine: Engine, security: Security, editor: EditorSource) -> AppState {
        AppState {
            files: Arc::new(ConclaveFiles::new(workspace.catalog_dir.clone())),
            listing: Arc::default(),
            workspace: Arc::new(workspace),
            engine,
            live: Default::default(),
            security: Arc::new(security),
            editor,
            metrics: None,
            queue: None,
            webhooks: Arc::default(),
            queued: Arc::default(),
        }
    }

    /// The same state, with the store's run queue.
    pub fn with_queue(self, queue: Arc<dyn RunQueue>) -> AppState {
        AppState { queue: Some(queue), ..self }
    }

    /// The same state, receiving the webhooks `webhooks` turns on.
    pub fn with_webhooks(self, webhooks: Webhooks) -> AppState {
        AppState { webhooks: Arc::new(webhooks), ..self }
    }

    /// The same state, rendering `handle` at `GET /metrics`.
    pub fn with_metrics(self, handle: PrometheusHandle) -> AppState {
        AppState { metrics: Some(handle), ..self }
    }

    /// Where runs are kept.
    pub fn store(&self) -> &Arc<dyn RunStore> {
        self.engine.store()
    }

    /// The live run with this id, if this server is running it.
    pub fn live_run(&self, id: &str) -> Option<LiveRun> {
        self.live.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(id).cloned()
    }
}
