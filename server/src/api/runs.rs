//! Runs over HTTP: start one (any input, or a review of a repository, possibly from a
//! node of an earlier run), list and get runs, cancel, and fetch a review's report.
//! A run's events stream from `events.rs`.

// utoipa's `IntoParams` expansion spells out paths that are already in scope.
#![allow(unused_qualifications)]

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use conclave_catalog::{CheckedConclave, LoadError, load_by_id};
use conclave_core::{Cancel, now_ms};
use conclave_engine::{Reuse, RunHandle, RunOptions, StartError, cancel_waiting};
use conclave_review::diff::{Change, ChangeError};
use conclave_review::dismissals::check_repository_key;
use conclave_review::incremental::{self, ScopeError, Since};
use conclave_review::pipeline::{self, AnalyzerSelection, PreparedReview, ReviewError, ReviewRequest};
use conclave_review::{ConclaveChoice, ReportFormat, ReviewPolicy};
use conclave_shared::Budget;
use conclave_shared::api::{ReviewTarget, StartRun, Started};
use conclave_shared::{RunRecord, RunStatus, RunSummary};
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;
use utoipa::IntoParams;

use super::blocking::blocking;
use super::error::parse_json;
use super::extract::{ApiPath, ApiQuery};
use super::{ApiError, AppState, LiveRun, body_bytes};
use crate::worker::JobSpec;

/// Paging of the run list.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// How many runs, newest first (default 50, at most 1000).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<u16>,
}

/// Which report.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ReportQuery {
    /// markdown (default), json, sarif or rdjsonl.
    #[param(pattern = "^(markdown|json|sarif|rdjsonl)$")]
    pub format: Option<String>,
}

/// Starts a run; returns at once. A review goes through the same pipeline as
/// `conclave review`, with the same provider choices and fallback. With `from_node`
/// and `reuse_run` it runs from a node: only that node and its descendants run, the
/// others keep their outputs from the earlier run, whose input (for a review, its
/// change) is used again unless `input` or `review` is given.
#[utoipa::path(post, path = "/api/runs", request_body = StartRun,
    responses((status = 202, body = Started), (status = 400, description = "Bad request"),
        (status = 404, description = "No such conclave, or no such run to reuse"),
        (status = 422, description = "The conclave, the review target or the run from a node is invalid")))]
pub async fn start(
    State(state): State<AppState>,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<Started>), ApiError> {
    let request: StartRun = parse_json(&body_bytes(body)?)?;
    let reuse = earlier_run(&state, &request).await?;
    let budget = checked_budget(request.budget)?;
    let stored_change = match (&request.review, &request.input, &reuse) {
        (None, None, Some(reuse)) => Change::from_run_input(&reuse.earlier.input),
        _ => None,
    };
    let (handle, notices, review) = match (request.review, stored_change) {
        (Some(target), _) => {
            let (handle, notices) =
                start_review(&state, request.conclave_id, Review::Target(target), (reuse, budget)).await?;
            (handle, notices, true)
        }
        (None, Some(change)) => {
            let (handle, notices) =
                start_review(&state, request.conclave_id, Review::Stored(change), (reuse, budget)).await?;
            (handle, notices, true)
        }
        (None, None) => {
            let input = request.input.or_else(|| reuse.as_ref().map(|r| r.earlier.input.clone()));
            let input = input.unwrap_or(Value::Null);
            (start_plain(&state, &request.conclave_id, input, (reuse, budget)).await?, vec![], false)
        }
    };
    let handle = match handle {
        Launched::Queued(run_id) => return Ok((StatusCode::ACCEPTED, Json(Started { run_id, notices }))),
        Launched::Started(handle) => handle,
    };
    let run_id = follow_live(&state, handle, review, notices.clone());
    Ok((StatusCode::ACCEPTED, Json(Started { run_id, notices })))
}

