//! Reports of a finished review, built from the stored run (its record and events)
//! and rendered as Markdown, the JSON envelope, SARIF 2.1.0 or reviewdog rdjsonl.
//!
//! **Invariant:** every total in a report is computed from the findings; an agent's
//! own `counts` are only ever compared, never shown as the truth.

mod analyzer_lanes;
mod budget;
mod configuration;
mod envelope;
mod impact;
mod input_fits;
mod markdown;
mod parts;
mod rdjsonl;
mod repeats;
mod review_report;
mod rules;
mod sandboxes;
mod sanitized;
mod sarif;
mod scope;

pub use analyzer_lanes::carry_dropped;
pub use budget::{AgentSpend, BudgetSummary};
pub use input_fits::FittedInput;
pub use parts::{PartFiles, PartsRead};
pub use repeats::{stability_distribution, support_distribution};
pub use review_report::{
    AgentUsage, LoweringSummary, RepeatSummary, ReviewReport, SampledAgent, anchor_counts, fingerprint, gates, lane,
    listed,
};
pub use sandboxes::CommandSandbox;
pub use sanitized::{REPOSITORY_URL_INPUT, links_of_input, sanitize_report};

use conclave_shared::{
    Conclave, CountMismatch, EventKind, Finding, FindingsCheck, NodeKind, NodeOutput, NodeState, RunEvent, RunRecord,
    RunStatus,
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

impl ReviewReport {
    /// Renders the report. The Markdown is sanitized whole once more (its tables put
    /// each text on one line, and it names paths and commits the change chose), and
    /// every format passes the process's redactor last.
    pub fn render(&self, format: ReportFormat) -> String {
        let text = match format {
            ReportFormat::Markdown => crate::inert::sanitize(&markdown::render(self), &self.links),
            ReportFormat::Json => envelope::render(self),
            ReportFormat::Sarif => sarif::render(self),
            ReportFormat::Rdjsonl => rdjsonl::render(self),
        };
        conclave_core::process_redactor().redact(&text)
    }
}

/// Builds the report of a stored run.
pub fn build_report(record: &RunRecord, events: &[RunEvent]) -> ReviewReport {
    let conclave = &record.conclave;
    let result_nodes = result_nodes(conclave);
    let (findings, result, schema_ref) = result_of(record, events, &result_nodes);
    let reviewers: Vec<String> =
        record.nodes.iter().filter(|n| !result_nodes.contains(&n.node_id)).map(|n| n.node_id.clone()).collect();
    let (mut raised, _, _) = result_of(record, events, &reviewers);
    // Analyzer lanes are reviewers too: their findings give support and are compared.
    raised.extend(analyzer_lanes::raised_by_analyzers(record));
    let analyzers = analyzer_lanes::lanes_of(record, &raised);
    let (checks, mismatches, lowerings) = engine_checks(conclave, events);
    let samples = repeats::sampled_agents(record);
    let mut degraded = degraded_nodes(record, events);
    degraded.extend(repeats::failed_samples(&samples));
    let parts = PartsRead::of_run(record);
    degraded.extend(parts.degraded());
    let input_fits = input_fits::of_events(events);
    degraded.extend(input_fits::degraded(&input_fits));
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
        analyzers,
        min_support: 0,
        samples,
        min_stability: 0.0,
        repeat: None,
        budget: budget::budget_of(record, events),
        scope: crate::incremental::Scope::of_input(&record.input),
        rules: crate::rules::RulesRead::of_input(&record.input),
        parts,
        input_fits,
        configuration: crate::configuration::ConfigurationSource::of_input(&record.input),
        dismissals_not_applied: Vec::new(),
        links: links_of_input(&record.input),
        sandboxes: sandboxes::of_events(events),
        impact: crate::impact::ChangeImpact::of_input(&record.input).map(|i| i.record),
    }
}

/// Agents that did not give their output: failed (a provider error, or output still
/// invalid after its retries) or skipped; and a run that failed on no node (the
/// store reported an error, or the run stopped).
fn degraded_nodes(record: &RunRecord, events: &[RunEvent]) -> Vec<String> {
    let mut reasons = agent_failures(record, &budget::stopped_by_budget(events));
    if record.summary.status == RunStatus::Failed && record.summary.failed_node.is_none() {
        reasons.push(format!("the run failed: {}", record.summary.error.as_deref().unwrap_or("no reason given")));
    }
    reasons
}

fn agent_failures(record: &RunRecord, stopped_by_budget: &[&str]) -> Vec<String> {
    record
        .nodes
        .iter()
        .filter(|n| record.conclave.node(&n.node_id).is_some_and(|node| node.kind == NodeKind::Agent))
        .filter_map(|n| match n.state {
            NodeState::Failed if stopped_by_budget.contains(&n.node_id.as_str()) => Some(format!(
                "agent `{}` did not run to the end: a call of it did not fit in the budget ({})",
                n.node_id,
                n.error.as_deref().unwrap_or("no reason given")
            )),
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
    let input = &record.input;
    let list = input.get(crate::diff::OMITTED_RECORD_KEY).or_else(|| input.get(crate::diff::OMITTED_KEY));
    let Some(list) = list.and_then(Value::as_array) else { return Vec::new() };
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
            let summary = record.nodes.iter().find(|s| s.node_id == n.id)?;
            Some(AgentUsage {
                node_id: n.id.clone(),
                provider: agent.provider.clone(),
                model: agent.model.clone(),
                usage: summary.usage.clone()?,
                cached_from: summary.cached_from.clone(),
            })
        })
        .collect()
}
