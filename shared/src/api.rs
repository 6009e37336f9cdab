//! The bodies of the HTTP API: what the editor sends and what the server answers,
//! including the one error shape. The server serializes these and the editor
//! deserializes the same types, so the two cannot drift apart.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::diagnostic::Diagnostic;
use crate::lowering::LoweringNote;

/// A conclave in the catalog listing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ConclaveSummary {
    /// Its id (the file name stem).
    pub id: String,
    /// Its name, when the file parses.
    pub name: Option<String>,
    /// Its description.
    pub description: Option<String>,
    /// Number of nodes.
    pub nodes: usize,
    /// Errors found in the file.
    pub errors: usize,
}

/// The diagnostics of a conclave, and what validation learned about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Validation {
    /// Every problem, with node or edge and JSON pointer.
    pub diagnostics: Vec<Diagnostic>,
    /// Number of errors (a conclave with errors cannot be saved or run).
    pub errors: usize,
    /// Number of warnings.
    pub warnings: usize,
    /// The agents whose output is findings-shaped: a conclave with any reviews code,
    /// so a run of it takes a repository and a base ref.
    #[serde(default)]
    pub findings_agents: Vec<String>,
}

/// A schema reference and where it resolves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SchemaRef {
    /// The dotted reference, such as `review.findings.v1`.
    pub reference: String,
    /// The file it resolves to, or `built-in`.
    pub source: String,
}

/// A lowering preview request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LowerRequest {
    /// The schema to lower (inline).
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    /// Or a reference to one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_ref: Option<String>,
    /// The provider whose dialect to lower to.
    pub provider: String,
}

/// What a provider will receive.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LowerResponse {
    /// The provider.
    pub provider: String,
    /// `openai`, `anthropic`, `ollama`, `claude-code`, or `prompt` for the prompt contract.
    pub target: String,
    /// Whether native structured output is used.
    pub native: bool,
    /// The schema sent (the rendered contract's schema for `prompt`).
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub schema: Value,
    /// Every change made, with its JSON pointer.
    pub notes: Vec<LoweringNote>,
    /// How many notes lose meaning (what `"compatibility": "strict"` refuses).
    pub meaning_losses: usize,
}

/// A schema to preview in every provider dialect side by side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PreviewRequest {
    /// The schema to lower (inline).
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    /// Or a reference to one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_ref: Option<String>,
}

/// What one provider dialect receives for a schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DialectPreview {
    /// `anthropic`, `openai-chat`, `openai-responses`, `ollama`, `claude-code` or `local`.
    pub dialect: String,
    /// The built-in provider that speaks it.
    pub provider: String,
    /// Whether native structured output is used (otherwise the prompt contract).
    pub native: bool,
    /// The part of the request that carries the schema, exactly as it is sent.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub request: Value,
    /// Every change made on the way, with its JSON pointer.
    pub notes: Vec<LoweringNote>,
    /// How many notes lose meaning (what `"compatibility": "strict"` refuses).
    pub meaning_losses: usize,
}

/// A provider and whether it can be used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ProviderInfo {
    /// Its name.
    pub name: String,
    /// Whether its configuration (keys, binaries) is present.
    pub configured: bool,
    /// What is missing, when not configured.
    pub message: Option<String>,
    /// The model `--provider` uses by default.
    pub default_model: String,
    /// Its structured-output dialect, if it has native structured output.
    pub native_schema: Option<String>,
    /// Whether it can call tools.
    pub tools: bool,
}

/// What probing a provider found: which structured-output dialect its server speaks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ProviderProbe {
    /// The provider.
    pub provider: String,
    /// The server's base URL, for providers whose servers differ.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// The model asked.
    pub model: String,
    /// The dialect the server accepted (`json_schema`, `json_object_schema`,
    /// `json_object`, `prompt`), or the provider's own (`anthropic`, `ollama`, ...).
    /// Absent when the probe failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dialect: Option<String>,
    /// Whether the answer satisfied the probe's schema.
    pub valid: bool,
    /// Each dialect the server rejected, with what it said.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rejected: Vec<ProbeRejection>,
    /// Why the probe failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How long the probe took, in milliseconds.
    pub duration_ms: u64,
}

/// A dialect a server rejected while it was probed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ProbeRejection {
    /// The dialect.
    pub dialect: String,
    /// What the server said.
    pub message: String,
}

