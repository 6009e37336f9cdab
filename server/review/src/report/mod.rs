//! Reports of a finished review, built from the stored run (its record and events)
//! and rendered as Markdown, the JSON envelope, SARIF 2.1.0 or reviewdog rdjsonl.
//!
//! **Invariant:** every total in a report is computed from the findings; an agent's
//! own `counts` are only ever compared, never shown as the truth.

mod envelope;
mod markdown;
mod rdjsonl;
mod repeats;
mod sarif;

pub use repeats::{RepeatSummary, SampledAgent, stability_distribution, support_distribution};

use conclave_shared::{
    Anchor, BaselineState, Conclave, CountMismatch, EventKind, Finding, FindingsCheck, LoweringNote, NodeKind,
    NodeOutput, NodeState, OutputDialect, RunEvent, RunRecord, RunStatus, Severity, Stance, Usage,
};
use serde_json::Value;
use std::collections::BTreeMap;

use crate::findings::read_findings;

/// The formats a report can be rendered in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportFormat {
    /// For people.
    Markdown,
    /// The API envelope: status, result (json, schema_ref, text), provider, model, usage.
    Json,
    /// SARIF 2.1.0, for code-scanning interfaces.
    Sarif,
    /// reviewdog's rdjsonl, one diagnostic per line.
    Rdjsonl,
}

impl ReportFormat {
    /// The name used in storage and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            ReportFormat::Markdown => "markdown",
            ReportFormat::Json => "json",
            ReportFormat::Sarif => "sarif",
            ReportFormat::Rdjsonl => "rdjsonl",
        }
    }

    /// Every format.
    pub const ALL: [ReportFormat; 4] =
        [ReportFormat::Markdown, ReportFormat::Json, ReportFormat::Sarif, ReportFormat::Rdjsonl];

    /// The media type of a rendered report.
    pub fn content_type(self) -> &'static str {
        match self {
            ReportFormat::Markdown => "text/markdown; charset=utf-8",
            ReportFormat::Json => "application/json",
            ReportFormat::Sarif => "application/sarif+json",
            ReportFormat::Rdjsonl => "application/x-ndjson",
        }
    }
}

impl std::str::FromStr for ReportFormat {
    type Err = String;

    fn from_str(name: &str) -> Result<ReportFormat, String> {
        ReportFormat::ALL
            .into_iter()
            .find(|f| f.as_str() == name)
            .ok_or_else(|| format!("unknown report format `{name}`; use markdown, json, sarif or rdjsonl"))
    }
}

/// One agent's schema lowering, as reported.
#[derive(Debug, Clone, PartialEq)]
pub struct LoweringSummary {
    /// The agent.
    pub node_id: String,
    /// The dialect, or `prompt`.
    pub target: String,
    /// Whether native structured output was used.
    pub native: bool,
    /// For OpenAI-compatible servers: the structured-output dialect the agent ended
    /// with (after any step down the server asked for).
    pub dialect: Option<OutputDialect>,
    /// What changed, a step down included.
    pub notes: Vec<LoweringNote>,
}

/// One agent's usage, as reported.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentUsage {
    /// The agent.
    pub node_id: String,
    /// Its provider.
    pub provider: String,
    /// Its model.
    pub model: String,
    /// Tokens and cost.
    pub usage: Usage,
}

