//! Extractors whose rejections are API errors: a malformed query string or path
//! segment gets the documented JSON error body, not axum's plain text.

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
