//! How values are kept in PostgreSQL: JSON as text, and unsigned numbers (times,
//! sequence numbers) as `BIGINT`.

use conclave_core::StoreError;

use super::connection::corrupt;

pub(super) fn to_json<T: serde::Serialize>(value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Backend(e.to_string()))
}

pub(super) fn from_json<T: serde::de::DeserializeOwned>(run_id: &str, text: &str) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|e| corrupt(run_id, e.to_string()))
}

/// PostgreSQL has no unsigned integers; times and sequence numbers fit in `BIGINT`.
pub(super) fn to_db_int(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

pub(super) fn from_db_int(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}