/// Everything a report shows.
#[derive(Debug, Clone)]
pub struct ReviewReport {
    /// The run.
    pub run_id: String,
    /// The conclave's id and name.
    pub conclave: (String, String),
    /// How the run ended.
    pub status: RunStatus,
    /// Why it failed, if it did.
    pub error: Option<String>,
    /// The agents whose findings are the review's result (those feeding the output).
    pub result_nodes: Vec<String>,
    /// The result's findings.
    pub findings: Vec<Finding>,
    /// The result as JSON (the single result agent's output, or an object by node).
    pub result: Value,
    /// The schema reference of the result, when one agent produced it by reference.
    pub schema_ref: Option<String>,
    /// Comparisons the engine made, by the node that received them.
    pub checks: Vec<(String, FindingsCheck)>,
    /// Count mismatches, by agent.
    pub mismatches: Vec<(String, Vec<CountMismatch>)>,
    /// Schema lowerings with notes.
    pub lowerings: Vec<LoweringSummary>,
    /// Usage per agent, in conclave order.
    pub usage: Vec<AgentUsage>,
    /// Files of the change left out to keep the diff under the cap: path and size.
    pub omitted: Vec<(String, u64)>,
    /// The baseline the findings were compared with (a run id or a file), if any.
    pub baseline: Option<String>,
    /// The baseline's findings that are gone now, marked absent.
    pub absent: Vec<Finding>,
    /// Why the review is degraded (less than it claims to be), if it is: agents
    /// that failed or were skipped, agents moved to the local model for want of a key.
    /// Every gate fails on a degraded review unless allowed.
    pub degraded: Vec<String>,
    /// The findings of the other agents (the reviewers feeding the result), which
    /// give each result finding its support; not shown on their own.
    pub raised: Vec<Finding>,
    /// The support a finding needs to count in gates (`--min-support`; 0: any).
    pub min_support: u32,
    /// The agents that ran as samples (`--samples K`).
    pub samples: Vec<SampledAgent>,
    /// The stability a sampled finding needs to count in gates (`--min-stability`,
    /// a rate from 0 to 1; 0: any).
    pub min_stability: f64,
    /// What the runs of a repeated review had in common (`--repeat N`), in the last
    /// run's report.
    pub repeat: Option<RepeatSummary>,
}

impl ReviewReport {
    /// Findings per severity, computed from the findings (concerns only).
    pub fn totals(&self) -> BTreeMap<Severity, u64> {
        let mut totals: BTreeMap<Severity, u64> = Severity::ALL.iter().map(|s| (*s, 0)).collect();
        for f in self.findings.iter().filter(|f| f.effective_stance() == Stance::Concern) {
            if let Some(s) = f.severity {
                *totals.entry(s).or_default() += 1;
            }
        }
        totals
    }

    /// Findings per severity that gates count: concerns neither unanchored (their
    /// quote is not in the file) nor dismissed (both are listed apart), and with a
    /// baseline only new or updated ones.
    pub fn gated_totals(&self) -> BTreeMap<Severity, u64> {
        let mut totals: BTreeMap<Severity, u64> = Severity::ALL.iter().map(|s| (*s, 0)).collect();
        for f in self.findings.iter().filter(|f| f.effective_stance() == Stance::Concern && self.counts(f)) {
            if let Some(s) = f.severity {
                *totals.entry(s).or_default() += 1;
            }
        }
        totals
    }

    /// Whether a finding counts in gates and is posted: [`gates`], and at least as
    /// much support and stability as asked for.
    pub fn counts(&self, f: &Finding) -> bool {
        gates(f) && self.supported(f) && self.stable(f)
    }

    /// Whether a finding has the support `--min-support` asks for (findings without a
    /// support figure have nothing to fall short of).
    pub fn supported(&self, f: &Finding) -> bool {
        f.support.is_none_or(|s| s >= self.min_support)
    }

    /// Whether a finding has the stability `--min-stability` asks for (findings of
    /// agents that were not sampled have nothing to fall short of).
    pub fn stable(&self, f: &Finding) -> bool {
        // Rates such as 2/3 against a threshold written 0.67 or 2/3: a little slack.
        f.stability.is_none_or(|s| s.rate() + 1e-9 >= self.min_stability)
    }

    /// Every disagreement (severities one level apart at one place) across checks.
    pub fn disagreements(&self) -> impl Iterator<Item = &conclave_shared::FindingGroup> {
        self.checks.iter().flat_map(|(_, c)| &c.disagreements)
    }

    /// Every contradiction across checks.
    pub fn contradictions(&self) -> impl Iterator<Item = &conclave_shared::FindingGroup> {
        self.checks.iter().flat_map(|(_, c)| &c.contradictions)
    }

    /// Renders the report.
    pub fn render(&self, format: ReportFormat) -> String {
        match format {
            ReportFormat::Markdown => markdown::render(self),
            ReportFormat::Json => envelope::render(self),
            ReportFormat::Sarif => sarif::render(self),
            ReportFormat::Rdjsonl => rdjsonl::render(self),
        }
    }
}