/// Follows a run this server runs until it ends: a live run meanwhile (streamed
/// from memory, cancelled at once), and a review's reports stored at its end (not
/// when it parks for an approval). Its id.
pub(crate) fn follow_live(state: &AppState, handle: RunHandle, review: bool, fell_back: Vec<String>) -> String {
    let run_id = handle.run_id().to_string();
    let live = LiveRun { cancel: handle.cancel_token(), bus: handle.bus() };
    state.live.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(run_id.clone(), live);
    let (store, registry, id) = (state.store().clone(), state.live.clone(), run_id.clone());
    tokio::spawn(async move {
        let outcome = handle.wait().await;
        if review && outcome.status.is_terminal() {
            let finished = pipeline::finish_against(store.as_ref(), &outcome.run_id, None, &fell_back);
            if let Err(e) = finished.await {
                tracing::error!(run_id = outcome.run_id, "could not store the review's reports: {e}");
            }
        }
        registry.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&id);
    });
    run_id
}

/// The earlier run `reuse_run` names, with the node `from_node` names; `None` when
/// the request names neither.
async fn earlier_run(state: &AppState, request: &StartRun) -> Result<Option<Reuse>, ApiError> {
    match (&request.from_node, &request.reuse_run) {
        (None, None) => Ok(None),
        (Some(_), None) => Err(invalid_field(
            "/reuse_run",
            "`from_node` needs `reuse_run`: the id of the earlier run whose other outputs are reused",
        )),
        (None, Some(_)) => Err(invalid_field("/from_node", "`reuse_run` needs `from_node`: the node to run from")),
        (Some(from_node), Some(run_id)) => {
            let earlier = state
                .store()
                .get_run(run_id)
                .await?
                .ok_or_else(|| ApiError::NotFound(format!("no run `{run_id}` to reuse")))?;
            Ok(Some(Reuse { from_node: from_node.clone(), earlier: Arc::new(earlier) }))
        }
    }
}

/// A run this server started, or one it put in the run queue for a worker.
pub(crate) enum Launched {
    /// Started here.
    Started(RunHandle),
    /// Queued, with its id.
    Queued(String),
}

/// Puts a run in the queue when this server has one (and the run is not from a node
/// of an earlier run, which this server runs itself), after planning it: a run that
/// cannot start is refused now, as a started one would be.
async fn launch(
    state: &AppState,
    conclave: CheckedConclave,
    input: Value,
    options: RunOptions,
    spec: JobSpec,
) -> Result<Launched, ApiError> {
    match &state.queue {
        Some(queue) if options.reuse.is_none() => {
            state.engine.plan_off_thread(&conclave, &options).await.map_err(start_error)?;
            let id = crate::worker::enqueue(queue.as_ref(), conclave.conclave(), input, &spec, options.budget).await?;
            state.queued.notify_one();
            Ok(Launched::Queued(id))
        }
        _ => Ok(Launched::Started(state.engine.start(conclave, input, options).await.map_err(start_error)?)),
    }
}

/// Starts (or queues) a plain run of a catalog conclave with an input.
pub(crate) async fn start_plain(
    state: &AppState,
    conclave_id: &str,
    input: Value,
    (reuse, budget): (Option<Reuse>, Option<Budget>),
) -> Result<Launched, ApiError> {
    let workspace = &state.workspace;
    let (id, dir, context) =
        (conclave_id.to_string(), workspace.catalog_dir.clone(), workspace.catalog_context().clone());
    let conclave = blocking(move || load_by_id(&id, &dir, &context)).await?.map_err(load_error)?;
    // A catalog file on disk runs its commands; saving one through the API is what
    // `--allow-commands` guards.
    let options = RunOptions {
        policy: Some(Arc::new(ReviewPolicy::default())),
        reuse,
        commands: Some(workspace.commands()),
        budget,
        ..RunOptions::default()
    };
    launch(state, conclave, input, options, JobSpec::Run).await
}

/// What a review run reviews: a target read from git now, or the change an earlier
/// review run reviewed (running from one of its nodes).
enum Review {
    Target(ReviewTarget),
    Stored(Change),
}

