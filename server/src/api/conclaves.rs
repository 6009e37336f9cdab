//! Conclave files over HTTP: list, get, create, update, delete, and validation of an
//! unsaved conclave. A save writes `conclaves/<id>.conclave.json` in canonical form,
//! so it shows up in git as a readable diff.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use conclave_catalog::{Level, check_conclave_value, checks::malformed, is_valid_id, list_ids};
use conclave_shared::Conclave;
use conclave_shared::api::{ConclaveSummary, Validation};
use serde_json::Value;

use super::error::parse_json;
use super::extract::ApiPath;
use super::{ApiError, AppState, body_bytes};

/// Ids are file name stems: lowercase letters, digits, `-` and `_`.
fn check_id(id: &str) -> Result<(), ApiError> {
    if is_valid_id(id) {
        Ok(())
    } else {
        Err(ApiError::bad_field(
            "/id",
            format!("`{id}` is not a valid conclave id: use lowercase letters, digits, `-` and `_`"),
        ))
    }
}

fn path_of(state: &AppState, id: &str) -> std::path::PathBuf {
    state.workspace.catalog_dir.join(format!("{id}.conclave.json"))
}

/// The diagnostics of a conclave file's text, and its findings-shaped agents.
fn validation(state: &AppState, file: &str, text: &str) -> Validation {
    let checked = match serde_json::from_str::<Value>(text) {
        Ok(value) => check_conclave_value(file, &value, state.workspace.catalog_context()),
        Err(e) => conclave_catalog::Checked { diagnostics: vec![malformed(file, &e)], ..Default::default() },
    };
    let errors = checked.diagnostics.iter().filter(|d| d.is_error()).count();
    let warnings = checked.diagnostics.iter().filter(|d| d.severity == Level::Warning).count();
    let findings_agents =
        checked.outputs.into_iter().filter(|(_, o)| o.findings_field.is_some()).map(|(id, _)| id).collect();
    Validation { diagnostics: checked.diagnostics, errors, warnings, findings_agents }
}

/// Checks and parses a conclave body; 400 for bad JSON, 422 with every diagnostic for
/// an invalid conclave.
fn accept(state: &AppState, bytes: &[u8]) -> Result<Conclave, ApiError> {
    let value: Value = parse_json(bytes)?;
    let id = value.get("id").and_then(Value::as_str).unwrap_or("conclave").to_string();
    check_id(&id)?;
    let text = serde_json::to_string(&value).unwrap_or_default();
    let result = validation(state, &format!("{id}.conclave.json"), &text);
    if result.errors > 0 {
        let first = result.diagnostics.iter().find(|d| d.is_error()).map(|d| d.path.clone());
        return Err(ApiError::Invalid {
            message: format!("the conclave has {} error(s)", result.errors),
            path: first,
            diagnostics: result.diagnostics,
        });
    }
    serde_json::from_value(value).map_err(|e| ApiError::Invalid {
        message: e.to_string(),
        path: None,
        diagnostics: Vec::new(),
    })
}

fn write(state: &AppState, conclave: &Conclave) -> Result<(), ApiError> {
    std::fs::create_dir_all(&state.workspace.catalog_dir)
        .map_err(|e| ApiError::Internal(format!("creating {}: {e}", state.workspace.catalog_dir.display())))?;
    let path = path_of(state, &conclave.id);
    // Write then rename, so a crash never leaves half a file.
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, conclave.to_file_text())
        .map_err(|e| ApiError::Internal(format!("writing {}: {e}", tmp.display())))?;
    std::fs::rename(&tmp, &path).map_err(|e| ApiError::Internal(format!("renaming to {}: {e}", path.display())))
}

/// Lists the conclaves in the catalog.
#[utoipa::path(get, path = "/api/conclaves", responses((status = 200, body = [ConclaveSummary])))]
pub async fn list(State(state): State<AppState>) -> Result<Json<Vec<ConclaveSummary>>, ApiError> {
    let mut out = Vec::new();
    for id in list_ids(&state.workspace.catalog_dir) {
        let text = std::fs::read_to_string(path_of(&state, &id)).unwrap_or_default();
        let parsed = Conclave::from_json(&text).ok();
        let errors = validation(&state, &format!("{id}.conclave.json"), &text).errors;
        out.push(ConclaveSummary {
            name: parsed.as_ref().map(|c| c.name.clone()),
            description: parsed.as_ref().map(|c| c.description.clone()),
            nodes: parsed.as_ref().map_or(0, |c| c.nodes.len()),
            errors,
            id,
        });
    }
    Ok(Json(out))
}

