//! Conclave files over HTTP: list, get, create, update, delete, and validation of an
//! unsaved conclave. A save writes `conclaves/<id>.conclave.json` in canonical form,
//! so it shows up in git as a readable diff. Every file has an ETag (a hash of its
//! bytes): `GET` and every save return it, and `PUT` with `If-Match` refuses with 412
//! when the file changed on disk since the ETag was read. Nothing here touches the
//! disk on an async thread: files are read and written (`conclave_files.rs`),
//! listed (`catalog_listing.rs`) and checked (`checking.rs`) on blocking threads.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::header::ETAG;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use conclave_catalog::is_valid_id;
use conclave_shared::Conclave;
use conclave_shared::api::{ConclaveSummary, Validation};
use serde_json::Value;

use super::blocking::blocking;
use super::checking::validation;
use super::conclave_files::{ConclaveFiles, FileError};
use super::error::parse_json;
use super::extract::ApiPath;
use super::guard::Security;
use super::precondition::IfMatch;
use super::{ApiError, AppState, body_bytes};
use crate::workspace::Workspace;

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

/// 403 when a command node opens its sandbox wider than the file on disk has it: a
/// conclave saved through the API may not give a command the network or more paths,
/// as it may not run a program the server was not told to allow.
fn refuse_widened_sandboxes(
    security: &Security,
    files: &ConclaveFiles,
    id: &str,
    value: &Value,
) -> Result<(), ApiError> {
    let on_disk = files.read(id).ok().and_then(|read| serde_json::from_slice::<Value>(&read.bytes).ok());
    let widened = security.widened_sandboxes(value, on_disk.as_ref());
    if widened.is_empty() {
        return Ok(());
    }
    let list: Vec<String> = widened.iter().map(|(subject, what)| format!("{subject}: {}", what.join(", "))).collect();
    Err(ApiError::Forbidden(format!(
        "the conclave widens the sandbox of its commands beyond the file on disk ({}): a conclave saved through the API \
         may not open a command's (or a stdio MCP server's) network or give it more paths to read or write; nothing \
         was written. Put the file in conclaves/ yourself",
        list.join("; ")
    )))
}

/// Checks and parses a conclave body; 400 for bad JSON, 422 with every diagnostic for
/// an invalid conclave.
fn accept(
    workspace: &Workspace,
    security: &Security,
    files: &ConclaveFiles,
    bytes: &[u8],
) -> Result<Conclave, ApiError> {
    let value: Value = parse_json(bytes)?;
    let id = value.get("id").and_then(Value::as_str).unwrap_or("conclave").to_string();
    check_id(&id)?;
    refuse_widened_sandboxes(security, files, &id, &value)?;
    let refused = security.refused_programs(&value);
    if !refused.is_empty() {
        let list = refused.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(", ");
        return Err(ApiError::Forbidden(format!(
            "the conclave's command nodes or stdio MCP servers run {list}, which this server was not told to allow: a command does anything \
             its user can, so a conclave saved through the API may run only the programs `conclave serve \
             --allow-commands PROGRAM...` lists; nothing was written. Restart the server with --allow-commands {}, or \
             put the file in conclaves/ yourself",
            refused.join(" ")
        )));
    }
    let text = serde_json::to_string(&value).unwrap_or_default();
    let result = validation(workspace.catalog_context(), &format!("{id}.conclave.json"), &text);
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

/// The headers that carry `etag`.
fn with_etag(etag: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    // A quoted SHA-256 in hex is always a valid header value.
    if let Ok(value) = HeaderValue::from_str(etag) {
        headers.insert(ETAG, value);
    }
    headers
}

/// The 404 of an update: there is nothing to update, but the id can be created.
fn missing(id: &str) -> ApiError {
    ApiError::NotFound(format!("no conclave `{id}`; create it with POST /api/conclaves"))
}

/// What a refused file operation on conclave `id` answers.
fn file_refused(id: &str, error: FileError) -> ApiError {
    match error {
        FileError::Missing => ApiError::NotFound(format!("no conclave `{id}`")),
        FileError::Exists => {
            ApiError::Conflict(format!("a conclave `{id}` exists; update it with PUT /api/conclaves/{id}"))
        }
        FileError::Changed => ApiError::PreconditionFailed(format!(
            "conclaves/{id}.conclave.json changed on disk since it was opened; reload it (GET /api/conclaves/{id} returns it with its current ETag) and make your changes again"
        )),
        FileError::Io(detail) => ApiError::Internal(detail),
    }
}

/// Lists the conclaves in the catalog. Files unchanged since the last listing are
/// not read or checked again.
#[utoipa::path(get, path = "/api/conclaves", responses((status = 200, body = [ConclaveSummary])))]
pub async fn list(State(state): State<AppState>) -> Result<Json<Vec<ConclaveSummary>>, ApiError> {
    let (listing, workspace) = (state.listing.clone(), state.workspace.clone());
    Ok(Json(blocking(move || listing.list(&workspace)).await?))
}

/// One conclave, with the ETag of its file.
#[utoipa::path(get, path = "/api/conclaves/{id}", params(("id" = String, Path, description = "Conclave id")),
    responses(
        (status = 200, body = Conclave, headers(("ETag" = String, description = "The file's entity tag (a hash of its bytes): send it back in `If-Match` to update only this version"))),
        (status = 404, description = "No such conclave"),
        (status = 422, description = "The file is invalid")))]