/// What to probe a provider with.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ProbeRequest {
    /// The model to ask (default: the provider's default model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// A person's decision at an approval node.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ApprovalDecision {
    /// True to approve, false to reject (the run stops, `rejected`).
    pub approve: bool,
    /// What to record with the decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// Who decides, as recorded (default `api`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
}

/// What to run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StartRun {
    /// The conclave's id in the catalog.
    pub conclave_id: String,
    /// The run input (any JSON), for plain runs.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    /// For a review: the repository, base ref and provider choices; the change becomes the input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<ReviewTarget>,
    /// Run from this node: re-run it and everything downstream of it, reusing the
    /// other nodes' outputs from `reuse_run`. Needs `reuse_run`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_node: Option<String>,
    /// The earlier run of the same conclave whose outputs are reused (with
    /// `from_node`). Its input, and for a review its change, are used again unless
    /// `input` or `review` is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reuse_run: Option<String>,
    /// The most the run may spend (`max_cost_usd`, `max_tokens`), as `--max-cost`
    /// and `--max-tokens` give it; with the conclave's `settings.budget`, the
    /// tighter holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<crate::Budget>,
}

/// The change to review, and how (the same choices as `conclave review`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReviewTarget {
    /// A path to a git repository on the server's machine.
    pub repository: String,
    /// Review `BASE...HEAD`; without it, the working tree against HEAD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    /// Run every agent on this provider (`--provider`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// With `provider`: the model for every agent (`--model`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Fail when an agent's provider has no key instead of running it on the local
    /// model (`--no-fallback`).
    #[serde(default)]
    pub no_fallback: bool,
    /// The analyzer lanes to run, by name, those off by default included; `[]` runs
    /// none; absent, every lane on by default that is installed and reads a changed
    /// file (`--analyzers`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub analyzers: Option<Vec<String>>,
    /// The most parts a change too large for one request is split into (default 8);
    /// beyond, the largest files are not reviewed and the report lists them
    /// (`--max-parts`). A whole number from 1 to 64 (`8.0` reads as `8`, as JSON
    /// Schema's integer does).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "crate::budget::whole_number")]
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 64))]
    pub max_parts: Option<u64>,
    /// Which side of the change configures the review (conclave, schemas, rules,
    /// dismissals): `base` (the default for a review with a base: the change's own
    /// edits to them are reported, not applied) or `head`, for a change the caller
    /// trusts (`--trust-head`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust: Option<crate::Trust>,
    /// Review only what is new since an earlier review of the checked-out branch
    /// (`--since`): `auto` (the commit its latest stored review reviewed) or a commit.
    /// Earlier findings on code the new commits did not touch are carried forward; a
    /// branch without a stored review, or whose reviewed commit left its history, is
    /// reviewed in full, and the report says why. Not with `full`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// Review the whole change (`--full`); not with `since`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub full: bool,
    /// The repository's key for the dismissals kept in the run store
    /// (`--repository-key`): GitHub's `owner/name`, GitLab's project path. Without
    /// it, stored dismissals do not apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository_key: Option<String>,
    /// Run cached nodes again and keep nothing they answer (`--no-cache`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_cache: bool,
}

/// A started run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Started {
    /// Its id; follow it at `/api/runs/{id}/events`.
    pub run_id: String,
    /// What the server changed before starting, such as agents moved to the local
    /// model because their provider has no key.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notices: Vec<String>,
}

/// Every API error: `{"error": {...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorDetail,
}

/// What went wrong, where, and every diagnostic when a document was invalid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ErrorDetail {
    /// The HTTP status.
    pub status: u16,
    /// What went wrong and what to do.
    pub message: String,
    /// The offending field, as a JSON pointer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Every problem found, for invalid conclaves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<Vec<Diagnostic>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_review_s_part_count_is_any_whole_number_json_writes() {
        let parts = |text: &str| serde_json::from_str::<ReviewTarget>(text).map(|t| t.max_parts);
        assert_eq!(parts(r#"{"repository": "r", "max_parts": 8}"#).ok(), Some(Some(8)));
        assert_eq!(parts(r#"{"repository": "r", "max_parts": 8.0}"#).ok(), Some(Some(8)), "JSON Schema's integer");
        assert_eq!(parts(r#"{"repository": "r"}"#).ok(), Some(None));
        assert!(parts(r#"{"repository": "r", "max_parts": 2.5}"#).is_err());
        assert!(parts(r#"{"repository": "r", "max_parts": -1}"#).is_err());
    }
}