/// Builds the report of a stored run.
pub fn build_report(record: &RunRecord, events: &[RunEvent]) -> ReviewReport {
    let conclave = &record.conclave;
    let result_nodes = result_nodes(conclave);
    let (findings, result, schema_ref) = result_of(record, events, &result_nodes);
    let reviewers: Vec<String> =
        record.nodes.iter().filter(|n| !result_nodes.contains(&n.node_id)).map(|n| n.node_id.clone()).collect();
    let (raised, _, _) = result_of(record, events, &reviewers);
    let (checks, mismatches, lowerings) = engine_checks(conclave, events);
    let samples = repeats::sampled_agents(record);
    let mut degraded = degraded_nodes(record);
    degraded.extend(repeats::failed_samples(&samples));
    ReviewReport {
        run_id: record.summary.id.clone(),
        conclave: (conclave.id.clone(), conclave.name.clone()),
        status: record.summary.status,
        error: record.summary.error.clone(),
        result_nodes,
        findings,
        result,
        schema_ref,
        checks,
        mismatches,
        lowerings,
        usage: usage_of(record),
        omitted: omitted_of(record),
        baseline: None,
        absent: Vec::new(),
        degraded,
        raised,
        min_support: 0,
        samples,
        min_stability: 0.0,
        repeat: None,
    }
}

/// Agents that did not give their output: failed (a provider error, or output still
/// invalid after its retries) or skipped; and a run that failed on no node (the
/// store reported an error, or the run stopped).
fn degraded_nodes(record: &RunRecord) -> Vec<String> {
    let mut reasons = agent_failures(record);
    if record.summary.status == RunStatus::Failed && record.summary.failed_node.is_none() {
        reasons.push(format!("the run failed: {}", record.summary.error.as_deref().unwrap_or("no reason given")));
    }
    reasons
}

fn agent_failures(record: &RunRecord) -> Vec<String> {
    record
        .nodes
        .iter()
        .filter(|n| record.conclave.node(&n.node_id).is_some_and(|node| node.kind == NodeKind::Agent))
        .filter_map(|n| match n.state {
            NodeState::Failed => {
                Some(format!("agent `{}` failed: {}", n.node_id, n.error.as_deref().unwrap_or("no reason given")))
            }
            NodeState::Skipped => Some(format!("agent `{}` was skipped: an agent before it failed", n.node_id)),
            _ => None,
        })
        .collect()
}

/// The files the review input says were left out.
fn omitted_of(record: &RunRecord) -> Vec<(String, u64)> {
    let Some(list) = record.input.get("omitted").and_then(Value::as_array) else { return Vec::new() };
    list.iter().filter_map(|f| Some((f.get("path")?.as_str()?.to_string(), f.get("diff_bytes")?.as_u64()?))).collect()
}

/// The agents whose output is the review's result: those feeding an output node.
fn result_nodes(conclave: &Conclave) -> Vec<String> {
    conclave
        .nodes
        .iter()
        .filter(|n| n.kind == NodeKind::Output)
        .flat_map(|o| conclave.upstream_of(&o.id))
        .filter(|id| conclave.node(id).is_some_and(|n| n.kind == NodeKind::Agent))
        .map(str::to_string)
        .fold(Vec::new(), |mut acc, id| {
            if !acc.contains(&id) {
                acc.push(id);
            }
            acc
        })
}

/// The result's findings, its JSON (the single result agent's output, or an object
/// by node) and its schema reference.
fn result_of(
    record: &RunRecord,
    events: &[RunEvent],
    result_nodes: &[String],
) -> (Vec<Finding>, Value, Option<String>) {
    let outputs: BTreeMap<&str, &NodeOutput> =
        record.nodes.iter().filter_map(|n| Some((n.node_id.as_str(), n.output.as_ref()?))).collect();
    // Which field holds each agent's findings was decided when its schema was lowered.
    let findings_fields: BTreeMap<&str, &str> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::SchemaLowered { node_id, findings_field: Some(field), .. } => {
                Some((node_id.as_str(), field.as_str()))
            }
            _ => None,
        })
        .collect();
    let mut findings = Vec::new();
    let mut results = serde_json::Map::new();
    for id in result_nodes {
        let value = outputs.get(id.as_str()).map(|o| o.to_input_value()).unwrap_or(Value::Null);
        if let Some(field) = findings_fields.get(id.as_str()) {
            findings.extend(read_findings(id, &value, field));
        }
        results.insert(id.clone(), value);
    }
    match result_nodes {
        [only] => {
            let node = record.conclave.node(only);
            let schema_ref = node.and_then(|n| n.agent.as_ref()).and_then(|a| a.output_schema_ref.clone());
            (findings, results.remove(only).unwrap_or(Value::Null), schema_ref)
        }
        _ => (findings, Value::Object(results), None),
    }
}

