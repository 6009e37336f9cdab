//! SARIF 2.1.0 logs, read with the `serde-sarif` types, as output in the findings
//! shape (`review.findings.v1`): one finding per result that reports a problem, file
//! and line from its first physical location, the rule id leading the description,
//! and `raisedBy` the node that ran the analyzer. Its level is the result's, else
//! its rule's default configuration (Semgrep writes levels only there), else
//! `warning`, as SARIF says; the lane's severity map grades it (`grade.rs`), else a
//! result's `severity` property, else the level: `error` blocker, `warning` major,
//! `note` minor, `none` nit, the inverse of the levels Conclave writes.

use conclave_shared::{Severity, SeverityMap};
use serde_json::Value;
use serde_sarif::sarif::{ReportingDescriptor, Result as SarifResult, ResultKind, ResultLevel, Sarif};

use crate::grade::{self, Raised};

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

/// The findings of every run of the log in `text`, raised by `node_id`, graded by
/// `map` when given, with their counts per severity.
pub fn findings(text: &str, node_id: &str, map: Option<&SeverityMap>) -> Result<Value, SarifError> {
    let log: Sarif = serde_json::from_str(text).map_err(|e| SarifError::NotSarif(e.to_string()))?;
    match log.version.as_str() {
        Some("2.1.0") => {}
        other => return Err(SarifError::Version(other.map_or_else(|| log.version.to_string(), str::to_string))),
    }
    let mut raised = Vec::new();
    for run in &log.runs {
        let rules = run.tool.driver.rules.as_deref().unwrap_or_default();
        raised.extend(run.results.iter().flatten().filter(|r| reports_a_problem(r)).map(|r| read(r, rules)));
    }
    Ok(grade::findings(raised, node_id, map, severity_of_level))
}

/// The reader's table: a level's severity.
fn severity_of_level(level: &str) -> Severity {
    match level {
        "error" => Severity::Blocker,
        "note" => Severity::Minor,
        "none" => Severity::Nit,
        _ => Severity::Major,
    }
}

/// Whether a result is a problem found (kind `fail`, the default), not a check
/// that passed or did not apply.
fn reports_a_problem(result: &SarifResult) -> bool {
    matches!(result.kind, None | Some(ResultKind::Fail))
}

fn read(result: &SarifResult, rules: &[ReportingDescriptor]) -> Raised {
    let stated = result
        .properties
        .as_ref()
        .and_then(|p| p.additional_properties.get("severity"))
        .and_then(Value::as_str)
        .and_then(Severity::parse);
    let place = result.locations.iter().flatten().find_map(|l| l.physical_location.as_ref());
    let file = place
        .and_then(|p| p.artifact_location.as_ref()?.uri.as_deref())
        .map(|uri| uri.strip_prefix("file://").unwrap_or(uri).trim_start_matches("./").to_string())
        .unwrap_or_default();
    let line = place.and_then(|p| p.region.as_ref()?.start_line).and_then(|l| u64::try_from(l).ok()).unwrap_or(1);
    let message = result.message.text.clone().or_else(|| result.message.id.clone()).unwrap_or_default();
    let rule = result.rule_id.clone().or_else(|| result.rule.as_ref()?.id.clone());
    Raised { level: level(result, rules, rule.as_deref()), rule, stated, file, line, message }
}

/// A result's level: its own, else its rule's default configuration (found by the
/// result's rule index, else by id), else SARIF's default, `warning`.
fn level(result: &SarifResult, rules: &[ReportingDescriptor], rule_id: Option<&str>) -> String {
    let own = result.level.as_ref().map(|level| match level {
        ResultLevel::Error => "error",
        ResultLevel::Warning => "warning",
        ResultLevel::Note => "note",
        ResultLevel::None => "none",
    });
    let index = result.rule_index.or_else(|| result.rule.as_ref()?.index).and_then(|i| usize::try_from(i).ok());
    let descriptor = index.and_then(|i| rules.get(i)).or_else(|| rules.iter().find(|r| Some(r.id.as_str()) == rule_id));
    let configured = descriptor
        .and_then(|d| d.default_configuration.as_ref()?.level.as_ref()?.as_str())
        .filter(|l| matches!(*l, "error" | "warning" | "note" | "none"));
    own.or(configured).unwrap_or("warning").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
        let out = findings(&log.to_string(), "lint", None).expect("reads");
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
        assert!(matches!(findings("not json", "n", None), Err(SarifError::NotSarif(_))));
        let old = json!({"version": "2.0.0", "runs": []}).to_string();
        assert_eq!(findings(&old, "n", None), Err(SarifError::Version("2.0.0".into())));
    }

    /// `semgrep scan --sarif --no-rewrite-rule-ids --config <Conclave's pack>`
    /// (Semgrep 1.185.0) on a file with an SQL query built by an f-string and a
    /// `subprocess.run` whose status nobody reads: Semgrep writes no level on its
    /// results, only on its rules' default configuration.
    const SEMGREP: &str = include_str!("../../../tests/fixtures/analyzers/semgrep.sarif");

    #[test]
    fn a_result_without_a_level_takes_its_rules_default_configuration() {
        let out = findings(SEMGREP, "semgrep", None).expect("reads");
        let seen: Vec<(&str, &str, u64)> = out["findings"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|f| {
                (
                    f["severity"].as_str().unwrap_or(""),
                    f["file"].as_str().unwrap_or(""),
                    f["line"].as_u64().unwrap_or(0),
                )
            })
            .collect();
        assert_eq!(seen, [("blocker", "app.py", 5), ("minor", "app.py", 6)], "ERROR is blocker, INFO (note) minor");
        let description = out["findings"][0]["description"].as_str().unwrap_or_default();
        assert!(description.starts_with("[python.sql-built-from-strings] SQL built from strings"), "{description}");
        let map = SeverityMap { levels: [("error".to_string(), Severity::Major)].into(), ..SeverityMap::default() };
        let graded = findings(SEMGREP, "semgrep", Some(&map)).expect("reads");
        assert_eq!(graded["findings"][0]["severity"], "major", "a lane's map grades the rule's level");
    }
}
