//! The editor's panels split out of its first download, in headless Chromium against
//! the real server: drawing an opened conclave fetches the main wasm module alone,
//! within its budget with Brotli; each split panel's module is fetched with Brotli
//! the first time the panel opens (real clicks), and the panel works: a run started
//! from the Run dialog is watched to its end in the run panel, the node's form renames
//! the node, and the Evals and Settings panels show.

use crate::editor_runs::{start_from_dialog, wait_for_status};
use conclave_tests::browser::{Editor, node, tid, wait_until, workspace_root};
use serde_json::json;
use std::path::Path;

/// The budget of the wasm fetched before a conclave is drawn, as sent with Brotli.
const FIRST_LOAD_BUDGET: u64 = 300 * 1024;

/// The wasm modules the page fetched so far, by path, with the bytes each took.
async fn wasm_fetched(e: &Editor) -> Vec<(String, u64)> {
    e.transferred().await.into_iter().filter(|(path, _)| path.ends_with(".wasm")).collect()
}

/// The size of `name` in `client/dist`, as built.
fn built_size(name: &str) -> u64 {
    let path = workspace_root().join("client/dist").join(name.trim_start_matches('/'));
    std::fs::metadata(&path).map(|m| m.len()).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Asserts that split `split`'s module was fetched, once, with Brotli.
async fn fetched_split(e: &Editor, split: &str) {
    let prefix = format!("/split_{split}_");
    let fetched: Vec<(String, u64)> =
        wasm_fetched(e).await.into_iter().filter(|(p, _)| p.starts_with(&prefix)).collect();
    let [(path, bytes)] = fetched.as_slice() else {
        panic!("{prefix}*.wasm fetched {} times: {fetched:?}", fetched.len())
    };
    assert_eq!(*bytes, built_size(&format!("{path}.br")), "{path} is sent with Brotli");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_split_panel_is_fetched_when_it_first_opens_and_works() {
    let e = Editor::start(Path::new(env!("CARGO_BIN_EXE_conclave-testbed"))).await;
    let nodes = json!([
        {"id": "change", "kind": "trigger", "label": "change", "position": {"x": 0, "y": 0}},
        {"id": "reviewer", "kind": "agent", "label": "reviewer", "position": {"x": 300, "y": 0},
         "agent": {"provider": "fake", "model": "text=ok"}},
        {"id": "report", "kind": "output", "label": "report", "position": {"x": 600, "y": 0}}
    ]);
    let edges = json!([{"from": "change", "to": "reviewer"}, {"from": "reviewer", "to": "report"}]);
    e.create_conclave(&json!({"version": 1, "id": "split", "name": "Split", "nodes": nodes, "edges": edges})).await;
    e.accept_encoding("br").await;
    e.open_conclave("split").await;
    for id in ["change", "reviewer", "report"] {
        e.wait_for(node(id)).await;
    }
    let first = wasm_fetched(&e).await;
    let main = "/conclave-client_bg.wasm";
    assert_eq!(first.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>(), [main], "the first load's wasm");
    assert_eq!(first[0].1, built_size(&format!("{main}.br")), "the main module is sent with Brotli");
    assert!(first[0].1 <= FIRST_LOAD_BUDGET, "the first load's wasm is {} bytes with Brotli", first[0].1);

    start_from_dialog(&e, None, "hello").await;
    fetched_split(&e, "run_dialog").await;
    wait_for_status(&e, None, "succeeded").await;
    fetched_split(&e, "watch").await;
    fetched_split(&e, "run_panel").await;

    // A node's form: selecting the node fetches it; its label renames the node.
    e.find(node("reviewer")).await.expect("the node").click().await.expect("select it");
    let label = e.wait_for(tid("node-label")).await;
    fetched_split(&e, "node_form").await;
    e.clear_and_type(&label, "Reviewer of the change").await;
    e.press(thirtyfour::Key::Tab).await;
    wait_until("the card to show the new label", || async {
        let card = e.find(node("reviewer")).await.expect("the node");
        card.text().await.unwrap_or_default().contains("Reviewer of the change")
    })
    .await;

    e.find(tid("evals")).await.expect("Evals").click().await.expect("open Evals");
    e.wait_for(tid("evals-status")).await;
    fetched_split(&e, "evals_of_conclave").await;

    e.find(tid("settings")).await.expect("Settings").click().await.expect("open Settings");
    e.wait_for(tid("mcp-add")).await;
    fetched_split(&e, "settings").await;
    e.driver.clone().quit().await.ok();
}
