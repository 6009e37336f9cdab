//! The editor as a user gets it: `cargo install --locked --path server` (here in
//! debug, offline, into a temporary root, reusing this build's target directory)
//! gives a `conclave` whose `serve`, started in an empty directory, serves the
//! editor built into the binary, and the editor works in headless Chromium.

use conclave_tests::browser::{Editor, tid, workspace_root};
use reqwest::header::{CONTENT_TYPE, ETAG, IF_NONE_MATCH};
use std::path::PathBuf;
use std::process::Command;

/// The target directory this test was built in: installing there reuses the build.
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's path");
    // <target>/debug/deps/it-<hash>
    exe.ancestors().nth(3).expect("the target directory").to_path_buf()
}

/// `cargo install` of the conclave binary into `root`, as docs/editor.md says.
fn install(root: &std::path::Path) -> PathBuf {
    let output = Command::new(env!("CARGO"))
        .args(["install", "--locked", "--offline", "--debug", "--path"])
        .arg(workspace_root().join("server"))
        .arg("--root")
        .arg(root)
        .arg("--target-dir")
        .arg(target_dir())
        .output()
        .expect("cargo runs");
    assert!(output.status.success(), "cargo install failed:\n{}", String::from_utf8_lossy(&output.stderr));
    root.join("bin/conclave")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_installed_conclave_serves_its_editor_from_an_empty_directory() {
    let root = tempfile::tempdir().expect("install root");
    let conclave = install(root.path());
    let empty = tempfile::tempdir().expect("an empty directory");
    let e = Editor::start_in(&conclave, Some(empty.path())).await;
    // Editor::start_in waited for the palette: the editor loaded and rendered.
    assert!(e.find(tid("conclave-new")).await.is_ok(), "the editor's catalog is there");

    let client = reqwest::Client::new();
    let page = client.get(format!("{}/", e.base)).send().await.expect("the page");
    assert_eq!(page.headers()[CONTENT_TYPE], "text/html");
    assert!(page.text().await.expect("text").contains("/boot.js"), "the editor's page");
    let wasm = client.get(format!("{}/conclave-client_bg.wasm", e.base)).send().await.expect("the bundle");
    assert_eq!(wasm.headers()[CONTENT_TYPE], "application/wasm");
    let tag = wasm.headers()[ETAG].clone();
    let served = wasm.bytes().await.expect("bytes");
    let built = std::fs::read(workspace_root().join("client/dist/conclave-client_bg.wasm")).expect("the built bundle");
    assert!(served == built, "the bundle built into conclave is the one scripts/build-editor.sh made");
    let again = client
        .get(format!("{}/conclave-client_bg.wasm", e.base))
        .header(IF_NONE_MATCH, tag)
        .send()
        .await
        .expect("a revalidation");
    assert_eq!(again.status(), 304, "an unchanged file is not sent again");
    // A path the browser routes is the editor's page too.
    let deep = client.get(format!("{}/conclaves/pr-review", e.base)).send().await.expect("a deep link");
    assert!(deep.text().await.expect("text").contains("/boot.js"));

    let left: Vec<_> = std::fs::read_dir(empty.path()).expect("read").collect();
    assert!(left.is_empty(), "serve needed no files next to it and wrote none there: {left:?}");
    e.driver.clone().quit().await.ok();
}
