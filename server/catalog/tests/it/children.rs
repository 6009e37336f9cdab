//! `conclave` nodes in validation: the conclave a node runs must be in the catalog,
//! and no conclave may reach itself through them; each problem names the file, the
//! node and the JSON path, and a cycle its whole path.

use conclave_catalog::{CatalogContext, Diagnostic, check_conclave_text, load_by_id};
use conclave_schema::SchemaCatalog;
use serde_json::json;
use std::path::Path;

/// `conclaves/<id>.conclave.json`: a trigger, a node running each of `children`, an output.
fn write(dir: &Path, id: &str, children: &[&str]) -> String {
    let mut nodes = vec![json!({"id": "in", "kind": "trigger"})];
    let mut edges = Vec::new();
    for (i, child) in children.iter().enumerate() {
        nodes.push(json!({"id": format!("run{i}"), "kind": "conclave", "conclave": {"id": child}}));
        edges.push(json!({"from": "in", "to": format!("run{i}")}));
        edges.push(json!({"from": format!("run{i}"), "to": "out"}));
    }
    nodes.push(json!({"id": "out", "kind": "output"}));
    let text = json!({"version": 1, "id": id, "name": id, "nodes": nodes, "edges": edges}).to_string();
    std::fs::write(dir.join(format!("{id}.conclave.json")), &text).expect("write");
    text
}

fn context(dir: &Path) -> CatalogContext {
    CatalogContext {
        schemas: SchemaCatalog::with_roots(vec![]),
        providers: vec!["openai".into()],
        tools: Vec::new(),
        programs: None,
        catalog: Some(dir.to_path_buf()),
    }
}

fn errors(diagnostics: &[Diagnostic]) -> Vec<(String, String, String)> {
    diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(|d| (d.code.to_string(), d.path.clone(), d.message.clone()))
        .collect()
}

#[test]
fn a_conclave_that_reaches_itself_is_an_error_with_the_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "lane", &["review"]);
    write(dir.path(), "review-panel", &["lane"]);
    let text = write(dir.path(), "review", &["review-panel"]);
    let found = errors(&check_conclave_text("conclaves/review.conclave.json", &text, &context(dir.path())));
    assert_eq!(
        found,
        [(
            "conclave-cycle".to_string(),
            "/nodes/1/conclave/id".to_string(),
            "conclave `review` reaches itself: review -> review-panel -> lane -> review".to_string()
        )]
    );
    let itself = write(dir.path(), "selfish", &["selfish"]);
    let found = errors(&check_conclave_text("conclaves/selfish.conclave.json", &itself, &context(dir.path())));
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].2, "conclave `selfish` reaches itself: selfish -> selfish");
}

#[test]
fn an_unknown_conclave_is_an_error_with_a_suggestion() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "security-lane", &[]);
    let text = write(dir.path(), "review", &["security-lan"]);
    let diagnostics = check_conclave_text("conclaves/review.conclave.json", &text, &context(dir.path()));
    let unknown = diagnostics.iter().find(|d| d.code == "unknown-conclave").expect("reported");
    assert_eq!(unknown.path, "/nodes/1/conclave/id");
    assert_eq!(unknown.help.as_deref(), Some("did you mean `security-lane`?"));
}

#[test]
fn loading_a_conclave_loads_the_conclaves_it_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "leaf", &[]);
    write(dir.path(), "lane", &["leaf"]);
    write(dir.path(), "review", &["lane"]);
    let checked = load_by_id("review", dir.path(), &context(dir.path())).expect("loads");
    let lane = checked.child("lane").expect("the lane is loaded");
    assert!(lane.child("leaf").is_some(), "and what the lane runs, in turn");
}

#[test]
fn a_conclave_with_an_approval_cannot_run_as_a_node() {
    let dir = tempfile::tempdir().expect("tempdir");
    let gated = json!({"version": 1, "id": "gated", "name": "gated",
        "nodes": [{"id": "in", "kind": "trigger"}, {"id": "ok", "kind": "approval"}, {"id": "out", "kind": "output"}],
        "edges": [{"from": "in", "to": "ok"}, {"from": "ok", "to": "out"}]});
    std::fs::write(dir.path().join("gated.conclave.json"), gated.to_string()).expect("write");
    let text = write(dir.path(), "review", &["gated"]);
    let found = errors(&check_conclave_text("conclaves/review.conclave.json", &text, &context(dir.path())));
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!((found[0].0.as_str(), found[0].1.as_str()), ("approval-in-child", "/nodes/1/conclave/id"));
}
