//! A conclave saved through the API may not widen a command's sandbox: a node that
//! opens the network or more paths than the file on disk gives it is refused with
//! 403, naming the node and what it opens, and nothing is written; the same block as
//! the file on disk, or a narrower one, is saved.

use axum::http::StatusCode;
use serde_json::{Value, json};
use std::sync::Arc;

use crate::api::{Api, api_with};

fn with_command(sandbox: Value) -> Value {
    json!({
        "version": 1, "id": "lint", "name": "Lint",
        "nodes": [
            {"id": "in", "kind": "trigger", "label": "In", "position": {"x": 0, "y": 0}},
            {"id": "check", "kind": "command", "label": "Check", "position": {"x": 200, "y": 0},
             "command": {"argv": ["git", "diff", "--check"], "sandbox": sandbox}},
            {"id": "out", "kind": "output", "label": "Out", "position": {"x": 400, "y": 0}}
        ],
        "edges": [{"from": "in", "to": "check"}, {"from": "check", "to": "out"}]
    })
}

/// The API with `git` allowed, so only the sandbox decides.
fn api() -> Api {
    let mut api = api_with(None);
    let mut security = (*api.state.security).clone();
    security.allowed_programs = vec!["git".into()];
    api.state.security = Arc::new(security);
    api
}

fn file(api: &Api) -> std::path::PathBuf {
    api.state.workspace.catalog_dir.join("lint.conclave.json")
}

#[tokio::test]
async fn a_new_conclave_whose_command_opens_its_sandbox_is_refused_and_not_written() {
    let api = api();
    let widened = with_command(json!({"network": true, "read": ["~/.ssh"], "write": ["/srv"]}));
    let (status, body, _) = api.send("POST", "/api/conclaves", widened).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("(node `check`: network, read ~/.ssh, write /srv)"), "{message}");
    assert!(message.contains("nothing was written"), "{message}");
    assert!(!file(&api).exists());
    let narrow = with_command(json!({"env": {"T": "{scratch}/t"}, "limits": {"memory_mb": 512}}));
    let (status, body, _) = api.send("POST", "/api/conclaves", narrow).await;
    assert_eq!(status, StatusCode::CREATED, "variables and limits open nothing: {body}");
}

#[tokio::test]
async fn an_update_may_keep_what_the_file_on_disk_opens_but_not_open_more() {
    let api = api();
    let on_disk = with_command(json!({"read": ["~/.rustup"]}));
    std::fs::write(file(&api), serde_json::to_string_pretty(&on_disk).expect("json")).expect("written by hand");
    let (status, body, _) = api.send("PUT", "/api/conclaves/lint", on_disk.clone()).await;
    assert_eq!(status, StatusCode::OK, "the same block as on disk is kept: {body}");
    let before = std::fs::read_to_string(file(&api)).expect("file");
    let wider = with_command(json!({"read": ["~/.rustup", "~/.aws"], "network": true}));
    let (status, body, _) = api.send("PUT", "/api/conclaves/lint", wider).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("(node `check`: network, read ~/.aws)"), "{message}");
    assert_eq!(std::fs::read_to_string(file(&api)).expect("file"), before, "the file is as it was");
    let narrower = with_command(json!({}));
    assert_eq!(api.send("PUT", "/api/conclaves/lint", narrower).await.0, StatusCode::OK, "narrowing is allowed");
}
