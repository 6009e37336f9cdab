//! SARIF 2.1.0 logs, read with the `serde-sarif` types, as output in the findings
//! shape (`review.findings.v1`): one finding per result that reports a problem, its
//! severity from the result's level (`error` blocker, `warning` major, `note` minor,
//! `none` nit, the inverse of the levels Conclave writes; a `severity` property wins),
//! file and line from its first physical location, the rule id leading the
//! description, and `raisedBy` the node that ran the analyzer.

use conclave_shared::Severity;
use serde_json::{Value, json};
use serde_sarif::sarif::{Result as SarifResult, ResultKind, ResultLevel, Sarif};

use crate::shape::findings_document;

/// Why a log could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SarifError {
    /// The text is not a SARIF log.
    #[error("stdout is not a SARIF 2.1.0 log: {0}")]
    NotSarif(String),
    /// Another version.
    #[error("stdout is a SARIF {0} log; only version 2.1.0 is read")]
    Version(String),
}

/// The findings of every run of the log in `text`, raised by `node_id`, with their
/// counts per severity.
pub fn findings(text: &str, node_id: &str) -> Result<Value, SarifError> {
    let log: Sarif = serde_json::from_str(text).map_err(|e| SarifError::NotSarif(e.to_string()))?;
    match log.version.as_str() {
        Some("2.1.0") => {}
        other => return Err(SarifError::Version(other.map_or_else(|| log.version.to_string(), str::to_string))),
    }
    let findings: Vec<Value> = log
        .runs
        .iter()
        .flat_map(|run| run.results.iter().flatten())
        .filter(|result| reports_a_problem(result))
        .map(|result| finding(result, node_id))
        .collect();
    Ok(findings_document(findings))
}

/// Whether a result is a problem found (kind `fail`, the default), not a check
/// that passed or did not apply.
fn reports_a_problem(result: &SarifResult) -> bool {
    matches!(result.kind, None | Some(ResultKind::Fail))
}

fn finding(result: &SarifResult, node_id: &str) -> Value {
    let severity = result
        .properties
        .as_ref()
        .and_then(|p| p.additional_properties.get("severity"))
        .and_then(Value::as_str)
        .filter(|s| Severity::parse(s).is_some())
        .unwrap_or(match result.level {
            Some(ResultLevel::Error) => "blocker",
            // SARIF's default level is `warning`.
            Some(ResultLevel::Warning) | None => "major",
            Some(ResultLevel::Note) => "minor",
            Some(ResultLevel::None) => "nit",
        });
    let place = result.locations.iter().flatten().find_map(|l| l.physical_location.as_ref());
    let file = place
        .and_then(|p| p.artifact_location.as_ref()?.uri.as_deref())
        .map(|uri| uri.strip_prefix("file://").unwrap_or(uri).trim_start_matches("./").to_string())
        .unwrap_or_default();
    let line = place.and_then(|p| p.region.as_ref()?.start_line).filter(|&l| l >= 1).unwrap_or(1);
    let text = result.message.text.clone().or_else(|| result.message.id.clone()).unwrap_or_default();
    let rule = result.rule_id.as_deref().or_else(|| result.rule.as_ref()?.id.as_deref());
    let description = match rule {
        Some(rule) if !text.is_empty() => format!("[{rule}] {text}"),
        Some(rule) => format!("[{rule}]"),
        None => text,
    };
    json!({"severity": severity, "file": file, "line": line, "description": description, "raisedBy": node_id})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_become_findings_with_severity_place_and_rule() {
        let log = json!({
            "version": "2.1.0",
            "runs": [{
                "tool": {"driver": {"name": "lint"}},
                "results": [
                    {"ruleId": "E1", "level": "error", "message": {"text": "unsafe call"},
                     "locations": [{"physicalLocation": {"artifactLocation": {"uri": "src/a.rs"}, "region": {"startLine": 7}}}]},
                    {"ruleId": "W2", "message": {"text": "long line"},
                     "locations": [{"physicalLocation": {"artifactLocation": {"uri": "file://src/b.rs"}}}]},
                    {"ruleId": "N3", "level": "note", "message": {"text": "style"}, "properties": {"severity": "nit"}},
                    {"ruleId": "P4", "kind": "pass", "message": {"text": "checked"}}
                ]
            }]
        });
        let out = findings(&log.to_string(), "lint").expect("reads");
        assert_eq!(
            out["findings"],
            json!([
                {"severity": "blocker", "file": "src/a.rs", "line": 7, "description": "[E1] unsafe call", "raisedBy": "lint"},
                {"severity": "major", "file": "src/b.rs", "line": 1, "description": "[W2] long line", "raisedBy": "lint"},
                {"severity": "nit", "file": "", "line": 1, "description": "[N3] style", "raisedBy": "lint"}
            ])
        );
        assert_eq!(out["counts"], json!({"blocker": 1, "major": 1, "minor": 0, "nit": 1}));
    }

    #[test]
    fn other_text_and_other_versions_are_refused() {
        assert!(matches!(findings("not json", "n"), Err(SarifError::NotSarif(_))));
        let old = json!({"version": "2.0.0", "runs": []}).to_string();
        assert_eq!(findings(&old, "n"), Err(SarifError::Version("2.0.0".into())));
    }
}