pub async fn get_one(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> Result<(HeaderMap, Json<Conclave>), ApiError> {
    check_id(&id).map_err(|_| ApiError::NotFound(format!("no conclave `{id}`")))?;
    let (files, workspace) = (state.files.clone(), state.workspace.clone());
    blocking(move || {
        let read = files.read(&id).map_err(|e| file_refused(&id, e))?;
        let text = String::from_utf8_lossy(&read.bytes);
        match Conclave::from_json(&text) {
            Ok(conclave) => Ok((with_etag(&read.etag), Json(conclave))),
            Err(_) => Err(ApiError::Invalid {
                message: format!("conclaves/{id}.conclave.json is invalid; fix it in a text editor"),
                path: None,
                diagnostics: validation(workspace.catalog_context(), &format!("{id}.conclave.json"), &text).diagnostics,
            }),
        }
    })
    .await?
}

/// Creates a conclave file. Of two creates of one id, one creates it and the other
/// gets 409; neither overwrites the other.
#[utoipa::path(post, path = "/api/conclaves", request_body = Conclave,
    responses(
        (status = 201, body = Conclave, headers(("ETag" = String, description = "The new file's entity tag"))),
        (status = 400, description = "Bad JSON"), (status = 409, description = "The id is taken"),
        (status = 403, description = "A command node runs a program the server was not told to allow (`--allow-commands`), or widens its sandbox beyond the file on disk"),
        (status = 413, description = "Too large"), (status = 422, description = "Invalid conclave")))]
pub async fn create(
    State(state): State<AppState>,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, HeaderMap, Json<Conclave>), ApiError> {
    let bytes = body_bytes(body)?;
    let (files, workspace, security) = (state.files.clone(), state.workspace.clone(), state.security.clone());
    blocking(move || {
        let conclave = accept(&workspace, &security, &files, &bytes)?;
        let etag = files.create(&conclave.id, &conclave.to_file_text()).map_err(|e| file_refused(&conclave.id, e))?;
        Ok((StatusCode::CREATED, with_etag(&etag), Json(conclave)))
    })
    .await?
}

/// Replaces a conclave file. With `If-Match`, only the version of the file that ETag
/// names is replaced; a file changed since answers 412 and stays as it is.
#[utoipa::path(put, path = "/api/conclaves/{id}", request_body = Conclave,
    params(
        ("id" = String, Path, description = "Conclave id"),
        ("If-Match" = Option<String>, Header, nullable = false, pattern = r#"^(\*|(W/)?"[!#-~]*"( *, *(W/)?"[!#-~]*")*)$"#,
            description = "The ETag the conclave was read with (`GET /api/conclaves/{id}`): the update happens only if the file is still that version. `*` or no header: update whatever the file is now")),
    responses(
        (status = 200, body = Conclave, headers(("ETag" = String, description = "The updated file's entity tag"))),
        (status = 400, description = "Bad JSON"),
        (status = 403, description = "A command node runs a program the server was not told to allow (`--allow-commands`), or widens its sandbox beyond the file on disk"),
        (status = 404, description = "No such conclave"),
        (status = 412, description = "The file changed on disk since the ETag in `If-Match` was read (reload it), or `If-Match` is not `*` or a list of entity tags"),
        (status = 413, description = "Too large"), (status = 422, description = "Invalid conclave")))]
pub async fn update(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<(HeaderMap, Json<Conclave>), ApiError> {
    check_id(&id).map_err(|_| missing(&id))?;
    let expected = IfMatch::of(&headers);
    let bytes = body_bytes(body)?;
    let (files, workspace, security) = (state.files.clone(), state.workspace.clone(), state.security.clone());
    blocking(move || {
        if !files.path(&id).is_file() {
            return Err(missing(&id));
        }
        let conclave = accept(&workspace, &security, &files, &bytes)?;
        if conclave.id != id {
            return Err(ApiError::Invalid {
                message: format!("the body's id `{}` differs from `{id}` in the URL", conclave.id),
                path: Some("/id".into()),
                diagnostics: Vec::new(),
            });
        }
        // Checked after the body, so a bad body is a 400 or 422 whatever the header;
        // a malformed If-Match names no version of the file, so none passes it.
        let expected = expected.map_err(|_| {
            ApiError::PreconditionFailed(format!(
                "the If-Match header is not `*` or a list of quoted entity tags, so it names no version of conclaves/{id}.conclave.json; send the ETag of GET /api/conclaves/{id}"
            ))
        })?;
        let etag = files.replace(&id, &conclave.to_file_text(), expected.as_ref()).map_err(|e| match e {
            FileError::Missing => missing(&id),
            other => file_refused(&id, other),
        })?;
        Ok((with_etag(&etag), Json(conclave)))
    })
    .await?
}

/// Deletes a conclave file.
#[utoipa::path(delete, path = "/api/conclaves/{id}", params(("id" = String, Path, description = "Conclave id")),
    responses((status = 204, description = "Deleted"), (status = 404, description = "No such conclave")))]
pub async fn remove(State(state): State<AppState>, ApiPath(id): ApiPath<String>) -> Result<StatusCode, ApiError> {
    check_id(&id).map_err(|_| ApiError::NotFound(format!("no conclave `{id}`")))?;
    let files = state.files.clone();
    blocking(move || files.remove(&id).map_err(|e| file_refused(&id, e))).await??;
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
    let id = value.get("id").and_then(Value::as_str).unwrap_or("conclave").to_string();
    // As a save would be: command nodes may run only the programs this server allows.
    let mut context = state.workspace.catalog_context().clone();
    context.programs = Some(state.security.allowed_programs.clone());
    let checked =
        blocking(move || validation(&context, &format!("{id}.conclave.json"), &String::from_utf8_lossy(&bytes)));
    Ok(Json(checked.await?))
}
