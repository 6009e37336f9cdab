//! Grading what an analyzer's report raised: each reader (`sarif.rs`,
//! `diagnostics.rs`, `shellcheck.rs`, `cargo.rs`) turns its tool's output into
//! [`Raised`] items (the tool's level and rule id kept apart), and [`findings`] gives
//! each its severity, from the lane's [`SeverityMap`] when it has one, else from the
//! reader's own table, as output in the findings shape (`review.findings.v1`). The
//! same finding raised twice (a tool that reports one match once per pattern) counts
//! once.

use conclave_shared::{Severity, SeverityMap};
use serde_json::{Value, json};

use crate::shape::findings_document;

/// One problem a tool reported, before it is graded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Raised {
    /// The tool's level, as the reader names it (`error`, `warning`, ...).
    pub level: String,
    /// The tool's rule id (`F401`, `SC2086`, `clippy::eq_op`), when it gave one.
    pub rule: Option<String>,
    /// A severity the tool stated itself (a SARIF result's `severity` property).
    pub stated: Option<Severity>,
    /// The file, relative to where the tool ran when it wrote it so.
    pub file: String,
    /// The line, from 1.
    pub line: u64,
    /// The message; [`findings`] puts the rule id before it.
    pub message: String,
}

/// How a reader grades a finding whose lane has no map (or whose map has no
/// default and names neither its rule nor its level): from the tool's level.
pub type ReaderTable = fn(&str) -> Severity;

/// The findings of `raised`, raised by `node_id`, graded by `map` when given and
/// by `table` where the map (or the tool's own statement) says nothing, with their
/// counts per severity.
pub fn findings(raised: Vec<Raised>, node_id: &str, map: Option<&SeverityMap>, table: ReaderTable) -> Value {
    let mut findings: Vec<Value> = Vec::with_capacity(raised.len());
    for item in raised {
        let fallback = table(&item.level);
        let severity = match map {
            Some(map) => map.grade(item.rule.as_deref(), &item.level, item.stated, fallback),
            None => item.stated.unwrap_or(fallback),
        };
        let description = match (&item.rule, item.message.is_empty()) {
            (Some(rule), false) => format!("[{rule}] {}", item.message),
            (Some(rule), true) => format!("[{rule}]"),
            (None, _) => item.message,
        };
        let finding = json!({"severity": severity.as_str(), "file": item.file, "line": item.line.max(1),
            "description": description, "raisedBy": node_id});
        if !findings.contains(&finding) {
            findings.push(finding);
        }
    }
    findings_document(findings)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raised(level: &str, rule: Option<&str>, stated: Option<Severity>) -> Raised {
        Raised {
            level: level.into(),
            rule: rule.map(str::to_string),
            stated,
            file: "a.py".into(),
            line: 3,
            message: "m".into(),
        }
    }

    fn table(level: &str) -> Severity {
        if level == "error" { Severity::Blocker } else { Severity::Minor }
    }

    #[test]
    fn a_map_grades_over_the_tools_statement_and_the_readers_table() {
        let items = vec![raised("error", Some("F401"), None), raised("error", None, Some(Severity::Nit))];
        let bare = findings(items.clone(), "lane", None, table);
        let severities = |v: &Value| -> Vec<String> {
            v["findings"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|f| f["severity"].as_str().unwrap_or("").into())
                .collect()
        };
        assert_eq!(severities(&bare), ["blocker", "nit"], "without a map: the statement, else the table");
        let ruff = findings(items, "lane", Some(&SeverityMap::ruff()), table);
        assert_eq!(severities(&ruff), ["major", "nit"], "F is major; no rule id: the statement beats the default");
        assert_eq!(ruff["findings"][0]["description"], "[F401] m");
        assert_eq!(ruff["counts"], json!({"blocker": 0, "major": 1, "minor": 0, "nit": 1}));
    }

    #[test]
    fn the_same_finding_raised_twice_counts_once() {
        let items = vec![raised("error", Some("R"), None), raised("error", Some("R"), None)];
        let out = findings(items, "lane", None, table);
        assert_eq!(out["findings"].as_array().map(Vec::len), Some(1));
    }
}
