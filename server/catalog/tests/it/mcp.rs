//! The checks of tool ids: an unknown built-in tool named with the nearest one (the
//! symbol tools among them), MCP servers and `mcp:` ids (an undeclared server named
//! with the nearest declared one, malformed ids and entries at their JSON paths, and
//! a declared server's tools accepted).

use conclave_catalog::{CatalogContext, Diagnostic, Subject, check_conclave_value};
use serde_json::{Value, json};

fn diagnostics(conclave: Value) -> Vec<Diagnostic> {
    let ctx = CatalogContext {
        schemas: conclave_schema::SchemaCatalog::with_roots(vec![]),
        providers: vec!["fake".into()],
        // conclave_core::BUILTIN_TOOLS, which `conclave validate` passes.
        tools: ["read_file", "list_files", "grep", "find_definition", "find_references", "outline"]
            .map(String::from)
            .to_vec(),
        programs: None,
        catalog: None,
    };
    check_conclave_value("x.conclave.json", &conclave, &ctx).diagnostics
}

fn conclave(servers: Value, tools: Value) -> Value {
    json!({
        "id": "x", "name": "x",
        "settings": {"mcp_servers": servers},
        "nodes": [
            {"id": "in", "kind": "trigger", "label": "in", "position": {"x": 0, "y": 0}},
            {"id": "a", "kind": "agent", "label": "a", "position": {"x": 1, "y": 0},
             "agent": {"provider": "fake", "model": "m", "system_prompt": "", "tools": tools}}
        ],
        "edges": [{"from": "in", "to": "a"}]
    })
}

#[test]
fn the_symbol_tools_are_known_and_a_misspelt_tool_is_named_with_the_nearest() {
    let tools = json!(["find_definition", "find_references", "outline", "read_file", "find_refs", "find_definiton"]);
    let found = diagnostics(conclave(json!({}), tools));
    let unknown: Vec<(&str, Option<&str>)> =
        found.iter().filter(|d| d.code == "unknown-tool").map(|d| (d.path.as_str(), d.help.as_deref())).collect();
    let known = "built-in tools: read_file, list_files, grep, find_definition, find_references, outline; an MCP server's tool is `mcp:SERVER/TOOL`";
    assert_eq!(
        unknown,
        [
            ("/nodes/1/agent/tools/4", Some(format!("did you mean `find_references`? {known}").as_str())),
            ("/nodes/1/agent/tools/5", Some(format!("did you mean `find_definition`? {known}").as_str())),
        ]
    );
}

#[test]
fn an_undeclared_server_is_named_with_the_nearest_declared_one() {
    let found = diagnostics(conclave(json!({"docs": {"command": ["git-mcp"]}}), json!(["mcp:doc/git_log"])));
    let d = found.iter().find(|d| d.code == "unknown-mcp-server").expect("reported");
    assert_eq!(d.path, "/nodes/1/agent/tools/0");
    assert_eq!(d.subject, Subject::Node("a".into()));
    assert_eq!(d.help.as_deref(), Some("did you mean `mcp:docs/git_log`? declared: docs"));
}

#[test]
fn malformed_ids_and_entries_are_errors_with_their_paths() {
    let servers = json!({"docs": {"command": ["x"], "url": "https://x/mcp"}, "bad name": {"url": "https://y/mcp"}});
    let found = diagnostics(conclave(servers, json!(["mcp:docs"])));
    let codes: Vec<String> = found.iter().map(|d| format!("{} {}", d.code, d.path)).collect();
    assert!(codes.contains(&"mcp-tool /nodes/1/agent/tools/0".to_string()), "{codes:?}");
    assert!(codes.contains(&"mcp-server /settings/mcp_servers/docs".to_string()), "{codes:?}");
    assert!(codes.contains(&"mcp-server-name /settings/mcp_servers/bad name".to_string()), "{codes:?}");
}

#[test]
fn a_declared_server_tool_is_not_an_unknown_tool() {
    let found = diagnostics(conclave(json!({"docs": {"command": ["git-mcp"]}}), json!(["mcp:docs/*"])));
    assert!(found.iter().all(|d| !d.is_error()), "{found:?}");
}
