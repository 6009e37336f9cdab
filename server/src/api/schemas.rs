//! Output schemas over HTTP: the references available, one schema, the lowering
//! preview for a provider and for every dialect side by side, which providers are
//! configured, and a probe of which structured-output dialect a provider's server
//! speaks. Resolving references reads schema files and checking a provider's
//! configuration looks for programs on disk, so those run on blocking threads
//! (`blocking.rs`).

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use conclave_core::ProviderError;
use conclave_providers::dialect::Dialect;
use conclave_schema::{check_schema, lower};
use conclave_shared::api::{
    DialectPreview, LowerRequest, LowerResponse, PreviewRequest, ProbeRequest, ProviderInfo, ProviderProbe, SchemaRef,
};
use serde_json::{Value, json};

use super::blocking::blocking;
use super::error::parse_json;
use super::extract::ApiPath;
use super::{ApiError, AppState, body_bytes};
use crate::workspace::Workspace;

/// Lists the schema references.
#[utoipa::path(get, path = "/api/schemas", responses((status = 200, body = [SchemaRef])))]
pub async fn list(State(state): State<AppState>) -> Result<Json<Vec<SchemaRef>>, ApiError> {
    let workspace = state.workspace.clone();
    let refs = blocking(move || {
        let found = workspace.schemas.list().into_iter();
        found.map(|(reference, source)| SchemaRef { reference, source: source.to_string() }).collect()
    });
    Ok(Json(refs.await?))
}

/// One schema by reference.
#[utoipa::path(get, path = "/api/schemas/{reference}", params(("reference" = String, Path, description = "Dotted reference")),
    responses((status = 200, description = "The schema"), (status = 404, description = "Unknown reference")))]
pub async fn get_one(
    State(state): State<AppState>,
    ApiPath(reference): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    let workspace = state.workspace.clone();
    let resolved = blocking(move || workspace.schemas.resolve(&reference));
    resolved.await?.map(|r| Json(r.schema)).map_err(|e| ApiError::NotFound(e.to_string()))
}

/// Previews how a schema is lowered for a provider.
#[utoipa::path(post, path = "/api/lower", request_body = LowerRequest,
    responses((status = 200, body = LowerResponse), (status = 400, description = "Bad request"), (status = 422, description = "Invalid schema")))]
pub async fn lower_schema(
    State(state): State<AppState>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<LowerResponse>, ApiError> {
    let request: LowerRequest = parse_json(&body_bytes(body)?)?;
    let workspace = state.workspace.clone();
    Ok(Json(blocking(move || lower_for_provider(&workspace, request)).await??))
}

/// The lowering of a requested schema for one provider.
fn lower_for_provider(workspace: &Workspace, request: LowerRequest) -> Result<LowerResponse, ApiError> {
    let schema = requested_schema(workspace, request.schema, request.schema_ref.as_deref())?;
    let target = workspace.native_schema(&request.provider);
    if !workspace.providers.known_names().contains(&request.provider) {
        return Err(ApiError::Invalid {
            message: format!("unknown provider `{}`; GET /api/providers lists them", request.provider),
            path: Some("/provider".into()),
            diagnostics: Vec::new(),
        });
    }
    let response = match target {
        Some(target) => {
            let lowered = lower(&schema, target).map_err(|e| ApiError::Invalid {
                message: e.to_string(),
                path: Some("/schema".into()),
                diagnostics: Vec::new(),
            })?;
            let meaning_losses = lowered.meaning_losses().count();
            LowerResponse {
                provider: request.provider,
                target: if lowered.native { target.as_str().into() } else { "prompt".into() },
                native: lowered.native,
                schema: lowered.schema,
                notes: lowered.notes,
                meaning_losses,
            }
        }
        None => LowerResponse {
            provider: request.provider,
            target: "prompt".into(),
            native: false,
            schema,
            notes: Vec::new(),
            meaning_losses: 0,
        },
    };
    Ok(response)
}

/// The schema a request names, inline or by reference, checked as an output schema.
fn requested_schema(workspace: &Workspace, schema: Option<Value>, reference: Option<&str>) -> Result<Value, ApiError> {
    let invalid =
        |message: String, path: String| ApiError::Invalid { message, path: Some(path), diagnostics: Vec::new() };
    let schema = match (schema, reference) {
        (Some(schema), None) => schema,
        (None, Some(reference)) => {
            workspace.schemas.resolve(reference).map_err(|e| invalid(e.to_string(), "/schema_ref".into()))?.schema
        }
        _ => return Err(invalid("give exactly one of `schema` and `schema_ref`".into(), "/schema".into())),
    };
    if let Some(first) = check_schema(&schema).first() {
        let message = format!("the schema is not a valid output schema: {}", first.message);
        return Err(invalid(message, format!("/schema{}", first.pointer)));
    }
    Ok(schema)
}

/// Previews a schema in every provider dialect side by side: for each, what is
/// dropped or changed, and the part of the request that carries it.
#[utoipa::path(post, path = "/api/lower/preview", request_body = PreviewRequest,
    responses((status = 200, body = [DialectPreview]), (status = 400, description = "Bad request"), (status = 422, description = "Invalid schema")))]
