//! SARIF 2.1.0: one result per concern (approvals are not problems), blocker as
//! `error`, major as `warning`, minor and nit as `note` with the original severity in
//! `properties`, a rule per lane and severity, and line-independent fingerprints
//! of the code a finding points at, with its anchor state in `properties`.

use conclave_shared::{Finding, Severity, Stance};
use serde_json::{Value, json};
use std::collections::BTreeMap;

use super::review_report::{ReviewReport, fingerprint, lane};

/// A dismissed finding's SARIF suppression: external (the repository's dismissals
/// file), accepted, with the reason as justification.
fn suppressions(f: &Finding) -> Value {
    match &f.dismissed {
        Some(d) => json!([{
            "kind": "external",
            "status": "accepted",
            "justification": d.reason,
            "properties": {"author": d.author, "file": crate::dismissals::FILE}
        }]),
        None => json!([]),
    }
}

fn level(severity: Option<Severity>) -> &'static str {
    match severity {
        Some(Severity::Blocker) => "error",
        Some(Severity::Major) => "warning",
        _ => "note",
    }
}

pub(super) fn render(report: &ReviewReport) -> String {
    let concerns: Vec<_> = report.findings.iter().filter(|f| f.effective_stance() == Stance::Concern).collect();
    // Findings of the baseline that are gone are results too, marked absent.
    let absent: Vec<&Finding> = report.absent.iter().filter(|f| f.effective_stance() == Stance::Concern).collect();
    let mut rules: BTreeMap<String, (String, Option<Severity>)> = BTreeMap::new();
    for f in concerns.iter().chain(&absent) {
        let id = format!("{}/{}", lane(f), f.severity.map_or("unrated", |s| s.as_str()));
        rules.entry(id).or_insert_with(|| (lane(f), f.severity));
    }
    let rule_ids: Vec<&String> = rules.keys().collect();
    let rule_values: Vec<Value> = rules
        .iter()
        .map(|(id, (lane, severity))| {
            let severity_name = severity.map_or("unrated", |s| s.as_str());
            json!({
                "id": id,
                "name": format!("{}{}", capitalize(lane), capitalize(severity_name)),
                "shortDescription": {"text": format!("{severity_name} finding from the {lane} reviewer")},
                "defaultConfiguration": {"level": level(*severity)},
                "properties": {"lane": lane, "severity": severity_name}
            })
        })
        .collect();
    let results: Vec<Value> = concerns
        .iter()
        .chain(&absent)
        .map(|f| {
            let id = format!("{}/{}", lane(f), f.severity.map_or("unrated", |s| s.as_str()));
            let index = rule_ids.iter().position(|r| **r == id).unwrap_or(0);
            let mut result = json!({
                "ruleId": id,
                "ruleIndex": index,
                "level": level(f.severity),
                "message": {"text": f.description},
                "locations": [{"physicalLocation": {
                    "artifactLocation": {"uri": f.file, "uriBaseId": "SRCROOT"},
                    "region": {"startLine": f.line}
                }}],
                "partialFingerprints": {"conclaveFinding/v2": fingerprint(f)},
                "suppressions": suppressions(f),
                "properties": {
                    "severity": f.severity.map_or("unrated", |s| s.as_str()),
                    "raisedBy": f.raised_by.clone().unwrap_or_else(|| f.agent.clone()),
                    "agent": f.agent,
                    "anchor": f.anchor.map(|a| a.as_str()),
                    "citedLine": f.cited_line,
                    "support": f.support,
                    "stability": f.stability.map(|s| s.to_string()),
                    "evidence": f.evidence
                }
            });
            // Only a review compared with a baseline says how each result compares.
            if let (Some(state), Some(object)) = (f.baseline, result.as_object_mut()) {
                object.insert("baselineState".into(), json!(state.as_str()));
            }
            result
        })
        .collect();
    let doc = json!({
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "Conclave",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rule_values
            }},
            "automationDetails": {"id": format!("conclave/{}/{}", report.conclave.0, report.run_id)},
            "results": results,
            "properties": run_properties(report)
        }]
    });
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    text.push('\n');
    text
}

/// The run's properties: how it ended, and which side configured it.
fn run_properties(report: &ReviewReport) -> Value {
    let mut properties = json!({
        "status": report.status.as_str(),
        "contradictions": report.contradictions().count(),
        "degraded": !report.degraded.is_empty(),
        "degradedReasons": report.degraded
    });
    if let (Some(configuration), Some(object)) = (super::configuration::json(report), properties.as_object_mut()) {
        object.insert("configuration".into(), configuration);
    }
    properties
}

fn capitalize(s: &str) -> String {
    let mut chars = s.chars();
    chars.next().map_or_else(String::new, |c| c.to_uppercase().collect::<String>() + chars.as_str())
}
