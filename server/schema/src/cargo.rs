//! Cargo's JSON messages (`cargo clippy --message-format json`, one JSON object a
//! line) read as output in the findings shape (`review.findings.v1`): each compiler
//! message with a primary span is one finding at that span's file and first line,
//! the lint's code (`clippy::needless_return`) leading the description, `error`
//! major and anything else minor, and `raisedBy` the node that ran Cargo. Lines that
//! are not compiler messages (artifacts, build scripts, the build's end) and
//! messages without a span (the error count) are left out; the same message for
//! several targets of one crate counts once.

use serde::Deserialize;
use serde_json::{Value, json};

use crate::shape::findings_document;

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

/// The findings of the messages in `text`, raised by `node_id`, with their counts.
/// Lines that are not JSON (a build's plain output mixed in) are skipped.
pub fn findings(text: &str, node_id: &str) -> Value {
    let mut findings: Vec<Value> = Vec::new();
    for line in text.lines().filter(|l| l.trim_start().starts_with('{')) {
        let Ok(Line { reason, message: Some(message) }) = serde_json::from_str::<Line>(line) else { continue };
        if reason != "compiler-message" {
            continue;
        }
        let Some(span) = message.spans.iter().find(|s| s.is_primary) else { continue };
        let severity = if message.level == "error" { "major" } else { "minor" };
        let description = match &message.code {
            Some(code) => format!("[{}] {}", code.code, message.message),
            None => message.message.clone(),
        };
        let finding = json!({"severity": severity, "file": span.file_name.trim_start_matches("./"),
            "line": span.line_start.max(1), "description": description, "raisedBy": node_id});
        if !findings.contains(&finding) {
            findings.push(finding);
        }
    }
    findings_document(findings)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `cargo clippy --message-format json` (clippy 0.1.95) on a small crate with a
    /// denied lint (`eq_op`), two warned ones and dead code.
    const CAPTURED: &str = include_str!("../../../tests/fixtures/analyzers/clippy.jsonl");

    #[test]
    fn each_message_of_a_real_run_is_a_finding_at_its_primary_span() {
        let out = findings(CAPTURED, "clippy");
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
        let out = findings(&text, "clippy");
        assert_eq!(
            out["findings"],
            json!([{"severity": "minor", "file": "src/a.rs", "line": 4, "description": "m", "raisedBy": "clippy"}])
        );
    }
}