/// Prepares and starts a review through the review pipeline.
async fn start_review(
    state: &AppState,
    conclave_id: String,
    what: Review,
    (reuse, budget): (Option<Reuse>, Option<Budget>),
) -> Result<(Launched, Vec<String>), ApiError> {
    let (repository, target_path) = match &what {
        Review::Target(target) => (std::path::PathBuf::from(&target.repository), "/review/repository"),
        Review::Stored(change) => (change.root.clone(), "/reuse_run"),
    };
    check_repository(state, &repository).await?;
    let conclave = ConclaveChoice::Id(conclave_id.clone());
    let prepared = match what {
        Review::Target(target) => {
            let mut request = target_request(state, repository, conclave, &target)?;
            request.budget = budget;
            resolve_since(state, &mut request, target.since.as_deref()).await?;
            let prepared = pipeline::prepare(&request, state.workspace.catalog(), &state.workspace.providers).await;
            prepared.map(|mut review| {
                review.repository_key = target.repository_key;
                review
            })
        }
        Review::Stored(change) => {
            let workspace = &state.workspace;
            let mut request = base_request(state, repository, conclave);
            (request.base, request.budget) = (change.base.clone(), budget);
            let (dir, context, providers) =
                (workspace.catalog_dir.clone(), workspace.catalog_context().clone(), workspace.providers.clone());
            blocking(move || {
                let catalog = pipeline::Catalog { dir: &dir, context: &context };
                pipeline::prepare_change(change, &request, catalog, &providers)
            })
            .await?
        }
    };
    let review = prepared.map_err(|e| review_error(target_path, e))?;
    let launched = launch_review(state, &review, reuse).await?;
    Ok((launched, review.notices))
}

/// Refuses a repository outside this server's allowed roots, saying how to allow it:
/// the one rule for every review a server is asked for (`POST /api/runs`, `/mcp`).
pub(crate) async fn check_repository(state: &AppState, repository: &std::path::Path) -> Result<(), ApiError> {
    let (security, asked) = (state.security.clone(), repository.to_path_buf());
    if !blocking(move || security.allows_repository(&asked)).await? {
        return Err(ApiError::Forbidden(format!(
            "`{}` is not a repository under this server's allowed roots; start `conclave serve` with --repo-root for it",
            repository.display()
        )));
    }
    Ok(())
}

/// The review request of a target as a server takes it (`POST /api/runs`, `/mcp`):
/// the server's defaults with the target's choices over them.
pub(crate) fn target_request(
    state: &AppState,
    repository: std::path::PathBuf,
    conclave: ConclaveChoice,
    target: &ReviewTarget,
) -> Result<ReviewRequest, ApiError> {
    let mut request = base_request(state, repository, conclave);
    (request.base, request.provider, request.model) =
        (target.base.clone(), target.provider.clone(), target.model.clone());
    request.trust = target.trust.unwrap_or_default();
    request.fallback = !target.no_fallback;
    request.no_cache = target.no_cache;
    if target.full && target.since.is_some() {
        return Err(invalid_field(
            "/review/full",
            "`full` reviews the whole change and `since` only what is new since an earlier review: give one of them",
        ));
    }
    if let Some(Err(message)) = target.repository_key.as_deref().map(check_repository_key) {
        return Err(invalid_field("/review/repository_key", message));
    }
    request.max_parts = match target.max_parts {
        None => request.max_parts,
        Some(parts) if (1..=MAX_PARTS as u64).contains(&parts) => parts as usize,
        Some(_) => return Err(invalid_field("/review/max_parts", MAX_PARTS_MESSAGE)),
    };
    request.analyzers = match &target.analyzers {
        None => AnalyzerSelection::Default,
        Some(names) if names.is_empty() => AnalyzerSelection::None,
        Some(names) => AnalyzerSelection::Only(names.clone()),
    };
    Ok(request)
}

/// With `since`, scopes `request` to what is new since an earlier review of the
/// branch, as `--since` does (the worker that finishes the run carries the earlier
/// findings, from the scope the run input records).
pub(crate) async fn resolve_since(
    state: &AppState,
    request: &mut ReviewRequest,
    since: Option<&str>,
) -> Result<(), ApiError> {
    let Some(since) = since else { return Ok(()) };
    let resolved = incremental::resolve(
        state.store().as_ref(),
        &request.repository,
        request.base.as_deref(),
        &Since::parse(since),
    )
    .await;
    request.scope = Some(match resolved {
        Ok(resolution) => resolution.scope,
        Err(ScopeError::Store(e)) => return Err(e.into()),
        Err(ScopeError::Change(ChangeError::InvalidBase { base, reason })) if Some(&base) == request.base.as_ref() => {
            return Err(ApiError::bad_field("/review/base", ChangeError::InvalidBase { base, reason }.to_string()));
        }
        Err(e @ ScopeError::Report { .. }) => return Err(ApiError::Internal(e.to_string())),
        Err(e) => return Err(invalid_field("/review/since", e.to_string())),
    });
    Ok(())
}

