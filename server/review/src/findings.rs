//! Findings-shaped outputs: reading findings out of an output, normalizing their
//! paths, and checking declared counts. Which outputs are findings-shaped is decided
//! once, from the schema, by `conclave_schema::findings_field`.

use conclave_shared::{CountMismatch, Finding, Severity, Stability, Stance};
use serde::Deserialize;
use serde_json::Value;

/// Normalizes a path as reviewers write it: backslashes become slashes, `./`, the
/// `a/`/`b/` prefixes of diff headers, leading slashes and repeated separators go.
pub fn normalize_path(path: &str) -> String {
    let unified = path.trim().replace('\\', "/");
    let mut parts: Vec<&str> = unified.split('/').filter(|p| !p.is_empty() && *p != ".").collect();
    if parts.len() > 1 && (parts[0] == "a" || parts[0] == "b") {
        parts.remove(0);
    }
    parts.join("/")
}

/// The findings in `output[field]`, attributed to `agent`. Entries without a file
/// or a positive line are skipped (they cannot be placed).
pub fn read_findings(agent: &str, output: &Value, field: &str) -> Vec<Finding> {
    let Some(items) = output.get(field).and_then(Value::as_array) else { return Vec::new() };
    items.iter().filter_map(|item| read_finding(agent, item)).collect()
}

/// One finding entry, attributed to `agent`; `None` without a file or a positive line.
pub fn read_finding(agent: &str, item: &Value) -> Option<Finding> {
    let file = normalize_path(item.get("file")?.as_str()?);
    let line = item.get("line")?.as_u64().filter(|&l| l >= 1)?;
    Some(Finding {
        agent: agent.to_string(),
        raised_by: item.get("raisedBy").and_then(Value::as_str).map(str::to_string),
        file,
        line,
        severity: item.get("severity").and_then(Value::as_str).and_then(Severity::parse),
        stance: match item.get("stance").and_then(Value::as_str) {
            Some("approval") => Some(Stance::Approval),
            Some("concern") => Some(Stance::Concern),
            _ => None,
        },
        description: item.get("description").and_then(Value::as_str).unwrap_or_default().to_string(),
        evidence: item.get("evidence").and_then(Value::as_str).map(str::to_string),
        // Set by Conclave when it merged an agent's samples.
        stability: item.get("stability").and_then(|s| Stability::deserialize(s).ok()),
        ..Finding::default()
    })
}

/// Severities whose `counts` entry differs from the number of findings of that
/// severity, for an output with both `findings` and `counts`.
pub fn count_mismatches(output: &Value) -> Option<Vec<CountMismatch>> {
    let findings = output.get("findings")?.as_array()?;
    let counts = output.get("counts")?.as_object()?;
    let mut mismatches = Vec::new();
    for severity in Severity::ALL {
        let actual = findings
            .iter()
            .filter(|f| f.get("severity").and_then(Value::as_str).and_then(Severity::parse) == Some(severity))
            .count() as u64;
        let claimed = counts.get(severity.as_str()).and_then(Value::as_u64).unwrap_or(0);
        if claimed != actual {
            mismatches.push(CountMismatch { severity, claimed, actual });
        }
    }
    Some(mismatches)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_are_normalized() {
        for (given, expected) in [
            ("./src/lib.rs", "src/lib.rs"),
            ("a/src/lib.rs", "src/lib.rs"),
            ("b/src//lib.rs", "src/lib.rs"),
            ("src\\upload\\mod.rs", "src/upload/mod.rs"),
            ("/src/lib.rs", "src/lib.rs"),
            (" src/./lib.rs ", "src/lib.rs"),
            ("a", "a"),
            ("b/README.md", "README.md"),
        ] {
            assert_eq!(normalize_path(given), expected, "{given}");
        }
    }

    #[test]
    fn counts_are_compared_with_the_findings() {
        let output = json!({
            "findings": [{"severity": "blocker"}, {"severity": "nit"}, {"severity": "nit"}],
            "counts": {"blocker": 3, "major": 0, "minor": 0, "nit": 2}
        });
        assert_eq!(
            count_mismatches(&output),
            Some(vec![CountMismatch { severity: Severity::Blocker, claimed: 3, actual: 1 }])
        );
        assert_eq!(count_mismatches(&json!({"findings": []})), None, "no counts, nothing to check");
    }
}
