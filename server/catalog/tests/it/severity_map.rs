//! An analyzer's `severity` map in validation: the maps of the built-in lanes pass;
//! an unknown severity, an unknown key, a level the lane's reader never gives and an
//! empty rule key are each reported with the node id and JSON path.

use conclave_catalog::check_conclave_text;
use conclave_shared::Subject;
use serde_json::{Value, json};

use crate::budget::context;

fn conclave(parse: &str, severity: Value) -> String {
    json!({"version": 1, "id": "s", "name": "S",
           "nodes": [{"id": "in", "kind": "trigger"},
                     {"id": "ruff", "kind": "command", "command": {
                         "argv": ["ruff", "check", "--output-format", "sarif", "{files}"], "parse": parse,
                         "analyzer": {"files": ["*.py"], "severity": severity}}},
                     {"id": "out", "kind": "output"}],
           "edges": [{"from": "in", "to": "ruff"}, {"from": "ruff", "to": "out"}]})
    .to_string()
}

/// Every error: node, code, path, message.
fn errors(parse: &str, severity: Value) -> Vec<(String, String, String, String)> {
    check_conclave_text("conclaves/s.conclave.json", &conclave(parse, severity), &context())
        .iter()
        .filter(|d| d.is_error())
        .map(|d| {
            let node = match &d.subject {
                Subject::Node(id) => id.clone(),
                other => format!("{other:?}"),
            };
            (node, d.code.to_string(), d.path.clone(), d.message.clone())
        })
        .collect()
}

#[test]
fn a_map_of_rules_levels_and_a_default_passes() {
    let map = json!({"rules": {"E": "minor", "E9": "major", "F": "major", "I": "nit", "S": "major"},
                     "levels": {"error": "major", "note": "minor"}, "default": "minor"});
    assert_eq!(errors("sarif", map), Vec::<(String, String, String, String)>::new());
}

#[test]
fn an_unknown_severity_or_key_names_the_node_and_the_json_path() {
    let found = errors("sarif", json!({"rules": {"F401": "critical"}, "level": {"error": "major"}}));
    let at: Vec<(&str, &str, &str)> = found.iter().map(|(n, c, p, _)| (n.as_str(), c.as_str(), p.as_str())).collect();
    assert!(at.contains(&("ruff", "analyzer-severity", "/nodes/1/command/analyzer/severity/rules/F401")), "{found:?}");
    assert!(at.contains(&("ruff", "analyzer-severity", "/nodes/1/command/analyzer/severity")), "{found:?}");
    let critical = found.iter().find(|f| f.2.ends_with("/F401")).map(|f| f.3.as_str()).unwrap_or_default();
    assert!(critical.contains("\"critical\""), "the message names the value: {critical}");
    let unknown = found.iter().find(|f| f.2.ends_with("/severity")).map(|f| f.3.as_str()).unwrap_or_default();
    assert!(unknown.contains("level"), "the message names the key: {unknown}");
}

#[test]
fn a_level_the_reader_never_gives_and_an_empty_rule_key_are_refused() {
    let found = errors("shellcheck", json!({"levels": {"note": "nit", "style": "nit"}, "rules": {"": "major"}}));
    assert_eq!(
        found,
        [
            (
                "ruff".to_string(),
                "analyzer-severity-level".to_string(),
                "/nodes/1/command/analyzer/severity/levels/note".to_string(),
                "`note` is not a level of `shellcheck` output, so this entry would never apply".to_string()
            ),
            (
                "ruff".to_string(),
                "analyzer-severity-rule".to_string(),
                "/nodes/1/command/analyzer/severity/rules/".to_string(),
                "`` is not a rule id or prefix: it is empty or holds a space".to_string()
            ),
        ]
    );
}
