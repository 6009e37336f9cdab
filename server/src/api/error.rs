//! The API's errors: one enum, one JSON shape (`{"error": {status, message, path?,
//! diagnostics?}}`), and the status each maps to. Details of 5xx errors are logged,
//! not sent.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use conclave_core::StoreError;
use conclave_shared::Diagnostic;
use conclave_shared::api::{ErrorBody, ErrorDetail};

/// An API failure.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The body is not valid JSON.
    #[error("the request body is not valid JSON: {message} (line {line}, column {column})")]
    BadJson {
        /// What the parser said.
        message: String,
        /// Where.
        line: usize,
        /// Where.
        column: usize,
    },
    /// A well-formed request that cannot be served as asked.
    #[error("{message}")]
    BadRequest {
        /// What is wrong.
        message: String,
        /// The offending field, as a JSON pointer.
        path: Option<String>,
    },
    /// Missing or wrong bearer token.
    #[error(
        "this server requires its token: send `Authorization: Bearer <token>` (the token is in the URL `conclave serve` printed, or CONCLAVE_TOKEN)"
    )]
    Unauthorized,
    /// A webhook delivery whose signature (or token) is missing or does not match.
    #[error("{0}")]
    BadSignature(String),
    /// A request the server refuses to serve (foreign Host or Origin, a repository
    /// outside the allowed roots).
    #[error("{0}")]
    Forbidden(String),
    /// The route exists, but not with this method.
    #[error("this route does not take that method; GET /api/openapi.json lists the routes and their methods")]
    MethodNotAllowed,
    /// A state-changing request whose body is not declared JSON.
    #[error("send the request body as JSON with `Content-Type: application/json`")]
    UnsupportedMediaType,
    /// No such conclave, run or report.
    #[error("{0}")]
    NotFound(String),
    /// The resource exists or is in the wrong state.
    #[error("{0}")]
    Conflict(String),
    /// The resource changed since the version the request names (`If-Match`).
    #[error("{0}")]
    PreconditionFailed(String),
    /// The body is larger than the limit.
    #[error("the request body is larger than {0} bytes")]
    TooLarge(usize),
    /// The conclave (or another document) is invalid.
    #[error("{message}")]
    Invalid {
        /// Summary.
        message: String,
        /// The offending field, as a JSON pointer.
        path: Option<String>,
        /// Every problem found.
        diagnostics: Vec<Diagnostic>,
    },
    /// Something this request needs beyond this server (an MCP server) could not be
    /// started or did not answer.
    #[error("{0}")]
    Unavailable(String),
    /// A failure on the server's side.
    #[error("internal error: {0}")]
    Internal(String),
}

impl ApiError {
    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadJson { .. } | ApiError::BadRequest { .. } => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized | ApiError::BadSignature(_) => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::PreconditionFailed(_) => StatusCode::PRECONDITION_FAILED,
            ApiError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::Invalid { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::Unavailable(_) => StatusCode::BAD_GATEWAY,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// A 400 about one field.
    pub fn bad_field(path: &str, message: impl Into<String>) -> ApiError {
        ApiError::BadRequest { message: message.into(), path: Some(path.to_string()) }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        // A webhook's 401 is about its signature, not a bearer token.
        let wants_bearer = matches!(self, ApiError::Unauthorized);
        let message = match &self {
            ApiError::Internal(detail) => {
                tracing::error!("API internal error: {detail}");
                "internal error; the server log has the details".to_string()
            }
            other => other.to_string(),
        };
        let (path, diagnostics) = match self {
            ApiError::BadRequest { path, .. } => (path, None),
            ApiError::Invalid { path, diagnostics, .. } => (path, Some(diagnostics)),
            _ => (None, None),
        };
        let body = ErrorBody { error: ErrorDetail { status: status.as_u16(), message, path, diagnostics } };
        let mut response = (status, Json(body)).into_response();
        // RFC 6750: a 401 names the scheme it wants, which MCP clients read too.
        if wants_bearer {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"conclave\""));
        }
        response
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::UnknownRun(id) => ApiError::NotFound(format!("no run `{id}`")),
            other => ApiError::Internal(other.to_string()),
        }
    }
}

/// Parses a JSON body, mapping syntax errors to 400 with line and column.
pub fn parse_json<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(bytes).map_err(|e| {
        if e.is_data() {
            ApiError::BadRequest {
                message: format!("the request body does not have the expected shape: {e}"),
                path: None,
            }
        } else {
            let text = e.to_string();
            let message = text.rfind(" at line ").map_or(text.clone(), |i| text[..i].to_string());
            ApiError::BadJson { message, line: e.line(), column: e.column() }
        }
    })
}
