//! Cargo's JSON messages (`cargo clippy --message-format json`, one JSON object a
//! line) read as output in the findings shape (`review.findings.v1`): each compiler
//! message with a primary span is one finding at that span's file and first line,
//! the lint's code (`clippy::needless_return`) leading the description, graded by
//! the lane's severity map (`grade.rs`), else `error` major and anything else
//! minor, and `raisedBy` the node that ran Cargo. Lines that
//! are not compiler messages (artifacts, build scripts, the build's end) and
//! messages without a span (the error count) are left out; the same message for
//! several targets of one crate counts once.

use conclave_shared::{Severity, SeverityMap};
use serde::Deserialize;
use serde_json::Value;

use crate::grade::{self, Raised};

#[derive(Deserialize)]
struct Line {
    reason: String,
    message: Option<Message>,
}

#[derive(Deserialize)]
struct Message {
    message: String,
    level: String,
    code: Option<Code>,
    #[serde(default)]
    spans: Vec<Span>,
}

#[derive(Deserialize)]
struct Code {
    code: String,
}

#[derive(Deserialize)]
struct Span {
    file_name: String,
    line_start: u64,
    is_primary: bool,
}

/// The findings of the messages in `text`, raised by `node_id`, graded by `map` when
/// given, with their counts. Lines that are not JSON (a build's plain output mixed
/// in) are skipped.
pub fn findings(text: &str, node_id: &str, map: Option<&SeverityMap>) -> Value {
    let mut raised: Vec<Raised> = Vec::new();
    for line in text.lines().filter(|l| l.trim_start().starts_with('{')) {
        let Ok(Line { reason, message: Some(message) }) = serde_json::from_str::<Line>(line) else { continue };
        if reason != "compiler-message" {
            continue;
        }
        let Some(span) = message.spans.iter().find(|s| s.is_primary) else { continue };
        raised.push(Raised {
            level: message.level.clone(),
            rule: message.code.as_ref().map(|code| code.code.clone()),
            stated: None,
            file: span.file_name.trim_start_matches("./").to_string(),
            line: span.line_start,
            message: message.message.clone(),
        });
    }
    grade::findings(raised, node_id, map, severity_of_level)
}

/// The reader's table: `error` major, anything else minor.
fn severity_of_level(level: &str) -> Severity {
    if level == "error" { Severity::Major } else { Severity::Minor }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `cargo clippy --message-format json` (clippy 0.1.95) on a small crate with a
    /// denied lint (`eq_op`), two warned ones and dead code.
    const CAPTURED: &str = include_str!("../../../tests/fixtures/analyzers/clippy.jsonl");

    #[test]
    fn each_message_of_a_real_run_is_a_finding_at_its_primary_span() {
        let out = findings(CAPTURED, "clippy", None);
        let seen: Vec<(String, u64, String)> = out["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .map(|f| {
                let text = f["description"].as_str().unwrap_or_default();
                (f["severity"].as_str().unwrap_or_default().to_string(), f["line"].as_u64().unwrap_or(0), text.into())
            })
            .collect();
        assert_eq!(
            seen,
            [
                ("minor".to_string(), 7, "[dead_code] function `f` is never used".to_string()),
                ("major".to_string(), 3, "[clippy::eq_op] equal expressions as operands to `==`".to_string()),
                ("minor".to_string(), 8, "[clippy::needless_return] unneeded `return` statement".to_string()),
                (
                    "minor".to_string(),
                    7,
                    "[clippy::ptr_arg] writing `&Vec` instead of `&[_]` involves a new object where a slice will do"
                        .to_string()
                ),
            ]
        );
        assert!(out["findings"].as_array().into_iter().flatten().all(|f| f["file"] == "src/main.rs"));
        assert_eq!(out["counts"], json!({"blocker": 0, "major": 1, "minor": 3, "nit": 0}));
    }

    #[test]
    fn other_lines_and_repeats_are_left_out() {
        let message = json!({"reason": "compiler-message", "message": {"message": "m", "level": "warning",
            "code": null, "spans": [{"file_name": "src/a.rs", "line_start": 4, "is_primary": true}]}})
        .to_string();
        let no_span =
            json!({"reason": "compiler-message", "message": {"message": "aborting", "level": "error", "spans": []}});
        let text = format!("{message}\n{message}\n{no_span}\nCompiling fx\n{}\n", json!({"reason": "build-finished"}));
        let out = findings(&text, "clippy", None);
        assert_eq!(
            out["findings"],
            json!([{"severity": "minor", "file": "src/a.rs", "line": 4, "description": "m", "raisedBy": "clippy"}])
        );
    }
}
