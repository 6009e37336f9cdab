//! The OpenAPI document of the API, generated from the handlers' annotations and the
//! wire types, served at `/api/openapi.json`: every route needs the bearer token, and
//! every error has the one error body.

use axum::Json;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ContentBuilder, Ref, RefOr, ResponseBuilder};
use utoipa::{Modify, OpenApi};

use super::{approvals, conclaves, evals, events, mcp, runs, schemas};

/// The API description.
#[derive(Debug, OpenApi)]
#[openapi(
    info(
        title = "Conclave API",
        description = "Conclave files, validation, schema lowering, providers, MCP servers' tools, runs and their events and reports, and kept evals."
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
        schemas::preview,
        schemas::providers,
        schemas::probe,
        mcp::list_tools,
        runs::start,
        runs::list,
        runs::get_one,
        events::events,
        runs::cancel,
        approvals::decide_approval,
        runs::report,
        evals::list,
        evals::get_one,
    ),
    components(schemas(conclave_shared::RunEvent, conclave_shared::EventKind, conclave_shared::api::ErrorBody)),
    modifiers(&BearerToken, &ErrorResponses),
    security(("bearer" = []))
)]
pub struct ApiDoc;

/// Declares the bearer token every request carries.
#[derive(Debug)]
struct BearerToken;

impl Modify for BearerToken {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("The token `conclave serve` prints in its URL, or CONCLAVE_TOKEN"))
                    .build(),
            ),
        );
    }
}

/// `GET /api/openapi.json`.
pub async fn document() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}

/// Every error answers with the one error body: the documented 4xx and 5xx responses
/// get it, and every route also declares the errors any request can meet (no token,
/// a foreign Host or Origin, a wrong method or media type, a body too large).
#[derive(Debug)]
struct ErrorResponses;

/// Errors any API request can meet, with their descriptions.
const COMMON_ERRORS: &[(&str, &str)] = &[
    ("400", "The request is malformed (bad JSON, query or path)"),
    ("401", "The bearer token is missing or wrong"),
    ("403", "A foreign Host or Origin, or a repository outside the allowed roots"),
    ("405", "The route does not take this method"),
    ("413", "The body is larger than the limit"),
    ("415", "A state-changing request whose body is not JSON"),
    ("500", "A failure on the server's side"),
];

impl Modify for ErrorResponses {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let error_body = || ContentBuilder::new().schema(Some(RefOr::Ref(Ref::from_schema_name("ErrorBody")))).build();
        for item in openapi.paths.paths.values_mut() {
            let operations = [&mut item.get, &mut item.put, &mut item.post, &mut item.delete, &mut item.patch];
            for operation in operations.into_iter().flatten() {
                let responses = &mut operation.responses.responses;
                for (status, response) in responses.iter_mut() {
                    if let (true, RefOr::T(response)) = (status.starts_with('4') || status.starts_with('5'), response) {
                        response.content.insert("application/json".into(), error_body());
                    }
                }
                for (status, description) in COMMON_ERRORS {
                    responses.entry(status.to_string()).or_insert_with(|| {
                        RefOr::T(
                            ResponseBuilder::new()
                                .description(*description)
                                .content("application/json", error_body())
                                .build(),
                        )
                    });
                }
            }
        }
    }
}
