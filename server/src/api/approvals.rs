//! `POST /api/runs/{id}/nodes/{node}/approval`: a person's decision at a waiting
//! approval node, recorded as an event; the server then takes the run up again
//! itself, as a live run, past the approval or to its clean stop. And the server's
//! sweep of approvals whose time to decide ran out (`expire_approvals`).

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use conclave_engine::{Decision, DecisionError, decide};
use conclave_review::diff::Change;
use conclave_shared::api::{ApprovalDecision, Started};
use conclave_shared::{EventKind, RunStatus};

use super::blocking::blocking;
use super::error::parse_json;
use super::extract::ApiPath;
use super::runs::{follow_live, start_error};
use super::{ApiError, AppState, body_bytes};
use crate::worker::{JobSpec, prepare_job};

/// Decides at a waiting approval node and goes on with the run.
#[utoipa::path(post, path = "/api/runs/{id}/nodes/{node}/approval", request_body = ApprovalDecision,
    params(("id" = String, Path, description = "Run id"), ("node" = String, Path, description = "The approval node")),
    responses((status = 202, body = Started, description = "Decided; the run goes on"),
        (status = 400, description = "Bad JSON"), (status = 404, description = "No such run"),
        (status = 409, description = "The node is not waiting, or someone decided first")))]
pub async fn decide_approval(
    State(state): State<AppState>,
    ApiPath((run_id, node_id)): ApiPath<(String, String)>,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<Started>), ApiError> {
    let request: ApprovalDecision = parse_json(&body_bytes(body)?)?;
    let by = request.by.filter(|b| !b.trim().is_empty()).unwrap_or_else(|| "api".into());
    let decision = Decision { approved: request.approve, by, comment: request.comment };
    Ok((StatusCode::ACCEPTED, Json(decide_and_go_on(&state, &run_id, &node_id, decision).await?)))
}

/// Records `decision` at the waiting approval node and takes the run up again in
/// this server: the one path of a decision through a server (the API, `/mcp`). A
/// decision that came after the node's deadline is a notice (the wait ended rejected).
pub(crate) async fn decide_and_go_on(
    state: &AppState,
    run_id: &str,
    node_id: &str,
    decision: Decision,
) -> Result<Started, ApiError> {
    let mut notices = Vec::new();
    match decide(state.store().as_ref(), run_id, node_id, decision).await {
        Ok(()) => {}
        Err(e @ DecisionError::Expired { .. }) => notices.push(e.to_string()),
        Err(e @ DecisionError::UnknownRun(_)) => return Err(ApiError::NotFound(e.to_string())),
        Err(DecisionError::Store(e)) => return Err(e.into()),
        Err(e) => return Err(ApiError::Conflict(e.to_string())),
    }
    let run_id = go_on(state, run_id).await?;
    Ok(Started { run_id, notices })
}

/// Takes a decided run up again in this server, as a live run; its id.
async fn go_on(state: &AppState, run_id: &str) -> Result<String, ApiError> {
    let run_id = run_id.to_string();
    let record =
        state.store().get_run(&run_id).await?.ok_or_else(|| ApiError::NotFound(format!("no run `{run_id}`")))?;
    let review = Change::from_run_input(&record.input).is_some();
    let spec = match review {
        true => JobSpec::Review {
            allow_paths: state.workspace.allow_paths.clone(),
            samples: 1,
            fell_back: Vec::new(),
            no_cache: false,
        },
        false => JobSpec::Run,
    };
    let (id, context) = (run_id.clone(), state.workspace.catalog_context().clone());
    let prepared = blocking(move || prepare_job(&id, &record, spec, &context)).await?;
    let (checked, mut options, _) =
        prepared.map_err(|message| ApiError::Conflict(format!("cannot take run {run_id} up again: {message}")))?;
    options.commands = Some(state.workspace.commands());
    let handle = state.engine.resume(checked, &run_id, options).await.map_err(start_error)?;
    Ok(follow_live(state, handle, review, Vec::new()))
}

/// Ends the waits whose time ran out: each waiting run's approvals past their
/// deadline are rejected by `timeout`, and the run goes on (to its clean stop). The
/// server calls this every [`SWEEP`]; it returns the runs it took up.
pub async fn expire_approvals(state: &AppState) -> Vec<String> {
    let now = conclave_core::now_ms();
    let Ok(runs) = state.store().list_runs(10_000).await else { return Vec::new() };
    let mut taken = Vec::new();
    for run in runs.into_iter().filter(|r| r.status == RunStatus::Waiting) {
        let Ok(events) = state.store().events(&run.id, 0).await else { continue };
        let mut expired: Vec<String> = Vec::new();
        for event in &events {
            match &event.kind {
                EventKind::ApprovalRequested { node_id, expires_ms: Some(end), .. } if *end <= now => {
                    expired.push(node_id.clone())
                }
                EventKind::ApprovalDecided { node_id, .. } => expired.retain(|n| n != node_id),
                _ => {}
            }
        }
        let Some(node_id) = expired.first() else { continue };
        // `decide` records the timeout's rejection itself, and says so.
        let placeholder = Decision { approved: false, by: "timeout".into(), comment: None };
        if let Err(DecisionError::Expired { .. }) = decide(state.store().as_ref(), &run.id, node_id, placeholder).await
            && go_on(state, &run.id).await.is_ok()
        {
            taken.push(run.id);
        }
    }
    taken
}

/// How often the server ends the waits whose time ran out.
pub const SWEEP: std::time::Duration = std::time::Duration::from_secs(15);
