//! ShellCheck's `json1` report (`shellcheck -f json1`) read as output in the findings
//! shape (`review.findings.v1`): one finding per comment, at its file and line, the
//! check's code (`SC2086`) leading the description, its severity from the comment's
//! level (`error` major, `warning` and `info` minor, `style` nit), and `raisedBy` the
//! node that ran ShellCheck.

use serde::Deserialize;
use serde_json::{Value, json};

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

/// The findings of the report in `text`, raised by `node_id`, with their counts. An
/// empty stdout is a report without comments (ShellCheck prints `{"comments":[]}`,
/// but an empty file list prints nothing).
pub fn findings(text: &str, node_id: &str) -> Result<Value, ShellcheckError> {
    if text.trim().is_empty() {
        return Ok(findings_document(Vec::new()));
    }
    let report: Report = serde_json::from_str(text).map_err(|e| ShellcheckError(e.to_string()))?;
    let findings = report
        .comments
        .iter()
        .map(|c| {
            let severity = match c.level.as_str() {
                "error" => "major",
                "style" => "nit",
                _ => "minor",
            };
            json!({"severity": severity, "file": c.file.trim_start_matches("./"), "line": c.line.max(1),
                "description": format!("[SC{}] {}", c.code, c.message), "raisedBy": node_id})
        })
        .collect();
    Ok(findings_document(findings))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `shellcheck -f json1 deploy.sh` (ShellCheck 0.9.0) on a script whose line 3 is
    /// `rm -rf $dir/build `.
    const CAPTURED: &str = include_str!("../../../tests/fixtures/analyzers/shellcheck.json1");

    #[test]
    fn each_comment_of_a_real_report_is_a_finding_with_its_code() {
        let out = findings(CAPTURED, "shellcheck").expect("reads");
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
        let out = findings(&text.to_string(), "sc").expect("reads");
        assert_eq!(out["findings"][0]["severity"], "major");
        assert_eq!(out["findings"][0]["file"], "a.sh");
        assert_eq!(out["findings"][1]["severity"], "nit");
        assert_eq!(findings("", "sc").expect("empty")["findings"], json!([]));
        let err = findings("In a.sh line 3:", "sc").expect_err("gcc-style text is not json1");
        assert!(err.to_string().starts_with("stdout is not a ShellCheck json1 report"), "{err}");
    }
}
