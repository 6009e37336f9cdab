//! Kept evals over HTTP: the list of one conclave's evals (or of all), newest first,
//! and one eval whole, as `conclave eval` kept them in the run store.

// utoipa's `IntoParams` expansion spells out paths that are already in scope.
#![allow(unused_qualifications)]

use axum::Json;
use axum::extract::State;
use conclave_shared::eval::{EvalListing, StoredEval};
use serde::Deserialize;
use utoipa::IntoParams;

use super::extract::{ApiPath, ApiQuery};
use super::{ApiError, AppState};

/// Which evals, and how many.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EvalsQuery {
    /// Only the evals of this conclave (its id, as the eval names it).
    pub conclave: Option<String>,
    /// How many evals, newest first (default 50, at most 1000).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<u16>,
}

/// Lists kept evals, newest first.
#[utoipa::path(get, path = "/api/evals", params(EvalsQuery), responses((status = 200, body = [EvalListing])))]
pub async fn list(
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<EvalsQuery>,
) -> Result<Json<Vec<EvalListing>>, ApiError> {
    let limit = q.limit.unwrap_or(50);
    if !(1..=1000).contains(&limit) {
        return Err(ApiError::bad_field("/limit", format!("limit must be 1 to 1000, not {limit}")));
    }
    Ok(Json(state.store().list_evals(q.conclave.as_deref(), usize::from(limit)).await?))
}

/// One kept eval with its whole summary.
#[utoipa::path(get, path = "/api/evals/{id}", params(("id" = String, Path, description = "Eval id")),
    responses((status = 200, body = StoredEval), (status = 404, description = "No such eval")))]
pub async fn get_one(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<StoredEval>, ApiError> {
    state.store().get_eval(&id).await?.map(Json).ok_or_else(|| ApiError::NotFound(format!("no eval `{id}`")))
}
