//! The tools' structured outputs, whose JSON Schemas the client is given
//! (`tools/list`), and the cap that keeps every answer under what a coding agent
//! takes from a tool (Claude Code cuts near 25,000 tokens).

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// The most characters any answer carries: 25,000 tokens at a conservative 3.2
/// characters a token.
pub const MAX_ANSWER_CHARS: usize = 80_000;

/// The most characters of a tool's structured output: a tool answer carries it twice,
/// as structured content and as the text of clients that read only text.
pub const MAX_STRUCTURED_CHARS: usize = MAX_ANSWER_CHARS / 2;

/// One finding, compact; `details` holds the rest with `detail: "full"`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FindingItem {
    /// `blocker`, `major`, `minor` or `nit` (absent when the reviewer gave none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub severity: Option<String>,
    /// The repository-relative file.
    pub file: String,
    /// The line in the new version of the file.
    pub line: u64,
    /// What the reviewer said.
    pub description: String,
    /// The finding's identity across runs (survives line moves); `conclave dismiss`
    /// takes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    /// With `detail: "full"`: the whole finding as the JSON report has it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

/// A review: its run, status, totals and one page of findings.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ReviewAnswer {
    /// The review run's id.
    pub run_id: String,
    /// `queued`, `running`, `waiting`, `succeeded`, `failed`, `cancelled` or `interrupted`.
    pub status: String,
    /// Findings per severity (all findings, not just this page).
    pub totals: BTreeMap<String, u64>,
    /// How many findings the review has in all.
    pub total_findings: usize,
    /// This page of findings, in the report's order.
    pub findings: Vec<FindingItem>,
    /// Pass to `get_review` as `cursor` for the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Whether the review is degraded (agents failed, were skipped, or fell back to
    /// the local model), with why.
    pub degraded: Vec<String>,
    /// What the server changed before starting (such as agents moved to the local model).
    pub notices: Vec<String>,
    /// The review's Markdown report as a resource, once it is finished.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub report_uri: Option<String>,
    /// What to do next, in words.
    pub note: String,
}

/// One node of a run.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct NodeItem {
    /// The node's id.
    pub id: String,
    /// `queued`, `running`, `waiting`, `succeeded`, `failed`, `skipped`, `cached`, ...
    pub state: String,
    /// Its error, once failed (or why it was skipped).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Its output (output nodes only, cut to fit the answer).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
}

/// A run: its status, nodes, and the outputs of its output nodes.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RunAnswer {
    /// The run's id.
    pub run_id: String,
    /// The conclave that ran.
    pub conclave: String,
    /// `queued`, `running`, `waiting`, `succeeded`, `failed`, `cancelled` or `interrupted`.
    pub status: String,
    /// For a run that did not succeed, why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Every node, in the conclave's order.
    pub nodes: Vec<NodeItem>,
    /// Whether outputs were cut to keep the answer small (`conclave runs show`
    /// prints them whole).
    pub truncated: bool,
}

/// One line of the run list.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RunLine {
    /// The run's id.
    pub run_id: String,
    /// The conclave that ran.
    pub conclave: String,
    /// Its status.
    pub status: String,
    /// When it was created, in Unix milliseconds.
    pub created_ms: u64,
    /// For a run that did not succeed, why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The run list, newest first.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RunList {
    /// The runs.
    pub runs: Vec<RunLine>,
}

/// One conclave of the catalog.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ConclaveLine {
    /// Its id: what `run_conclave` and `review` take.
    pub id: String,
    /// Its name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// How many nodes it has.
    pub nodes: usize,
    /// Errors in its file (a conclave with errors cannot run).
    pub errors: usize,
    /// Its file as a resource.
    pub uri: String,
}

/// The catalog.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ConclaveList {
    /// The conclaves, by id.
    pub conclaves: Vec<ConclaveLine>,
}

/// The diagnostics of a conclave document.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ValidationAnswer {
    /// Whether it has no errors (it can be saved and run).
    pub valid: bool,
    /// How many errors.
    pub errors: usize,
    /// How many warnings.
    pub warnings: usize,
    /// Every problem: severity, message, node or edge, JSON pointer (as `conclave validate`).
    pub diagnostics: Vec<Value>,
    /// The agents whose output is findings-shaped (the conclave reviews code).
    pub findings_agents: Vec<String>,
}

/// A recorded decision.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ApprovalAnswer {
    /// The run, taken up again.
    pub run_id: String,
    /// What happened besides (a decision after the deadline ends the wait rejected).
    pub notices: Vec<String>,
}

/// The characters `value` takes as JSON.
pub fn json_chars(value: &impl Serialize) -> usize {
    serde_json::to_string(value).map_or(0, |text| text.len())
}

/// `value` cut to at most `budget` characters of JSON: a string keeps its start, a
/// larger value becomes its JSON text's start, marked as cut.
pub fn cut(value: &Value, budget: usize) -> (Value, bool) {
    let text = match value {
        Value::String(s) => s.clone(),
        other => serde_json::to_string(other).unwrap_or_default(),
    };
    if json_chars(value) <= budget {
        return (value.clone(), false);
    }
    let mut end = budget.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (Value::String(format!("{}… [cut: {} characters in all]", &text[..end], text.len())), true)
}
