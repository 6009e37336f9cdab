//! Compiler-style diagnostics read as output in the findings shape: each line
//! `path:line[:column]: message` (gcc and clang, `rustc --error-format short`,
//! shellcheck's `gcc` format, eslint's `unix` format, `git diff --check`) is one
//! finding; other lines (the offending code some tools print) are left out. A
//! message that starts `error` is major, anything else minor; the file and line
//! are the line's, `raisedBy` is the node that ran the tool.

use serde_json::{Value, json};

use crate::shape::findings_document;

/// The findings of the diagnostics in `text`, raised by `node_id`, with their counts.
pub fn findings(text: &str, node_id: &str) -> Value {
    findings_document(text.lines().filter_map(|line| finding(line, node_id)).collect())
}

/// One line as a finding, when it is `path:line[:column]: message`.
fn finding(line: &str, node_id: &str) -> Option<Value> {
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
    let severity = if message.to_ascii_lowercase().starts_with("error") { "major" } else { "minor" };
    Some(json!({"severity": severity, "file": file.trim_start_matches("./"), "line": line_number,
        "description": message, "raisedBy": node_id}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_diagnostic_line_is_a_finding_and_the_rest_is_left_out() {
        let text = "src/a.rs:3: trailing whitespace.\n+let x = 1;   \n./lib/b.c:10:5: error: use of undeclared identifier 'y'\n\
                    lib/b.c:12:1: warning: unused variable\nnot a diagnostic: at all\nREADME.md:0: zero is no line\n";
        let out = findings(text, "lint");
        assert_eq!(
            out["findings"],
            json!([
                {"severity": "minor", "file": "src/a.rs", "line": 3, "description": "trailing whitespace.", "raisedBy": "lint"},
                {"severity": "major", "file": "lib/b.c", "line": 10, "description": "error: use of undeclared identifier 'y'", "raisedBy": "lint"},
                {"severity": "minor", "file": "lib/b.c", "line": 12, "description": "warning: unused variable", "raisedBy": "lint"}
            ])
        );
        assert_eq!(out["counts"], json!({"blocker": 0, "major": 1, "minor": 2, "nit": 0}));
        assert_eq!(findings("", "lint")["findings"], json!([]));
    }
}