/// A server's review request before the caller's choices: its workspace's settings.
fn base_request(state: &AppState, repository: std::path::PathBuf, conclave: ConclaveChoice) -> ReviewRequest {
    state.workspace.review_request(repository, conclave, state.engine.allows_unsandboxed())
}

/// Starts (or queues) a prepared review as this server does every review.
pub(crate) async fn launch_review(
    state: &AppState,
    review: &PreparedReview,
    reuse: Option<Reuse>,
) -> Result<Launched, ApiError> {
    let workspace = &state.workspace;
    let spec = JobSpec::Review {
        allow_paths: workspace.allow_paths.clone(),
        samples: 1,
        fell_back: review.notices.clone(),
        no_cache: review.no_cache,
    };
    let options = pipeline::run_options(review, reuse);
    launch(state, review.conclave.clone(), review.run_input(), options, spec).await
}

/// The API error of a review that could not be prepared; `repository` is where the
/// request named the repository.
fn review_error(repository: &str, error: ReviewError) -> ApiError {
    match error {
        ReviewError::Conclave(e) => load_error(e),
        e @ ReviewError::NothingToReview { .. } => ApiError::bad_field("/review", e.to_string()),
        e @ ReviewError::Change(ChangeError::InvalidBase { .. }) => ApiError::bad_field("/review/base", e.to_string()),
        e @ (ReviewError::Change(_) | ReviewError::Repository { .. } | ReviewError::Dismissals(_)) => {
            ApiError::bad_field(repository, e.to_string())
        }
        e @ ReviewError::UnknownProvider { .. } => ApiError::bad_field("/review/provider", e.to_string()),
        e @ ReviewError::UnknownAnalyzer(_) => ApiError::bad_field("/review/analyzers", e.to_string()),
        e @ ReviewError::Rules(_) => ApiError::bad_field("/review", e.to_string()),
        ReviewError::Start(e) => start_error(e),
        ReviewError::Store(e) => e.into(),
    }
}

/// The most parts a review may ask for: each is a call of every specialist.
const MAX_PARTS: usize = 64;
const MAX_PARTS_MESSAGE: &str = "max_parts is the most parts a large change is split into: give 1 to 64";

/// The request's budget, refused when a limit is negative.
fn checked_budget(budget: Option<Budget>) -> Result<Option<Budget>, ApiError> {
    if budget.and_then(|b| b.max_cost_usd).is_some_and(|usd| usd < 0.0) {
        return Err(ApiError::bad_field("/budget/max_cost_usd", "a budget is a positive amount of US dollars"));
    }
    Ok(budget.filter(|b| !b.is_unlimited()))
}

/// A 422 about one field of the request.
fn invalid_field(path: &str, message: impl Into<String>) -> ApiError {
    ApiError::Invalid { message: message.into(), path: Some(path.to_string()), diagnostics: Vec::new() }
}

fn load_error(error: LoadError) -> ApiError {
    match error {
        // The CLI's message, which lists the ids there are.
        e @ LoadError::NotFound { .. } => ApiError::NotFound(e.to_string()),
        LoadError::Invalid { file, diagnostics } => {
            ApiError::Invalid { message: format!("{file} has errors"), path: None, diagnostics }
        }
    }
}

pub(super) fn start_error(error: StartError) -> ApiError {
    match error {
        StartError::Store(e) => ApiError::Internal(e.to_string()),
        // A panicking policy or planning thread is Conclave's fault, not the request's.
        e @ (StartError::Policy(_) | StartError::Internal(_)) => ApiError::Internal(e.to_string()),
        e @ StartError::ReuseOtherConclave { .. } => invalid_field("/reuse_run", e.to_string()),
        e @ (StartError::UnknownFromNode { .. }
        | StartError::ReuseNotSucceeded { .. }
        | StartError::ReuseChanged { .. }) => invalid_field("/from_node", e.to_string()),
        other => ApiError::Invalid { message: other.to_string(), path: None, diagnostics: Vec::new() },
    }
}

