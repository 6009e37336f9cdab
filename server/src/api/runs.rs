//! Runs over HTTP: start one (any input, or a review of a repository), list and get
//! runs, stream a run's events as Server-Sent Events (resumable with `Last-Event-ID`),
//! cancel, and fetch a review's report.

// utoipa's `IntoParams` expansion spells out paths that are already in scope.
#![allow(unused_qualifications)]

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use conclave_shared::{EventKind, RunEvent, RunRecord, RunSummary};
use futures::Stream;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{broadcast, mpsc};
use utoipa::{IntoParams, ToSchema};

use super::error::parse_json;
use super::{ApiError, AppState, LiveRun, body_bytes};
use crate::catalog::{LoadError, load_conclave};
use crate::engine::{Engine, EngineError};
use crate::review::diff::collect_change;
use crate::review::report::{ReportFormat, build_report};
use crate::tools::RepoTools;

/// How often a run owned by another process is polled for new events.
const POLL: Duration = Duration::from_millis(400);

/// What to run.
#[derive(Debug, Deserialize, ToSchema)]
pub struct StartRun {
    /// The conclave's id in the catalog.
    pub conclave_id: String,
    /// The run input (any JSON), for plain runs.
    #[schema(value_type = Object)]
    pub input: Option<Value>,
    /// For a review: the repository and base ref; the change becomes the input.
    pub review: Option<ReviewTarget>,
}

/// The change to review.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ReviewTarget {
    /// A path to a git repository on the server's machine.
    pub repository: String,
    /// Review `BASE...HEAD`; without it, the working tree against HEAD.
    pub base: Option<String>,
}

/// A started run.
#[derive(Debug, Serialize, ToSchema)]
pub struct Started {
    /// Its id; follow it at `/api/runs/{id}/events`.
    pub run_id: String,
}

/// Paging of the run list.
#[derive(Debug, Deserialize, IntoParams)]
pub struct ListQuery {
    /// How many runs, newest first (default 50).
    pub limit: Option<usize>,
}

/// Where to resume an event stream.
#[derive(Debug, Deserialize, IntoParams)]
pub struct EventsQuery {
    /// Only events after this sequence number (the `Last-Event-ID` header wins).
    pub after: Option<u64>,
}

/// Which report.
#[derive(Debug, Deserialize, IntoParams)]
pub struct ReportQuery {
    /// markdown (default), json, sarif or rdjsonl.
    pub format: Option<String>,
}

/// Starts a run; returns at once.
#[utoipa::path(post, path = "/api/runs", request_body = StartRun,
    responses((status = 202, body = Started), (status = 400, description = "Bad request"), (status = 404, description = "No such conclave"), (status = 422, description = "The conclave or the review target is invalid")))]
