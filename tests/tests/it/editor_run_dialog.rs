//! The Run dialog of a conclave that reviews code, in headless Chromium against the
//! real server and a real git repository: a user reviews the working tree, runs it
//! again from the cache and then without it, reviews the change against a base with
//! other analyzer lanes ticked, and then only what is new since the last review, all
//! with real clicks and keys. What each run was asked is read back from the run the
//! server stored: its input (base, lanes, scope) and its nodes (cached or not).

use conclave_testkit::git;
use conclave_tests::browser::{Editor, tid, wait_until};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use thirtyfour::prelude::*;

const TESTBED: &str = env!("CARGO_BIN_EXE_conclave-testbed");

/// A reviewer whose answer the cache keeps, and two analyzer lanes running `git diff
/// --check`: `whitespace` on by default, `strict` only when named.
fn review_conclave() -> Value {
    let lane = |id: &str, y: i64, default: bool| {
        let analyzer = if default { json!({}) } else { json!({"default": false}) };
        json!({"id": id, "kind": "command", "label": id, "position": {"x": 300, "y": y},
               "command": {"argv": ["git", "diff", "--check"], "ok_exit_codes": [0, 2], "parse": "diagnostics",
                           "analyzer": analyzer}})
    };
    json!({
        "version": 1, "id": "dialog-review", "name": "Dialog review",
        "nodes": [
            {"id": "change", "kind": "trigger", "label": "Change", "position": {"x": 0, "y": 150}},
            {"id": "reviewer", "kind": "agent", "label": "Reviewer", "position": {"x": 300, "y": 0},
             "agent": {"provider": "fake", "model": r#"json={"findings":[],"counts":{"blocker":0,"major":0,"minor":0,"nit":0}}"#,
                       "output_schema_ref": "review.findings.v1", "cache": true}},
            lane("whitespace", 160, true),
            lane("strict", 300, false),
            {"id": "report", "kind": "output", "label": "Report", "position": {"x": 600, "y": 150}}
        ],
        "edges": [{"from": "change", "to": "reviewer"}, {"from": "change", "to": "whitespace"},
                  {"from": "change", "to": "strict"}, {"from": "reviewer", "to": "report"},
                  {"from": "whitespace", "to": "report"}, {"from": "strict", "to": "report"}]
    })
}

/// A repository with two commits and a change in the working tree.
fn repository(e: &Editor) -> PathBuf {
    let repo = e.ws.root().join("repo");
    std::fs::create_dir_all(&repo).expect("mkdir");
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("app.py"), "print('one')\n").expect("write");
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "one"]);
    std::fs::write(repo.join("app.py"), "print('two')\n").expect("write");
    git(&repo, &["commit", "-q", "-am", "two"]);
    std::fs::write(repo.join("app.py"), "print('three')\n").expect("write");
    repo
}