type EngineChecks = (Vec<(String, FindingsCheck)>, Vec<(String, Vec<CountMismatch>)>, Vec<LoweringSummary>);

/// What the engine recorded about the run: comparisons, miscounts, lowering notes.
fn engine_checks(conclave: &Conclave, events: &[RunEvent]) -> EngineChecks {
    let mut checks = Vec::new();
    let mut mismatches = Vec::new();
    let mut lowerings = Vec::new();
    for event in events {
        match &event.kind {
            EventKind::FindingsChecked { node_id, check } => checks.push((node_id.clone(), check.clone())),
            EventKind::CountMismatch { node_id, mismatches: m } => mismatches.push((node_id.clone(), m.clone())),
            EventKind::SchemaLowered { node_id, target, native, notes, dialect, .. }
                if !notes.is_empty() || !native || dialect.is_some() =>
            {
                lowerings.push(LoweringSummary {
                    node_id: node_id.clone(),
                    target: target.clone(),
                    native: *native,
                    dialect: *dialect,
                    notes: notes.clone(),
                })
            }
            // One agent's rejection moves every agent on that server (one base URL per
            // provider) that had not stepped further down already.
            EventKind::DialectDowngraded { from, to, note, .. } => {
                for lowering in lowerings.iter_mut() {
                    if lowering.dialect.is_some_and(|d| d <= *from) {
                        lowering.dialect = Some(*to);
                        lowering.notes.push(note.clone());
                    }
                }
            }
            _ => {}
        }
    }
    // Events of concurrent agents arrive in whatever order they finished; the report
    // lists them in conclave order, so the same review always reads the same.
    let position = |id: &str| conclave.nodes.iter().position(|n| n.id == id).unwrap_or(usize::MAX);
    checks.sort_by_key(|(id, _)| position(id));
    mismatches.sort_by_key(|(id, _)| position(id));
    (checks, mismatches, lowerings)
}

/// Usage per agent, in conclave order.
fn usage_of(record: &RunRecord) -> Vec<AgentUsage> {
    record
        .conclave
        .nodes
        .iter()
        .filter_map(|n| {
            let agent = n.agent.as_ref()?;
            let usage = record.nodes.iter().find(|s| s.node_id == n.id)?.usage.clone()?;
            Some(AgentUsage {
                node_id: n.id.clone(),
                provider: agent.provider.clone(),
                model: agent.model.clone(),
                usage,
            })
        })
        .collect()
}

/// A finding's fingerprint: the one computed from its file's code when the report
/// was built (see `anchor.rs`), else one from what the agent quoted or said.
pub fn fingerprint(finding: &Finding) -> String {
    finding.fingerprint.clone().unwrap_or_else(|| crate::anchor::fingerprint(finding, None))
}

/// How many findings have each anchor state, in a fixed order (`none` for findings
/// not checked at all, such as those of a report built without the repository).
pub fn anchor_counts(findings: &[Finding]) -> Vec<(&'static str, u64)> {
    let states = ["anchored", "relocated", "unanchored", "unquoted", "unchecked", "none"];
    states
        .iter()
        .map(|state| {
            let n = findings.iter().filter(|f| f.anchor.map_or("none", Anchor::as_str) == *state).count() as u64;
            (*state, n)
        })
        .collect()
}

/// Whether a finding may fail a gate or be posted: not when its quote is nowhere in
/// the file, nor when the repository dismissed it, nor when a baseline already had
/// it as it is (gates look at new and updated findings).
pub fn gates(finding: &Finding) -> bool {
    listed(finding) && !matches!(finding.baseline, Some(BaselineState::Unchanged | BaselineState::Absent))
}

/// Whether a finding belongs in a report's main list: not when its quote is nowhere
/// in the file, nor when the repository dismissed it (both are listed apart).
pub fn listed(finding: &Finding) -> bool {
    finding.anchor != Some(Anchor::Unanchored) && finding.dismissed.is_none()
}

/// The lane of a finding, for rule ids: its first `raisedBy` word, else the agent.
pub fn lane(finding: &Finding) -> String {
    let raw = finding.raised_by.as_deref().unwrap_or(&finding.agent);
    let first = raw.split([',', ' ', '/']).find(|s| !s.is_empty()).unwrap_or("review");
    first.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_').collect::<String>().to_lowercase()
}