pub async fn start(
    State(state): State<AppState>,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<Started>), ApiError> {
    let request: StartRun = parse_json(&body_bytes(body)?)?;
    let ctx = crate::cli::catalog_context(&state.schemas, &state.providers);
    let conclave = match load_conclave(&request.conclave_id, &state.catalog_dir, &ctx) {
        Ok((conclave, _)) => conclave,
        Err(LoadError::NotFound { .. }) => {
            return Err(ApiError::NotFound(format!("no conclave `{}`", request.conclave_id)));
        }
        Err(LoadError::Invalid { file, diagnostics }) => {
            return Err(ApiError::Invalid { message: format!("{file} has errors"), path: None, diagnostics });
        }
    };
    let mut config = state.engine.clone();
    let (input, review) =
        match request.review {
            Some(target) => {
                let (repository, base) = (target.repository.clone(), target.base.clone());
                let change = tokio::task::spawn_blocking(move || {
                    collect_change(std::path::Path::new(&repository), base.as_deref())
                })
                .await
                .map_err(|e| ApiError::Internal(e.to_string()))?
                .map_err(|e| ApiError::bad_field("/review/repository", e.to_string()))?
                .ok_or_else(|| {
                    ApiError::bad_field("/review", format!("nothing to review: no changes in {}", target.repository))
                })?;
                let tools = RepoTools::new(&change.root)
                    .map_err(|e| ApiError::bad_field("/review/repository", e.to_string()))?;
                config.tools = Some(Arc::new(tools));
                config.changed_files = Some(change.paths());
                (change.run_input(), true)
            }
            None => (request.input.unwrap_or(Value::Null), false),
        };
    let engine = Engine::new(state.providers.clone(), state.store.clone(), state.schemas.clone(), config);
    let handle = engine.start(conclave, input).await.map_err(|e| match e {
        EngineError::Store(e) => ApiError::Internal(e.to_string()),
        other => ApiError::Invalid { message: other.to_string(), path: None, diagnostics: Vec::new() },
    })?;
    let run_id = handle.run_id().to_string();
    let live = LiveRun { cancel: handle.cancel_token(), bus: handle.bus() };
    state.live.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(run_id.clone(), live);
    let (store, registry, id) = (state.store.clone(), state.live.clone(), run_id.clone());
    tokio::spawn(async move {
        let outcome = handle.wait().await;
        if review {
            store_reports(store.as_ref(), &outcome.run_id).await;
        }
        registry.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&id);
    });
    Ok((StatusCode::ACCEPTED, Json(Started { run_id })))
}

async fn store_reports(store: &dyn crate::store::RunStore, run_id: &str) {
    let (Ok(Some(record)), Ok(events)) = (store.get_run(run_id).await, store.events(run_id, 0).await) else { return };
    let report = build_report(&record, &events);
    for format in ReportFormat::ALL {
        if let Err(e) = store.put_report(run_id, format.as_str(), &report.render(format)).await {
            tracing::error!(run_id, "could not store the {} report: {e}", format.as_str());
        }
    }
}

/// Lists runs, newest first.
#[utoipa::path(get, path = "/api/runs", params(ListQuery), responses((status = 200, body = [RunSummary])))]
pub async fn list(
    State(state): State<AppState>,
    Query(q): Query<ListQuery>,
) -> Result<Json<Vec<RunSummary>>, ApiError> {
    Ok(Json(state.store.list_runs(q.limit.unwrap_or(50).min(1000)).await?))
}

/// One run with its nodes.
#[utoipa::path(get, path = "/api/runs/{id}", params(("id" = String, Path, description = "Run id")),
    responses((status = 200, body = RunRecord), (status = 404, description = "No such run")))]
pub async fn get_one(State(state): State<AppState>, Path(id): Path<String>) -> Result<Json<RunRecord>, ApiError> {
    state.store.get_run(&id).await?.map(Json).ok_or_else(|| ApiError::NotFound(format!("no run `{id}`")))
}

/// Streams a run's events: stored ones first, then live ones, ending after
/// `run_finished`. Each SSE event has the sequence number as its id and the event
/// type as its name, so a client resumes with `Last-Event-ID`.
#[utoipa::path(get, path = "/api/runs/{id}/events", params(("id" = String, Path, description = "Run id"), EventsQuery),
    responses((status = 200, description = "text/event-stream of run events"), (status = 404, description = "No such run")))]
