//! The tools' inputs, whose JSON Schemas the client is given (`tools/list`).

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

/// `review`'s input.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewArgs {
    /// The git repository to review (or a directory inside it). Over stdio it defaults
    /// to the server's working directory and a relative path is read from there; over
    /// HTTP it is required and must lie under the server's allowed roots.
    pub repository: Option<String>,
    /// Review `BASE...HEAD` (a branch, tag or commit); without it, the working tree
    /// against HEAD. The configuration (conclave, schemas, rules, dismissals) is then
    /// read from the base side.
    pub base: Option<String>,
    /// Review only the commits since an earlier review of this branch: `auto` (the
    /// commit its latest stored review reviewed) or a commit.
    pub since: Option<String>,
    /// The review conclave: a catalog id (or, over stdio, a conclave file); default
    /// `light-code-review`. `list_conclaves` lists the ids.
    pub conclave: Option<String>,
    /// Run every agent on this provider (such as `anthropic`, `openai`, `local`).
    pub provider: Option<String>,
    /// With `provider`: the model for every agent.
    pub model: Option<String>,
    /// Wait for the review to finish and return its findings (default true); false
    /// returns the run id at once: fetch the findings later with `get_review`.
    pub wait: Option<bool>,
}

/// How much of each finding to return.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Detail {
    /// Severity, file, line, description and fingerprint.
    #[default]
    Compact,
    /// Everything the report holds on each finding (evidence, anchor, support, ...).
    Full,
}

/// `get_review`'s input.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetReviewArgs {
    /// The review run's id (from `review` or `list_runs`).
    pub run: String,
    /// The `next_cursor` of the previous page; absent for the first page.
    pub cursor: Option<String>,
    /// `compact` (default) or `full`.
    pub detail: Option<Detail>,
}

/// `run_conclave`'s input.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunConclaveArgs {
    /// The catalog id of the conclave to run (`list_conclaves` lists them).
    pub conclave: String,
    /// The run's input, any JSON value: what the trigger node passes on.
    #[serde(default)]
    pub input: Value,
    /// Wait for the run to end and return its outputs (default true); false returns
    /// the run id at once: follow it with `get_run`.
    pub wait: Option<bool>,
}

/// An input naming one run.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunArgs {
    /// The run's id.
    pub run: String,
}

/// `list_runs`' input.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListRunsArgs {
    /// How many runs, newest first: 1 to 100 (default 20).
    pub limit: Option<u32>,
}

/// A decision at an approval node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DecisionWord {
    /// Go on past the node.
    Approve,
    /// Stop the run there, cleanly.
    Reject,
}

/// `approve`'s input.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApproveArgs {
    /// The waiting run's id.
    pub run: String,
    /// The approval node's id (`get_run` shows the waiting node).
    pub node: String,
    /// `approve` or `reject`.
    pub decision: DecisionWord,
    /// Why, kept with the decision.
    pub comment: Option<String>,
}

/// `validate_conclave`'s input.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ValidateArgs {
    /// The conclave document to check, unsaved: a JSON object in the conclave file
    /// format (or its text as a string).
    pub conclave: Value,
}

/// `list_conclaves`' input: nothing.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}
