//! A pull request's reviews as a row, the same in both stores: the key (forge,
//! repository, number) and what the busy listing filters and orders by as columns,
//! the record whole as JSON; and a run summary's `pull_request`, the label of the
//! request whose JSON the stores extract from the run's input in SQL.

use conclave_core::StoreError;
use conclave_shared::delivery::{PullRequestRef, PullRequestReviews};

use crate::delivery_row::to_int;

/// A record's columns, in the order both stores' statements name them: forge,
/// repository, number, busy, updated, the record's JSON.
pub(crate) struct PullRequestRow {
    pub forge: &'static str,
    pub repository: String,
    pub number: i64,
    pub busy: bool,
    pub updated_ms: i64,
    pub record_json: String,
}

/// The columns of a record row, in [`PullRequestRow`]'s order.
pub(crate) const COLUMNS: &str = "forge, repository, number, busy, updated_ms, record_json";

/// The columns a record is read back from, in [`Stored`]'s order: the key, for the
/// message when the JSON does not read, and the JSON.
pub(crate) const READ_COLUMNS: &str = "forge, repository, number, record_json";

/// The values of the [`READ_COLUMNS`] of a row.
pub(crate) type Stored = (String, String, i64, String);

impl PullRequestRow {
    /// The row of `reviews`.
    pub fn of(reviews: &PullRequestReviews) -> Result<PullRequestRow, StoreError> {
        let request = &reviews.pull_request;
        Ok(PullRequestRow {
            forge: request.forge.name(),
            repository: request.repository.clone(),
            number: to_int(request.number),
            busy: reviews.is_busy(),
            updated_ms: to_int(reviews.updated_ms),
            record_json: serde_json::to_string(reviews).map_err(|e| StoreError::Backend(e.to_string()))?,
        })
    }
}

/// The record a row holds; one that does not read back is an error naming it.
pub(crate) fn read((forge, repository, number, json): Stored) -> Result<PullRequestReviews, StoreError> {
    serde_json::from_str(&json).map_err(|e| {
        StoreError::Backend(format!(
            "the stored record of pull request {repository} number {number} on {forge} is unreadable: {e}"
        ))
    })
}

/// A run summary's `pull_request`: the label of the request `json` (the JSON of the
/// run input's `pull_request`, extracted in SQL) names, as
/// [`PullRequestRef::of_input`] reads it: anything else is no request.
pub(crate) fn label(json: Option<&str>) -> Option<String> {
    serde_json::from_str::<PullRequestRef>(json?).ok().map(|request| request.label())
}