/// Lists runs, newest first.
#[utoipa::path(get, path = "/api/runs", params(ListQuery), responses((status = 200, body = [RunSummary])))]
pub async fn list(
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> Result<Json<Vec<RunSummary>>, ApiError> {
    let limit = q.limit.unwrap_or(50);
    if !(1..=1000).contains(&limit) {
        return Err(ApiError::BadRequest { message: format!("limit must be 1 to 1000, not {limit}"), path: None });
    }
    Ok(Json(state.store().list_runs(usize::from(limit)).await?))
}

/// One run with its nodes.
#[utoipa::path(get, path = "/api/runs/{id}", params(("id" = String, Path, description = "Run id")),
    responses((status = 200, body = RunRecord), (status = 404, description = "No such run")))]
pub async fn get_one(State(state): State<AppState>, ApiPath(id): ApiPath<String>) -> Result<Json<RunRecord>, ApiError> {
    state.store().get_run(&id).await?.map(Json).ok_or_else(|| ApiError::NotFound(format!("no run `{id}`")))
}

/// Cancels a run this server is running.
#[utoipa::path(post, path = "/api/runs/{id}/cancel", params(("id" = String, Path, description = "Run id")),
    responses((status = 202, description = "Cancellation requested"), (status = 404, description = "No such run"), (status = 409, description = "Not running here")))]
pub async fn cancel(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    cancel_run(&state, &id).await?;
    Ok((StatusCode::ACCEPTED, Json(serde_json::json!({"run_id": id, "cancelled": true}))))
}

/// Cancels run `id` wherever it runs: this server's live run at once, a parked run
/// here, a queued run through the queue (its worker stops it at its next renewal).
/// The one cancel of every server interface (the API, `/mcp`'s tasks).
pub(crate) async fn cancel_run(state: &AppState, id: &str) -> Result<(), ApiError> {
    if let Some(live) = state.live_run(id) {
        live.cancel.cancel();
        return Ok(());
    }
    match state.store().get_run(id).await? {
        None => Err(ApiError::NotFound(format!("no run `{id}`"))),
        Some(run) if run.summary.status.is_terminal() => {
            Err(ApiError::Conflict(format!("run `{id}` already ended ({})", run.summary.status.as_str())))
        }
        // Parked for a decision, no process holds it: this one ends it.
        Some(run) if run.summary.status == RunStatus::Waiting => {
            if cancel_waiting(state.store().as_ref(), id).await? {
                Ok(())
            } else {
                Err(ApiError::Conflict(format!("run `{id}` is no longer waiting")))
            }
        }
        // A run of the queue: its worker, wherever it runs, stops it at its next renewal.
        Some(_) if let Some(queue) = &state.queue => match queue.request_cancel(id, now_ms()).await? {
            Cancel::Dequeued | Cancel::Requested => Ok(()),
            Cancel::AlreadyEnded => Err(ApiError::Conflict(format!("run `{id}` already ended"))),
        },
        Some(_) => Err(ApiError::Conflict(format!("run `{id}` is running in another process; cancel it there"))),
    }
}

/// A review run's report.
#[utoipa::path(get, path = "/api/runs/{id}/report", params(("id" = String, Path, description = "Run id"), ReportQuery),
    responses((status = 200, description = "The report in the asked format"), (status = 400, description = "Unknown format"), (status = 404, description = "No such run or report")))]
pub async fn report(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<ReportQuery>,
) -> Result<Response, ApiError> {
    let name = q.format.as_deref().unwrap_or("markdown");
    let format: ReportFormat = name.parse().map_err(|message: String| ApiError::bad_field("/format", message))?;
    let text = state.store().get_report(&id, format.as_str()).await?.ok_or_else(|| {
        ApiError::NotFound(format!("run `{id}` has no {name} report (reports exist for finished review runs)"))
    })?;
    Ok(([(header::CONTENT_TYPE, format.content_type())], text).into_response())
}
