//! ShellCheck's `json1` report (`shellcheck -f json1`) read as output in the findings
//! shape (`review.findings.v1`): one finding per comment, at its file and line, the
//! check's code (`SC2086`) leading the description, its severity from the lane's
//! severity map (`grade.rs`), else from the comment's level (`error` major, `warning`
//! and `info` minor, `style` nit), and `raisedBy` the node that ran ShellCheck.

use conclave_shared::{Severity, SeverityMap};
use serde::Deserialize;
use serde_json::Value;

use crate::grade::{self, Raised};
use crate::shape::findings_document;

/// Why a report could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("stdout is not a ShellCheck json1 report (`shellcheck -f json1`): {0}")]
pub struct ShellcheckError(String);

#[derive(Deserialize)]
struct Report {
    comments: Vec<Comment>,
}

#[derive(Deserialize)]
struct Comment {
    file: String,
    line: u64,
    level: String,
    code: u64,
    message: String,
}

/// The findings of the report in `text`, raised by `node_id`, graded by `map` when
/// given, with their counts. An empty stdout is a report without comments
/// (ShellCheck prints `{"comments":[]}`, but an empty file list prints nothing).
pub fn findings(text: &str, node_id: &str, map: Option<&SeverityMap>) -> Result<Value, ShellcheckError> {
    if text.trim().is_empty() {
        return Ok(findings_document(Vec::new()));
    }
    let report: Report = serde_json::from_str(text).map_err(|e| ShellcheckError(e.to_string()))?;
    let raised = report
        .comments
        .into_iter()
        .map(|c| Raised {
            level: c.level,
            rule: Some(format!("SC{}", c.code)),
            stated: None,
            file: c.file.trim_start_matches("./").to_string(),
            line: c.line,
            message: c.message,
        })
        .collect();
    Ok(grade::findings(raised, node_id, map, severity_of_level))
}

/// The reader's table: a comment level's severity.
fn severity_of_level(level: &str) -> Severity {
    match level {
        "error" => Severity::Major,
        "style" => Severity::Nit,
        _ => Severity::Minor,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `shellcheck -f json1 deploy.sh` (ShellCheck 0.9.0) on a script whose line 3 is
    /// `rm -rf $dir/build `.
    const CAPTURED: &str = include_str!("../../../tests/fixtures/analyzers/shellcheck.json1");

    #[test]
    fn each_comment_of_a_real_report_is_a_finding_with_its_code() {
        let out = findings(CAPTURED, "shellcheck", None).expect("reads");
        assert_eq!(
            out["findings"],
            json!([{"severity": "minor", "file": "deploy.sh", "line": 3,
                "description": "[SC2086] Double quote to prevent globbing and word splitting.", "raisedBy": "shellcheck"}])
        );
        assert_eq!(out["counts"], json!({"blocker": 0, "major": 0, "minor": 1, "nit": 0}));
    }

    #[test]
    fn levels_map_to_severities_and_other_text_is_refused() {
        let text = json!({"comments": [
            {"file": "./a.sh", "line": 2, "level": "error", "code": 1009, "message": "parse"},
            {"file": "a.sh", "line": 5, "level": "style", "code": 2001, "message": "sed"}
        ]});
        let out = findings(&text.to_string(), "sc", None).expect("reads");
        assert_eq!(out["findings"][0]["severity"], "major");
        assert_eq!(out["findings"][0]["file"], "a.sh");
        assert_eq!(out["findings"][1]["severity"], "nit");
        assert_eq!(findings("", "sc", None).expect("empty")["findings"], json!([]));
        let err = findings("In a.sh line 3:", "sc", None).expect_err("gcc-style text is not json1");
        assert!(err.to_string().starts_with("stdout is not a ShellCheck json1 report"), "{err}");
    }
}
