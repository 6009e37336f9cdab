//! How the editor reaches the browser, in headless Chromium against the real server:
//! loaded with Brotli, then gzip, then neither (the browser's `Accept-Encoding` set
//! through DevTools), the server sends each file in that coding, byte for byte the
//! copy `scripts/build-editor.sh` made, and the editor draws an opened conclave each
//! time. Over the real socket, a HEAD answers a GET's headers, the length included.

use conclave_tests::browser::{Editor, node, workspace_root};
use reqwest::header::HeaderMap;
use serde_json::json;
use std::path::Path;

async fn start() -> Editor {
    Editor::start(Path::new(env!("CARGO_BIN_EXE_conclave-testbed"))).await
}

/// The size of `name` in `client/dist`, as built.
fn built_size(name: &str) -> u64 {
    let path = workspace_root().join("client/dist").join(name);
    std::fs::metadata(&path).map(|m| m.len()).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_editor_draws_with_brotli_with_gzip_and_with_neither() {
    let e = start().await;
    let nodes = json!([
        {"id": "change", "kind": "trigger", "label": "change", "position": {"x": 0, "y": 0}},
        {"id": "reviewer", "kind": "agent", "label": "reviewer", "position": {"x": 300, "y": 0},
         "agent": {"provider": "fake", "model": "text=ok"}},
        {"id": "report", "kind": "output", "label": "report", "position": {"x": 600, "y": 0}}
    ]);
    let edges = json!([{"from": "change", "to": "reviewer"}, {"from": "reviewer", "to": "report"}]);
    e.create_conclave(&json!({"version": 1, "id": "delivered", "name": "Delivered", "nodes": nodes, "edges": edges}))
        .await;
    for (accept, suffix) in [("br", ".br"), ("gzip", ".gz"), ("identity", "")] {
        e.accept_encoding(accept).await;
        e.open_conclave("delivered").await;
        for id in ["change", "reviewer", "report"] {
            e.wait_for(node(id)).await;
        }
        let sent = e.transferred().await;
        for (path, file) in [("/conclave-client_bg.wasm", "conclave-client_bg.wasm"), ("/", "index.html")] {
            let bytes: Vec<u64> = sent.iter().filter(|(p, _)| p == path).map(|(_, b)| *b).collect();
            let expected = built_size(&format!("{file}{suffix}"));
            assert!(
                !bytes.is_empty() && bytes.iter().all(|b| *b == expected),
                "with Accept-Encoding: {accept}, {path} took {bytes:?} bytes, not the {expected} of {file}{suffix}"
            );
        }
    }
    head_answers_what_get_does(&e).await;
    e.driver.clone().quit().await.ok();
}

/// A HEAD of the wasm bundle over the real socket: GET's headers, the length
/// included, and no body.
async fn head_answers_what_get_does(e: &Editor) {
    let client = reqwest::Client::new();
    let url = format!("{}/conclave-client_bg.wasm", e.base);
    for accept in ["br", "gzip", "identity"] {
        let get = client.get(&url).header("accept-encoding", accept).send().await.expect("GET");
        let get_headers = without_date(get.headers());
        let body = get.bytes().await.expect("body");
        let head = client.head(&url).header("accept-encoding", accept).send().await.expect("HEAD");
        let head_headers = without_date(head.headers());
        assert!(head.bytes().await.expect("no body").is_empty());
        assert_eq!(head_headers, get_headers, "HEAD with Accept-Encoding: {accept}");
        assert_eq!(head_headers["content-length"], body.len().to_string().as_str(), "{accept}");
    }
}

fn without_date(headers: &HeaderMap) -> HeaderMap {
    let mut headers = headers.clone();
    headers.remove("date");
    headers
}