fn head(repo: &Path) -> String {
    let out = std::process::Command::new("git").args(["rev-parse", "HEAD"]).current_dir(repo).output().expect("git");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Clicks Run and waits for the dialog.
async fn open_dialog(e: &Editor) {
    e.find(tid("run")).await.expect("Run").click().await.expect("click Run");
    e.wait_for(tid("run-dialog")).await;
}

/// Clicks the dialog's element with this test id.
async fn click(e: &Editor, by: By) {
    e.wait_for(by).await.click().await.expect("click");
}

fn lane(name: &str) -> By {
    By::Css(format!("[data-testid='run-lane'][data-lane='{name}']"))
}

/// Clicks Start, waits for the run it starts to end, and returns it as stored.
async fn start(e: &Editor) -> Value {
    let before = e.api("/api/runs").await.as_array().map_or(0, Vec::len);
    click(e, tid("run-start")).await;
    let deadline = std::time::Instant::now() + conclave_tests::browser::PATIENCE;
    loop {
        let runs = e.api("/api/runs").await;
        if runs.as_array().map_or(0, Vec::len) > before {
            let id = runs[0]["id"].as_str().expect("an id").to_string();
            let run = e.api(&format!("/api/runs/{id}")).await;
            if matches!(run["status"].as_str(), Some("succeeded" | "failed" | "cancelled")) {
                return run;
            }
        }
        assert!(std::time::Instant::now() < deadline, "the started run did not end");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// Why each analyzer lane of a run did not run (`None`: it ran).
fn lanes_of(run: &Value) -> Vec<(String, Option<String>)> {
    let lanes = run["input"]["analyzers"].as_array().cloned().unwrap_or_default();
    let mut decided: Vec<_> = lanes
        .iter()
        .map(|l| (l["name"].as_str().unwrap_or_default().to_string(), l["off"].as_str().map(str::to_string)))
        .collect();
    decided.sort();
    decided
}

fn reviewer_cached(run: &Value) -> bool {
    let nodes = run["nodes"].as_array().cloned().unwrap_or_default();
    let reviewer = nodes.iter().find(|n| n["node_id"] == "reviewer").expect("the reviewer's result");
    reviewer["cached_from"].is_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_run_dialog_reviews_the_working_tree_a_base_and_what_is_new_with_lanes_and_the_cache() {
    let e = Editor::start_serving(Path::new(TESTBED), None, &[], &["--allow-commands", "git"]).await;
    let repo = repository(&e);
    e.create_conclave(&review_conclave()).await;
    e.open_conclave("dialog-review").await;

    // The working tree, the lanes as they are by default, the cache on.
    open_dialog(&e).await;
    let field = e.wait_for(tid("run-repository")).await;
    e.clear_and_type(&field, &repo.display().to_string()).await;
    assert!(e.wait_for(lane("whitespace")).await.is_selected().await.expect("state"), "on by default");
    assert!(!e.wait_for(lane("strict")).await.is_selected().await.expect("state"), "off by default");
    let first = start(&e).await;
    assert_eq!(first["input"]["base"], Value::Null, "{}", first["input"]);
    assert!(first["input"].get("scope").is_none());
    let by_default = vec![("strict".to_string(), Some("off_by_default".to_string())), ("whitespace".to_string(), None)];
    assert_eq!(lanes_of(&first), by_default);
    assert!(!reviewer_cached(&first), "nothing cached yet");

    // Again: the reviewer's answer comes from the cache; then with the cache off, not.
    open_dialog(&e).await;
    assert!(reviewer_cached(&start(&e).await), "the second review is answered from the cache");
    open_dialog(&e).await;
    click(&e, tid("run-cache")).await;
    assert!(!reviewer_cached(&start(&e).await), "no_cache runs the cached reviewer again");

    // Against a base, with the other lane: the base typed key by key.
    open_dialog(&e).await;
    click(&e, tid("run-cache")).await;
    click(&e, tid("run-scope-base")).await;
    let base = e.wait_for(tid("run-base")).await;
    e.clear_and_type(&base, "HEAD~1").await;
    click(&e, lane("whitespace")).await;
    click(&e, lane("strict")).await;
    let against_base = start(&e).await;
    assert_eq!(against_base["input"]["base"], "HEAD~1", "{}", against_base["input"]);
    let picked = vec![("strict".to_string(), None), ("whitespace".to_string(), Some("not_selected".to_string()))];
    assert_eq!(lanes_of(&against_base), picked);

    // Only what is new since the last review: one more commit.
    let reviewed = head(&repo);
    git(&repo, &["commit", "-q", "-am", "three"]);
    open_dialog(&e).await;
    click(&e, tid("run-scope-since")).await;
    let base = e.wait_for(tid("run-base")).await;
    base.click().await.expect("focus");
    base.send_keys(Key::Control + "a").await.expect("select all");
    base.send_keys(Key::Backspace).await.expect("clear: the base is optional here");
    let since = start(&e).await;
    let scope = &since["input"]["scope"]["incremental"];
    assert_eq!(scope["since"], reviewed.as_str(), "{}", since["input"]);
    assert_eq!(scope["now"]["total"], 1, "only the new commit: {scope}");
    e.driver.clone().quit().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_base_review_without_a_base_says_what_is_missing() {
    let e = Editor::start_serving(Path::new(TESTBED), None, &[], &["--allow-commands", "git"]).await;
    let repo = repository(&e);
    e.create_conclave(&review_conclave()).await;
    e.open_conclave("dialog-review").await;
    open_dialog(&e).await;
    let field = e.wait_for(tid("run-repository")).await;
    e.clear_and_type(&field, &repo.display().to_string()).await;
    click(&e, tid("run-scope-base")).await;
    click(&e, tid("run-start")).await;
    wait_until("the status bar to say what is missing", || async { e.status().await.contains("base ref") }).await;
    assert!(e.find(tid("run-dialog")).await.is_ok(), "the dialog stays open");
    assert_eq!(e.api("/api/runs").await.as_array().map_or(0, Vec::len), 0, "nothing started");
    e.driver.clone().quit().await.ok();
}
