//! The HTTP API and the editor's static files, served by `conclave serve`.
//!
//! Layout: `conclaves.rs` (catalog CRUD and validation, over `conclave_files.rs`,
//! `catalog_listing.rs` and `checking.rs`, run by `blocking.rs`), `runs.rs` (start, list, get,
//! events over SSE, cancel, reports), `evals.rs` (kept evals: the list, one eval),
//! `schemas.rs` (references, lowering previews, providers), `mcp.rs` (an MCP server's
//! tools, for the editor's palette), `openapi.rs` (the
//! generated API document), `error.rs` (one error type),
//! `editor.rs` (the editor's files, built into the binary, in the coding `encoding.rs`
//! chooses), `guard.rs` (who may ask),
//! `metrics.rs` (`GET /metrics` for Prometheus, and the count of requests); `/mcp` is
//! the MCP server of `crate::mcp`, behind the same guard; `webhooks/` (deliveries
//! from GitHub and GitLab, authenticated by their signatures instead of the token).
//!
//! **Invariant:** the API knows the engine, store and catalog through their public
//! functions only; tests call [`app`] without a socket.

pub mod approvals;
pub mod blocking;
pub mod catalog_listing;
pub mod checking;
pub mod conclave_files;
pub mod conclaves;
pub mod editor;
pub mod encoding;
pub mod error;
pub mod evals;
pub mod events;
pub mod extract;
pub mod guard;
pub mod mcp;
pub mod metrics;
pub mod openapi;
pub mod precondition;
pub mod runs;
pub mod schemas;
pub mod state;
pub mod webhooks;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use tower::Layer;

pub use editor::EditorSource;
pub use error::ApiError;
pub use extract::{BODY_LIMIT, body_bytes};
pub use guard::{Guard, GuardLayer, Security};
pub use state::AppState;

pub use crate::worker::{LiveRun, LiveRuns};

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
        .route("/runs/{id}/nodes/{node}/approval", post(approvals::decide_approval))
        .route("/runs/{id}/report", get(runs::report))
        .route("/mcp/tools", post(mcp::list_tools))
        .route("/evals", get(evals::list))
        .route("/evals/{id}", get(evals::get_one))
        .route("/openapi.json", get(openapi::document))
        .fallback(|| async { ApiError::NotFound("no such API route; GET /api/openapi.json lists them".into()) })
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        .layer(DefaultBodyLimit::max(BODY_LIMIT));
    Router::new()
        .route("/metrics", get(metrics::scrape))
        // MCP over Streamable HTTP, stateless, behind the same guard as the API.
        .route_service("/mcp", crate::mcp::http_service(state.clone()))
        .nest("/api", api)
        .merge(webhooks::routes(&state.webhooks))
        .merge(editor::routes(&state.editor))
        .layer(axum::middleware::from_fn(metrics::count_requests))
}
