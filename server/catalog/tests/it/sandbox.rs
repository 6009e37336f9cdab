//! A command's `sandbox` block in validation: the block as the clippy lane writes it
//! passes; relative and climbing paths, bad variable names, unknown placeholders,
//! unknown keys and bad limits are each reported with the node id and JSON path.

use conclave_catalog::check_conclave_text;
use conclave_shared::Subject;
use serde_json::{Value, json};

use crate::budget::context;

fn conclave(sandbox: Value) -> String {
    json!({"version": 1, "id": "s", "name": "S",
           "nodes": [{"id": "in", "kind": "trigger"},
                     {"id": "clippy", "kind": "command", "command": {"argv": ["cargo", "clippy"], "sandbox": sandbox}},
                     {"id": "out", "kind": "output"}],
           "edges": [{"from": "in", "to": "clippy"}, {"from": "clippy", "to": "out"}]})
    .to_string()
}

/// Every diagnostic: node, code, path, message.
fn found(sandbox: Value) -> Vec<(String, String, String, String)> {
    check_conclave_text("conclaves/s.conclave.json", &conclave(sandbox), &context())
        .iter()
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
fn the_clippy_lanes_block_passes() {
    let block = json!({
        "read": ["~/.rustup", "~/.cargo/bin", "~/.cargo/registry", "/opt/toolchain"],
        "env": {"RUSTUP_HOME": "~/.rustup", "CARGO_TARGET_DIR": "{scratch}/target"},
        "limits": {"memory_mb": 4096, "processes": 512}
    });
    assert_eq!(found(block), Vec::<(String, String, String, String)>::new());
}

#[test]
fn bad_paths_and_variables_name_the_node_and_the_json_path() {
    let block = json!({
        "read": ["target", "/opt/../root/.ssh"],
        "write": [""],
        "env": {"1BAD": "x", "TARGET": "{home}/target"}
    });
    let expected = [
        (
            "clippy",
            "sandbox-path",
            "/nodes/1/command/sandbox/read/0",
            "`target` is relative: it would depend on where Conclave runs",
        ),
        ("clippy", "sandbox-path", "/nodes/1/command/sandbox/read/1", "`/opt/../root/.ssh` climbs with `..`"),
        ("clippy", "sandbox-path", "/nodes/1/command/sandbox/write/0", "`` is empty"),
        ("clippy", "sandbox-env", "/nodes/1/command/sandbox/env/1BAD", "`1BAD` is not a variable name"),
        (
            "clippy",
            "sandbox-env",
            "/nodes/1/command/sandbox/env/TARGET",
            "`{home}` is not a placeholder and is passed as it is",
        ),
    ];
    let found = found(block);
    for (node, code, path, message) in expected {
        let expected = (node.to_string(), code.to_string(), path.to_string(), message.to_string());
        assert!(found.contains(&expected), "missing {expected:?} in {found:#?}");
    }
    assert_eq!(found.len(), 5, "{found:#?}");
}

#[test]
fn unknown_keys_and_bad_limits_are_format_errors_at_their_path() {
    let found = found(json!({"netwrk": true, "limits": {"memory_mb": 0, "cores": 2}}));
    let at = |path: &str| found.iter().filter(|f| f.2 == path && f.1 == "sandbox" && f.0 == "clippy").count();
    assert_eq!(at("/nodes/1/command/sandbox"), 1, "the unknown key: {found:#?}");
    assert!(found.iter().any(|f| f.3.contains("netwrk")), "{found:#?}");
    assert_eq!(at("/nodes/1/command/sandbox/limits"), 1, "the unknown limit: {found:#?}");
    assert_eq!(at("/nodes/1/command/sandbox/limits/memory_mb"), 1, "a zero limit: {found:#?}");
}
