//! The OpenAPI document of the API, generated from the handlers' annotations and the
//! wire types, served at `/api/openapi.json`.

use axum::Json;
use utoipa::OpenApi;

use super::{conclaves, runs, schemas};

/// The API description.
#[derive(Debug, OpenApi)]
#[openapi(
    info(
        title = "Conclave API",
        description = "Conclave files, validation, schema lowering, providers, runs and their events and reports."
    ),
    paths(
        conclaves::list,
        conclaves::get_one,
        conclaves::create,
        conclaves::update,
        conclaves::remove,
        conclaves::validate,
        schemas::list,
        schemas::get_one,
        schemas::lower_schema,
        schemas::providers,
        runs::start,
        runs::list,
        runs::get_one,
        runs::events,
        runs::cancel,
        runs::report,
    ),
    components(schemas(conclave_shared::RunEvent, conclave_shared::EventKind, conclave_shared::api::ErrorBody))
)]
pub struct ApiDoc;

/// `GET /api/openapi.json`.
pub async fn document() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}