pub async fn events(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Query(q): Query<EventsQuery>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    if state.store.get_run(&id).await?.is_none() {
        return Err(ApiError::NotFound(format!("no run `{id}`")));
    }
    let resume = headers.get("last-event-id").and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse().ok());
    let after = resume.or(q.after).unwrap_or(0);
    let (tx, rx) = mpsc::channel::<RunEvent>(256);
    tokio::spawn(forward(state, id, after, tx));
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        let event = rx.recv().await?;
        let sse = Event::default()
            .id(event.seq.to_string())
            .event(event.kind.type_name())
            .data(serde_json::to_string(&event).unwrap_or_default());
        Some((Ok(sse), rx))
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// Sends a run's events after `last` to `tx` until the run finishes or the client
/// goes away: live from this server's bus when it runs the run, else from the store.
async fn forward(state: AppState, id: String, mut last: u64, tx: mpsc::Sender<RunEvent>) {
    // Subscribe before reading the store, so nothing falls between the two.
    let mut live: Option<broadcast::Receiver<RunEvent>> = state.live_run(&id).map(|l| l.bus.subscribe());
    loop {
        let Ok(stored) = state.store.events(&id, last).await else { return };
        for event in stored {
            last = event.seq;
            let done = matches!(event.kind, EventKind::RunFinished { .. });
            if tx.send(event).await.is_err() || done {
                return;
            }
        }
        match live.as_mut() {
            Some(rx) => loop {
                match rx.recv().await {
                    Ok(event) if event.seq <= last => continue,
                    Ok(event) => {
                        last = event.seq;
                        let done = matches!(event.kind, EventKind::RunFinished { .. });
                        if tx.send(event).await.is_err() || done {
                            return;
                        }
                    }
                    // Too slow for the live feed, or the run ended: catch up from the store.
                    Err(broadcast::error::RecvError::Lagged(_)) => break,
                    Err(broadcast::error::RecvError::Closed) => {
                        live = None;
                        break;
                    }
                }
            },
            None => {
                let finished =
                    state.store.get_run(&id).await.ok().flatten().is_none_or(|r| r.summary.status.is_terminal());
                if finished && state.store.events(&id, last).await.map_or(true, |e| e.is_empty()) {
                    return;
                }
                if tx.is_closed() {
                    return;
                }
                tokio::time::sleep(POLL).await;
            }
        }
    }
}

/// Cancels a run this server is running.
#[utoipa::path(post, path = "/api/runs/{id}/cancel", params(("id" = String, Path, description = "Run id")),
    responses((status = 202, description = "Cancellation requested"), (status = 404, description = "No such run"), (status = 409, description = "Not running here")))]
pub async fn cancel(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    if let Some(live) = state.live_run(&id) {
        live.cancel.cancel();
        return Ok((StatusCode::ACCEPTED, Json(serde_json::json!({"run_id": id, "cancelled": true}))));
    }
    match state.store.get_run(&id).await? {
        None => Err(ApiError::NotFound(format!("no run `{id}`"))),
        Some(run) if run.summary.status.is_terminal() => {
            Err(ApiError::Conflict(format!("run `{id}` already ended ({})", run.summary.status.as_str())))
        }
        Some(_) => Err(ApiError::Conflict(format!("run `{id}` is running in another process; cancel it there"))),
    }
}

/// A review run's report.
#[utoipa::path(get, path = "/api/runs/{id}/report", params(("id" = String, Path, description = "Run id"), ReportQuery),
    responses((status = 200, description = "The report in the asked format"), (status = 400, description = "Unknown format"), (status = 404, description = "No such run or report")))]
pub async fn report(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<ReportQuery>,
) -> Result<Response, ApiError> {
    let name = q.format.as_deref().unwrap_or("markdown");
    let format = ReportFormat::ALL.into_iter().find(|f| f.as_str() == name).ok_or_else(|| {
        ApiError::bad_field("/format", format!("unknown report format `{name}`; use markdown, json, sarif or rdjsonl"))
    })?;
    let text = state.store.get_report(&id, format.as_str()).await?.ok_or_else(|| {
        ApiError::NotFound(format!("run `{id}` has no {name} report (reports exist for finished review runs)"))
    })?;
    let content_type = match format {
        ReportFormat::Markdown => "text/markdown; charset=utf-8",
        ReportFormat::Json => "application/json",
        ReportFormat::Sarif => "application/sarif+json",
        ReportFormat::Rdjsonl => "application/x-ndjson",
    };
    Ok(([(header::CONTENT_TYPE, content_type)], text).into_response())
}
