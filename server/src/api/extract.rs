//! Extractors whose rejections are API errors: a malformed query string or path
//! segment gets the documented JSON error body, not axum's plain text, and a body
//! over [`BODY_LIMIT`] a JSON 413.

use axum::extract::{FromRequestParts, Path, Query};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use super::ApiError;

/// A query string, parsed into `T`.
#[derive(Debug)]
pub struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        Query::<T>::from_request_parts(parts, state).await.map(|Query(value)| ApiQuery(value)).map_err(|e| {
            ApiError::BadRequest { message: format!("the query string is not valid: {}", e.body_text()), path: None }
        })
    }
}

/// Path parameters, parsed into `T`.
#[derive(Debug)]
pub struct ApiPath<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        Path::<T>::from_request_parts(parts, state).await.map(|Path(value)| ApiPath(value)).map_err(|e| {
            ApiError::BadRequest { message: format!("the URL path is not valid: {}", e.body_text()), path: None }
        })
    }
}

/// Largest request body accepted.
pub const BODY_LIMIT: usize = 2 * 1024 * 1024;

/// The body of a request, with a too-large body reported as a JSON 413.
pub fn body_bytes(
    body: Result<axum::body::Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<axum::body::Bytes, ApiError> {
    body.map_err(|e| match e.status() {
        axum::http::StatusCode::PAYLOAD_TOO_LARGE => ApiError::TooLarge(BODY_LIMIT),
        _ => ApiError::BadRequest { message: e.body_text(), path: None },
    })
}
