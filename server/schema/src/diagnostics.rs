//! Compiler-style diagnostics read as output in the findings shape: each line
//! `path:line[:column]: message` (gcc and clang, `rustc --error-format short`,
//! shellcheck's `gcc` format, eslint's `unix` format, `git diff --check`) is one
//! finding; other lines (the offending code some tools print) are left out. Its
//! level is the message's first word when that is `error`, `warning` or `note`, else
//! `other`; the lane's severity map grades it (`grade.rs`), else `error` is major and
//! anything else minor. The file and line are the line's, `raisedBy` is the node
//! that ran the tool.

use conclave_shared::{Severity, SeverityMap};
use serde_json::Value;

use crate::grade::{self, Raised};

/// The findings of the diagnostics in `text`, raised by `node_id`, graded by `map`
/// when given, with their counts.
pub fn findings(text: &str, node_id: &str, map: Option<&SeverityMap>) -> Value {
    grade::findings(text.lines().filter_map(raised).collect(), node_id, map, severity_of_level)
}

/// The reader's table: `error` major, anything else minor.
fn severity_of_level(level: &str) -> Severity {
    if level == "error" { Severity::Major } else { Severity::Minor }
}

/// A message's level: its first word when that is a compiler's level.
fn level_of(message: &str) -> &'static str {
    let lower = message.to_ascii_lowercase();
    let word = lower.split(|c: char| !c.is_ascii_alphabetic()).next().unwrap_or_default();
    match word {
        "error" | "fatal" => "error",
        "warning" => "warning",
        "note" => "note",
        _ => "other",
    }
}

/// One line as a problem raised, when it is `path:line[:column]: message`.
fn raised(line: &str) -> Option<Raised> {
    let (file, rest) = line.split_once(':')?;
    let (number, rest) = rest.split_once(':')?;
    let line_number: u64 = number.trim().parse().ok().filter(|&n| n >= 1)?;
    // An optional column comes next.
    let message = match rest.split_once(':') {
        Some((column, message)) if column.trim().parse::<u64>().is_ok() => message,
        _ => rest,
    };
    let message = message.trim();
    if file.trim().is_empty() || file.contains(char::is_whitespace) || message.is_empty() {
        return None;
    }
    Some(Raised {
        level: level_of(message).to_string(),
        rule: None,
        stated: None,
        file: file.trim_start_matches("./").to_string(),
        line: line_number,
        message: message.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_diagnostic_line_is_a_finding_and_the_rest_is_left_out() {
        let text = "src/a.rs:3: trailing whitespace.\n+let x = 1;   \n./lib/b.c:10:5: error: use of undeclared identifier 'y'\n\
                    lib/b.c:12:1: warning: unused variable\nnot a diagnostic: at all\nREADME.md:0: zero is no line\n";
        let out = findings(text, "lint", None);
        assert_eq!(
            out["findings"],
            json!([
                {"severity": "minor", "file": "src/a.rs", "line": 3, "description": "trailing whitespace.", "raisedBy": "lint"},
                {"severity": "major", "file": "lib/b.c", "line": 10, "description": "error: use of undeclared identifier 'y'", "raisedBy": "lint"},
                {"severity": "minor", "file": "lib/b.c", "line": 12, "description": "warning: unused variable", "raisedBy": "lint"}
            ])
        );
        assert_eq!(out["counts"], json!({"blocker": 0, "major": 1, "minor": 2, "nit": 0}));
        assert_eq!(findings("", "lint", None)["findings"], json!([]));
    }
}