/// One conclave.
#[utoipa::path(get, path = "/api/conclaves/{id}", params(("id" = String, Path, description = "Conclave id")),
    responses((status = 200, body = Conclave), (status = 404, description = "No such conclave"), (status = 422, description = "The file is invalid")))]
pub async fn get_one(State(state): State<AppState>, ApiPath(id): ApiPath<String>) -> Result<Json<Conclave>, ApiError> {
    check_id(&id).map_err(|_| ApiError::NotFound(format!("no conclave `{id}`")))?;
    let text =
        std::fs::read_to_string(path_of(&state, &id)).map_err(|_| ApiError::NotFound(format!("no conclave `{id}`")))?;
    Conclave::from_json(&text).map(Json).map_err(|_| {
        let result = validation(&state, &format!("{id}.conclave.json"), &text);
        ApiError::Invalid {
            message: format!("conclaves/{id}.conclave.json is invalid; fix it in a text editor"),
            path: None,
            diagnostics: result.diagnostics,
        }
    })
}

/// Creates a conclave file.
#[utoipa::path(post, path = "/api/conclaves", request_body = Conclave,
    responses((status = 201, body = Conclave), (status = 400, description = "Bad JSON"), (status = 409, description = "The id is taken"), (status = 413, description = "Too large"), (status = 422, description = "Invalid conclave")))]
pub async fn create(
    State(state): State<AppState>,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<Conclave>), ApiError> {
    let conclave = accept(&state, &body_bytes(body)?)?;
    if path_of(&state, &conclave.id).exists() {
        return Err(ApiError::Conflict(format!(
            "a conclave `{}` exists; update it with PUT /api/conclaves/{}",
            conclave.id, conclave.id
        )));
    }
    write(&state, &conclave)?;
    Ok((StatusCode::CREATED, Json(conclave)))
}

/// Replaces a conclave file.
#[utoipa::path(put, path = "/api/conclaves/{id}", request_body = Conclave, params(("id" = String, Path, description = "Conclave id")),
    responses((status = 200, body = Conclave), (status = 400, description = "Bad JSON"), (status = 404, description = "No such conclave"), (status = 413, description = "Too large"), (status = 422, description = "Invalid conclave")))]
pub async fn update(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Conclave>, ApiError> {
    check_id(&id).map_err(|_| ApiError::NotFound(format!("no conclave `{id}`")))?;
    if !path_of(&state, &id).is_file() {
        return Err(ApiError::NotFound(format!("no conclave `{id}`; create it with POST /api/conclaves")));
    }
    let conclave = accept(&state, &body_bytes(body)?)?;
    if conclave.id != id {
        return Err(ApiError::Invalid {
            message: format!("the body's id `{}` differs from `{id}` in the URL", conclave.id),
            path: Some("/id".into()),
            diagnostics: Vec::new(),
        });
    }
    write(&state, &conclave)?;
    Ok(Json(conclave))
}

/// Deletes a conclave file.
#[utoipa::path(delete, path = "/api/conclaves/{id}", params(("id" = String, Path, description = "Conclave id")),
    responses((status = 204, description = "Deleted"), (status = 404, description = "No such conclave")))]
pub async fn remove(State(state): State<AppState>, ApiPath(id): ApiPath<String>) -> Result<StatusCode, ApiError> {
    check_id(&id).map_err(|_| ApiError::NotFound(format!("no conclave `{id}`")))?;
    std::fs::remove_file(path_of(&state, &id)).map_err(|_| ApiError::NotFound(format!("no conclave `{id}`")))?;
    Ok(StatusCode::NO_CONTENT)
}

/// Validates a conclave without saving it: the same diagnostics as `conclave validate`.
#[utoipa::path(post, path = "/api/validate", request_body(content = Object, description = "A conclave document, valid or not: validation reports what is wrong with it"),
    responses((status = 200, body = Validation), (status = 400, description = "Bad JSON"), (status = 413, description = "Too large")))]
pub async fn validate(
    State(state): State<AppState>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Validation>, ApiError> {
    let bytes = body_bytes(body)?;
    let value: Value = parse_json(&bytes)?;
    if !value.is_object() {
        return Err(ApiError::BadRequest { message: "send a conclave document: a JSON object".into(), path: None });
    }
    let id = value.get("id").and_then(Value::as_str).unwrap_or("conclave");
    Ok(Json(validation(&state, &format!("{id}.conclave.json"), &String::from_utf8_lossy(&bytes))))
}
