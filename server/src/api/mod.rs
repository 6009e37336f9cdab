//! The HTTP API and the editor's static files, served by `conclave serve`.
//!
//! Layout: `conclaves.rs` (catalog CRUD and validation, over `conclave_files.rs`,
//! `catalog_listing.rs` and `checking.rs`, run by `blocking.rs`), `runs.rs` (start, list, get,
//! events over SSE, cancel, reports), `schemas.rs` (references, lowering previews,
//! providers), `openapi.rs` (the generated API document), `error.rs` (one error type),
//! `editor.rs` (the editor's files, built into the binary), `guard.rs` (who may ask),
//! `metrics.rs` (`GET /metrics` for Prometheus, and the count of requests).
//!
//! **Invariant:** the API knows the engine, store and catalog through their public
//! functions only; tests call [`app`] without a socket.

pub mod blocking;
pub mod catalog_listing;
pub mod checking;
pub mod conclave_files;
pub mod conclaves;
pub mod editor;
pub mod error;
pub mod events;
pub mod extract;
pub mod guard;
pub mod metrics;
pub mod openapi;
pub mod precondition;
pub mod runs;
pub mod schemas;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use conclave_core::{RunQueue, RunStore};
use conclave_engine::Engine;
use metrics_exporter_prometheus::PrometheusHandle;
use std::sync::Arc;
use tower::Layer;

pub use editor::EditorSource;
pub use error::ApiError;
pub use guard::{Guard, GuardLayer, Security};

use crate::workspace::Workspace;
use catalog_listing::Listing;
use conclave_files::ConclaveFiles;

/// Largest request body accepted.
pub const BODY_LIMIT: usize = 2 * 1024 * 1024;

pub use crate::worker::{LiveRun, LiveRuns};

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
        }
    }

    /// The same state, with the store's run queue.
    pub fn with_queue(self, queue: Arc<dyn RunQueue>) -> AppState {
        AppState { queue: Some(queue), ..self }
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

/// The whole application: API routes under `/api`, `/metrics`, the editor everywhere
/// else, all behind the guard.
pub fn app(state: AppState) -> App {
    GuardLayer::new(state.security.clone()).layer(routes(&state).with_state(state))
}

/// What [`app`] returns: the router behind the guard, a tower service.
pub type App = Guard<Router>;

/// The routes without the guard: for measuring what the guard costs, never served.
pub fn unguarded(state: AppState) -> Router {
    routes(&state).with_state(state)
}

fn routes(state: &AppState) -> Router<AppState> {
    let api = Router::new()
        .route("/conclaves", get(conclaves::list).post(conclaves::create))
        .route("/conclaves/{id}", get(conclaves::get_one).put(conclaves::update).delete(conclaves::remove))
        .route("/validate", post(conclaves::validate))
        .route("/schemas", get(schemas::list))
        .route("/schemas/{reference}", get(schemas::get_one))
        .route("/lower", post(schemas::lower_schema))
        .route("/lower/preview", post(schemas::preview))
        .route("/providers", get(schemas::providers))
        .route("/providers/{name}/probe", post(schemas::probe))
        .route("/runs", get(runs::list).post(runs::start))
        .route("/runs/{id}", get(runs::get_one))
        .route("/runs/{id}/events", get(events::events))
        .route("/runs/{id}/cancel", post(runs::cancel))
        .route("/runs/{id}/report", get(runs::report))
        .route("/openapi.json", get(openapi::document))
        .fallback(|| async { ApiError::NotFound("no such API route; GET /api/openapi.json lists them".into()) })
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        .layer(DefaultBodyLimit::max(BODY_LIMIT));
    Router::new()
        .route("/metrics", get(metrics::scrape))
        .nest("/api", api)
        .merge(editor::routes(&state.editor))
        .layer(axum::middleware::from_fn(metrics::count_requests))
}

/// The body of a request, with a too-large body reported as a JSON 413.
pub fn body_bytes(
    body: Result<axum::body::Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<axum::body::Bytes, ApiError> {
    body.map_err(|e| match e.status() {
        axum::http::StatusCode::PAYLOAD_TOO_LARGE => ApiError::TooLarge(BODY_LIMIT),
        _ => ApiError::BadRequest { message: e.body_text(), path: None },
    })
}