pub async fn preview(
    State(state): State<AppState>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Vec<DialectPreview>>, ApiError> {
    let request: PreviewRequest = parse_json(&body_bytes(body)?)?;
    let workspace = state.workspace.clone();
    Ok(Json(blocking(move || preview_dialects(&workspace, request)).await??))
}

/// A requested schema lowered for every dialect.
fn preview_dialects(workspace: &Workspace, request: PreviewRequest) -> Result<Vec<DialectPreview>, ApiError> {
    let name = request.schema_ref.clone().unwrap_or_else(|| "output".into());
    let schema = requested_schema(workspace, request.schema, request.schema_ref.as_deref())?;
    let mut previews = Vec::new();
    for dialect in Dialect::ALL {
        let lowered = lower(&schema, dialect.target()).map_err(|e| ApiError::Invalid {
            message: format!("{}: {e}", dialect.name()),
            path: Some("/schema".into()),
            diagnostics: Vec::new(),
        })?;
        let request = if lowered.native {
            dialect.schema_part(&name, &lowered.schema)
        } else {
            json!({"prompt_contract": {"schema": lowered.schema}})
        };
        previews.push(DialectPreview {
            dialect: dialect.name().into(),
            provider: dialect.provider().into(),
            native: lowered.native,
            request,
            meaning_losses: lowered.meaning_losses().count(),
            notes: lowered.notes,
        });
    }
    Ok(previews)
}

/// A body that must be a JSON object, as `T`. serde reads a struct from an array too
/// (`[]` for one whose fields are all optional), which the API document does not allow.
fn parse_object<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let value: Value = parse_json(bytes)?;
    if !value.is_object() {
        return Err(ApiError::BadRequest { message: "send the request body as a JSON object".into(), path: None });
    }
    serde_json::from_value(value).map_err(|e| ApiError::BadRequest {
        message: format!("the request body does not have the expected shape: {e}"),
        path: None,
    })
}

/// Lists the providers and whether each is configured.
#[utoipa::path(get, path = "/api/providers", responses((status = 200, body = [ProviderInfo])))]
pub async fn providers(State(state): State<AppState>) -> Result<Json<Vec<ProviderInfo>>, ApiError> {
    let workspace = state.workspace.clone();
    Ok(Json(blocking(move || provider_list(&workspace)).await?))
}

/// Each provider, whether it is configured (which may look for its program on disk).
fn provider_list(workspace: &Workspace) -> Vec<ProviderInfo> {
    let mut out: Vec<ProviderInfo> = Vec::new();
    for name in workspace.providers.known_names() {
        let provider = workspace.providers.get(&name);
        let (configured, message) = match provider.as_ref().map(|p| p.check_config()) {
            Some(Ok(())) => (true, None),
            Some(Err(ProviderError::Config { message, .. })) => (false, Some(message)),
            Some(Err(e)) => (false, Some(e.to_string())),
            None => (false, Some(format!("`{name}` is not available in this build"))),
        };
        let caps = provider.as_ref().map(|p| p.capabilities());
        out.push(ProviderInfo {
            default_model: provider.as_ref().map(|p| p.default_model().to_string()).unwrap_or_default(),
            native_schema: caps.and_then(|c| c.native_schema).map(|t| t.as_str().to_string()),
            tools: caps.is_some_and(|c| c.tools),
            configured,
            message,
            name,
        });
    }
    out
}

/// Probes a provider: one tiny structured request, to learn which structured-output
/// dialect its server speaks (for OpenAI-compatible servers, each dialect `auto`
/// would try, in order). The probe's own failure is part of the answer, not an error.
#[utoipa::path(post, path = "/api/providers/{name}/probe", request_body = ProbeRequest,
    params(("name" = String, Path, description = "The provider's name, as GET /api/providers lists it")),
    responses((status = 200, body = ProviderProbe), (status = 400, description = "Bad request"), (status = 404, description = "Unknown provider")))]
pub async fn probe(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<ProviderProbe>, ApiError> {
    let request: ProbeRequest = parse_object(&body_bytes(body)?)?;
    let Some(provider) = state.workspace.providers.get(&name) else {
        return Err(ApiError::NotFound(format!("unknown provider `{name}`; GET /api/providers lists them")));
    };
    Ok(Json(conclave_engine::probe::probe(provider.clone(), request.model.as_deref()).await))
}
