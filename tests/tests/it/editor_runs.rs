//! Runs in the editor, in headless Chromium: cancel, the timeline, a node's input and
//! output, comparing runs, running from a node, and the pull request beside a review's
//! run. Conclaves (and a webhook's run) are created through the API; everything a user
//! does is a real click or key press.

use conclave_testkit::git;
use conclave_tests::browser::{Editor, node, tid, wait_until};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::Duration;
use thirtyfour::prelude::*;

const TESTBED: &str = env!("CARGO_BIN_EXE_conclave-testbed");

/// An agent node on the fake provider, whose model string scripts its answer.
pub(crate) fn agent(id: &str, x: i32, y: i32, model: &str) -> Value {
    json!({"id": id, "kind": "agent", "label": id, "position": {"x": x, "y": y},
           "agent": {"provider": "fake", "model": model}})
}

/// A conclave with a trigger `input`, `agents`, an output `out`, and `edges`.
pub(crate) fn plain(id: &str, agents: Vec<Value>, edges: &[(&str, &str)]) -> Value {
    let mut nodes = vec![json!({"id": "input", "kind": "trigger", "label": "Input", "position": {"x": 0, "y": 150}})];
    nodes.extend(agents);
    nodes.push(json!({"id": "out", "kind": "output", "label": "Out", "position": {"x": 860, "y": 150}}));
    let edges: Vec<Value> = edges.iter().map(|(f, t)| json!({"from": f, "to": t})).collect();
    json!({"version": 1, "id": id, "name": id, "nodes": nodes, "edges": edges})
}

/// Sends a conclave to the API (`POST` to create, `PUT` to replace).
pub(crate) async fn put(e: &Editor, conclave: &Value, create: bool) {
    let client = reqwest::Client::new();
    let request = if create {
        client.post(format!("{}/api/conclaves", e.base))
    } else {
        client.put(format!("{}/api/conclaves/{}", e.base, conclave["id"].as_str().expect("id")))
    };
    let response = request.bearer_auth(&e.token).json(conclave).send().await.expect("the API answers");
    assert!(response.status().is_success(), "{}", response.text().await.unwrap_or_default());
}

/// Reloads the page and opens conclave `id` from the catalog.
pub(crate) async fn open(e: &Editor, id: &str) {
    e.driver.refresh().await.expect("reload");
    let item = format!("[data-testid='conclave-item'][data-conclave-id='{id}']");
    e.wait_for(By::Css(item)).await.click().await.expect("open");
    e.wait_for(tid("canvas")).await;
}

/// Clicks Run and starts the run: with `repository` for a review, else with `input`.
pub(crate) async fn start_from_dialog(e: &Editor, repository: Option<&Path>, input: &str) {
    e.find(tid("run")).await.expect("run").click().await.expect("click");
    match repository {
        Some(repo) => {
            let field = e.wait_for(tid("run-repository")).await;
            e.clear_and_type(&field, &repo.display().to_string()).await;
        }
        None => {
            let field = e.wait_for(tid("run-input")).await;
            e.clear_and_type(&field, input).await;
        }
    }
    e.find(tid("run-start")).await.expect("start").click().await.expect("click");
}

pub(crate) async fn text_of(e: &Editor, by: By) -> String {
    match e.find(by).await {
        Ok(el) => el.text().await.unwrap_or_default(),
        Err(_) => String::new(),
    }
}

/// Waits until the run panel watches run `id` (any, when `None`) and it has `status`.
pub(crate) async fn wait_for_status(e: &Editor, id: Option<&str>, status: &str) {
    let panel = match id {
        Some(id) => format!("[data-testid='run-panel'][data-run-id='{id}'] [data-testid='run-status']"),
        None => "[data-testid='run-status']".to_string(),
    };
    wait_until(&format!("the run to be {status}"), || {
        let panel = panel.clone();
        async move { text_of(e, By::Css(panel)).await == status }
    })
    .await;
}

/// Every run, newest first.
async fn runs(e: &Editor) -> Vec<Value> {
    e.api("/api/runs").await.as_array().cloned().unwrap_or_default()
}

fn bar(id: &str) -> By {
    By::Css(format!("[data-testid='timeline-bar'][data-node-id='{id}']"))
}

/// The bar's box. The timeline is drawn again on every tick while the run runs, so a
/// bar found a moment ago may be gone: it is looked up again then.
async fn bar_rect(e: &Editor, id: &str) -> thirtyfour::ElementRect {
    for _ in 0..20 {
        if let Ok(rect) = e.wait_for(bar(id)).await.rect().await {
            return rect;
        }
    }
    panic!("the bar of {id} kept being replaced while its box was read")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_ends_a_slow_run_cancelled() {
    let e = Editor::start(Path::new(TESTBED)).await;
    let conclave = plain("slow", vec![agent("a", 300, 150, "delay=30000;text=never")], &[("input", "a"), ("a", "out")]);
    put(&e, &conclave, true).await;
    open(&e, "slow").await;
    start_from_dialog(&e, None, "hello").await;
    wait_until("the agent to run", || async {
        text_of(&e, By::Css("[data-testid='node-status'][data-node-id='a']")).await == "running"
    })
    .await;
    e.wait_for(tid("run-cancel")).await.click().await.expect("cancel");
    wait_for_status(&e, None, "cancelled").await;
    assert_eq!(text_of(&e, tid("run-error")).await, "cancelled by request", "the panel says why the run stopped");
    assert_eq!(e.count(tid("run-cancel")).await, 0, "a finished run has nothing to cancel");
    assert_eq!(text_of(&e, By::Css("[data-testid='node-status'][data-node-id='a']")).await, "cancelled");
    let run = &runs(&e).await[0];
    assert_eq!(run["status"], "cancelled");
    let record = e.api(&format!("/api/runs/{}", run["id"].as_str().expect("id"))).await;
    let a = record["nodes"].as_array().expect("nodes").iter().find(|n| n["node_id"] == "a").expect("a").clone();
    assert_eq!(a["state"], "cancelled");
    assert!(a["finished_ms"].as_u64() >= a["started_ms"].as_u64(), "the bar ends at the cancellation: {a}");
    e.driver.clone().quit().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_timeline_draws_each_node_growing_while_it_runs_and_from_the_record_after() {
    let e = Editor::start(Path::new(TESTBED)).await;
    let agents = vec![
        agent("a", 300, 40, "delay=2500;text=left"),
        agent("b", 300, 260, "delay=2500;text=right"),
        agent("c", 580, 150, "text=joined"),
    ];
    let edges = [("input", "a"), ("input", "b"), ("a", "c"), ("b", "c"), ("c", "out")];
    put(&e, &plain("fan", agents, &edges), true).await;
    open(&e, "fan").await;
    start_from_dialog(&e, None, "go").await;

    e.wait_for(tid("timeline")).await;
    wait_until("a to run", || async {
        e.find(bar("a")).await.is_ok()
            && e.find(bar("a")).await.expect("bar").attr("data-state").await.ok().flatten().as_deref()
                == Some("running")
    })
    .await;
    let early = bar_rect(&e, "a").await.width;
    tokio::time::sleep(Duration::from_millis(900)).await;
    let later = bar_rect(&e, "a").await.width;
    assert!(later > early + 5.0, "a running bar grows: {early} then {later}");
    wait_for_status(&e, None, "succeeded").await;
    assert_eq!(e.count(tid("timeline-bar")).await, 5, "one bar per node");

    let (a, b, c) = (bar_rect(&e, "a").await, bar_rect(&e, "b").await, bar_rect(&e, "c").await);
    assert!((a.x - b.x).abs() < 8.0, "the fan-out runs side by side: a at {}, b at {}", a.x, b.x);
    assert!(c.x >= a.x + a.width - 2.0 && c.x >= b.x + b.width - 2.0, "the join starts when both end");
    let detail = e.wait_for(bar("a")).await.text().await.unwrap_or_default();
    let record = e.api(&format!("/api/runs/{}", runs(&e).await[0]["id"].as_str().expect("id"))).await;
    let usage = &record["nodes"][1]["usage"];
    let tokens = usage["input_tokens"].as_u64().expect("tokens") + usage["output_tokens"].as_u64().expect("tokens");
    assert_eq!(detail, format!("1 attempt · {tokens} tokens · —"), "the fake has no price, so no cost");

    // A finished run's timeline comes from its record alone.
    e.driver.refresh().await.expect("reload");
    e.wait_for(tid("run-item")).await.click().await.expect("watch the finished run");
    wait_for_status(&e, None, "succeeded").await;
    assert_eq!(e.count(tid("timeline-bar")).await, 5);
    assert_eq!(e.wait_for(bar("a")).await.text().await.unwrap_or_default(), detail);
    let again = bar_rect(&e, "c").await;
    assert!(again.x > bar_rect(&e, "a").await.x, "the join still starts after the fan-out");
    e.driver.clone().quit().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clicking_a_node_after_a_run_shows_what_it_received_and_produced() {
    let e = Editor::start(Path::new(TESTBED)).await;
    let agents = vec![agent("a", 300, 150, r#"json={"answer":42}"#), agent("b", 580, 150, "text=done")];
    put(&e, &plain("pair", agents, &[("input", "a"), ("a", "b"), ("b", "out")]), true).await;
    open(&e, "pair").await;
    start_from_dialog(&e, None, "what is it?").await;
    wait_for_status(&e, None, "succeeded").await;

    e.wait_for(node("b")).await.click().await.expect("select b");
    let output = e.wait_for(tid("node-output")).await.text().await.unwrap_or_default();
    assert_eq!(output, "done");
    assert_eq!(e.count(tid("node-input")).await, 0, "the input is folded until asked for");
    e.wait_for(tid("node-input-toggle")).await.click().await.expect("unfold the input");
    let input = e.wait_for(tid("node-input")).await.text().await.unwrap_or_default();
    assert_eq!(input, "## Run input\n\nwhat is it?\n\n## Output of `a`\n\n```json\n{\n  \"answer\": 42\n}\n```");
    e.wait_for(tid("node-output-toggle")).await.click().await.expect("fold the output");
    assert_eq!(e.count(tid("node-output")).await, 0);

    e.wait_for(node("a")).await.click().await.expect("select a");
    wait_until("a's output", || async { text_of(&e, tid("node-output")).await == "{\n  \"answer\": 42\n}" }).await;
    e.driver.clone().quit().await.ok();
}

/// A repository whose working tree changes lines 1 to 3 of `upload.rs`.
fn review_repo(e: &Editor) -> PathBuf {
    let repo = e.ws.root().join("repo");
    std::fs::create_dir_all(&repo).expect("mkdir");
    git(&repo, &["init", "-q"]);
    std::fs::write(repo.join("upload.rs"), "fn save() {}\n").expect("write");
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "one"]);
    let changed = "fn save(name: &str) {\n    std::fs::write(name, b\"\").ok();\n}\n";
    std::fs::write(repo.join("upload.rs"), changed).expect("write");
    repo
}

/// A fake answer with these findings (line, severity, lane, stance, description) and
/// counts that match them.
fn findings(delay_ms: u64, list: &[(u64, &str, &str, &str, &str)]) -> String {
    let findings: Vec<Value> = list
        .iter()
        .map(|(line, severity, lane, stance, description)| {
            json!({"severity": severity, "file": "upload.rs", "line": line, "description": description,
                   "raisedBy": lane, "stance": stance})
        })
        .collect();
    let count = |s: &str| list.iter().filter(|f| f.1 == s && f.3 == "concern").count();
    let counts =
        json!({"blocker": count("blocker"), "major": count("major"), "minor": count("minor"), "nit": count("nit")});
    format!("delay={delay_ms};json={}", json!({"findings": findings, "counts": counts}))
}

/// Security and conventions review the change, a Writer merges them.
fn review(writer: &str) -> Value {
    let reviewer = |id: &str, y: i32, model: String| {
        let mut node = agent(id, 300, y, &model);
        node["agent"]["output_schema_ref"] = json!("review.findings.v1");
        node
    };
    let security = findings(300, &[(1, "blocker", "security", "concern", "the path comes from the user")]);
    let conventions = findings(300, &[(1, "nit", "conventions", "approval", "the write is fine")]);
    let agents = vec![
        reviewer("security", 40, security),
        reviewer("conventions", 260, conventions),
        reviewer("writer", 150, writer.to_string()),
    ];
    let edges = [
        ("input", "security"),
        ("input", "conventions"),
        ("security", "writer"),
        ("conventions", "writer"),
        ("writer", "out"),
    ];
    let mut conclave = plain("ui-review", agents, &edges);
    conclave["nodes"][3]["position"] = json!({"x": 580, "y": 150});
    conclave
}

/// Starts a review of `repo` through the API and waits for its reports.
async fn review_through_api(e: &Editor, repo: &Path) -> String {
    let body = json!({"conclave_id": "ui-review", "review": {"repository": repo.display().to_string()}});
    let started: Value = reqwest::Client::new()
        .post(format!("{}/api/runs", e.base))
        .bearer_auth(&e.token)
        .json(&body)
        .send()
        .await
        .expect("start")
        .json()
        .await
        .expect("json");
    let id = started["run_id"].as_str().expect("run id").to_string();
    let report = format!("{}/api/runs/{id}/report?format=json", e.base);
    wait_until("the review's report", || {
        let report = report.clone();
        async move {
            let response = reqwest::Client::new().get(report).bearer_auth(&e.token).send().await;
            response.is_ok_and(|r| r.status().is_success())
        }
    })
    .await;
    id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn comparing_two_review_runs_shows_added_removed_and_changed_findings_wherever_their_lines_moved() {
    let e = Editor::start(Path::new(TESTBED)).await;
    let repo = review_repo(&e);
    let before = findings(
        0,
        &[
            (1, "blocker", "security", "concern", "the path comes from the user"),
            (2, "nit", "conventions", "concern", "name the constant"),
        ],
    );
    put(&e, &review(&before), true).await;
    let first = review_through_api(&e, &repo).await;
    // Two lines above the code move the security finding from line 1 to line 3: its
    // fingerprint names the code, so it is the same finding, changed, not a new one.
    let code = std::fs::read_to_string(repo.join("upload.rs")).expect("read");
    std::fs::write(repo.join("upload.rs"), format!("// Uploads.\n// Saves a file.\n{code}")).expect("write");
    let after = findings(
        0,
        &[
            (3, "major", "security", "concern", "the path comes from the user"),
            (5, "minor", "correctness", "concern", "the write is unchecked"),
        ],
    );
    put(&e, &review(&after), false).await;
    let second = review_through_api(&e, &repo).await;

    e.driver.refresh().await.expect("reload");
    for id in [&second, &first] {
        let pick = format!("[data-testid='run-item'][data-run-id='{id}'] [data-testid='run-pick']");
        e.wait_for(By::Css(pick)).await.click().await.expect("pick the run");
    }
    e.wait_for(tid("run-compare")).await.click().await.expect("compare");
    wait_for_status(&e, Some(&second), "succeeded").await;
    let added = e.wait_for(tid("compare-added")).await;
    assert_eq!(added.text().await.unwrap_or_default(), "+ upload.rs:5 [minor, correctness] the write is unchecked");
    let removed = e.wait_for(tid("compare-removed")).await.text().await.unwrap_or_default();
    assert_eq!(removed, "− upload.rs:2 [nit, conventions] name the constant");
    let changed = e.wait_for(tid("compare-changed")).await.text().await.unwrap_or_default();
    assert_eq!(changed, "~ upload.rs:3 [security] severity blocker → major", "moved, not removed and added");
    let heading = e.wait_for(tid("comparison")).await.text().await.unwrap_or_default();
    assert!(heading.starts_with(&format!("Findings since run {}", &first[..13])), "{heading}");
    e.driver.clone().quit().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_from_here_on_the_writer_reruns_only_it_and_ends_with_a_report() {
    let e = Editor::start(Path::new(TESTBED)).await;
    let repo = review_repo(&e);
    let writer = findings(300, &[(1, "blocker", "security", "concern", "the path comes from the user")]);
    put(&e, &review(&writer), true).await;
    open(&e, "ui-review").await;
    start_from_dialog(&e, Some(&repo), "").await;
    wait_for_status(&e, None, "succeeded").await;
    e.wait_for(tid("report")).await;
    let first = runs(&e).await[0]["id"].as_str().expect("id").to_string();

    e.wait_for(node("writer")).await.click().await.expect("select the writer");
    e.wait_for(tid("run-from-here")).await.click().await.expect("run from here");
    wait_until("a second run", || async { runs(&e).await.len() == 2 }).await;
    let second = runs(&e).await[0]["id"].as_str().expect("id").to_string();
    wait_for_status(&e, Some(&second), "succeeded").await;
    let report = e.wait_for(tid("report")).await.text().await.unwrap_or_default();
    assert!(report.contains("## Contradictions (1)"), "the writer compared its reused reviewers: {report}");

    let record = e.api(&format!("/api/runs/{second}")).await;
    let reused: Vec<(&str, &Value)> = record["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| (n["node_id"].as_str().unwrap_or_default(), &n["reused_from"]))
        .collect();
    let from = json!(first);
    assert_eq!(
        reused,
        vec![
            ("input", &Value::Null),
            ("security", &from),
            ("conventions", &from),
            ("writer", &Value::Null),
            ("out", &Value::Null)
        ]
    );
    for id in ["security", "conventions"] {
        let class = e.wait_for(bar(id)).await.class_name().await.ok().flatten().unwrap_or_default();
        assert!(class.contains("reused"), "{id}'s bar is marked reused: {class}");
        assert_eq!(e.wait_for(bar(id)).await.text().await.unwrap_or_default(), "reused · no cost");
    }
    let writer_bar = e.wait_for(bar("writer")).await.class_name().await.ok().flatten().unwrap_or_default();
    assert!(!writer_bar.contains("reused"), "{writer_bar}");
    e.driver.clone().quit().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_of_a_pull_request_shows_the_request_beside_its_run() {
    let e = Editor::start(Path::new(TESTBED)).await;
    put(&e, &plain("solo", vec![agent("a", 300, 150, "text=reviewed")], &[("input", "a"), ("a", "out")]), true).await;
    open(&e, "solo").await;
    start_from_dialog(&e, None, "not a review").await;
    wait_for_status(&e, None, "succeeded").await;
    let plain_run = runs(&e).await[0]["id"].as_str().expect("id").to_string();
    // A review a webhook asked for names its pull request in its input.
    let request = json!({"forge": "github", "repository": "o/r", "number": 7});
    let body = json!({"conclave_id": "solo", "input": {"pull_request": request}});
    let response =
        reqwest::Client::new().post(format!("{}/api/runs", e.base)).bearer_auth(&e.token).json(&body).send().await;
    let started: Value = response.expect("start").json().await.expect("json");
    let reviewed = started["run_id"].as_str().unwrap_or_else(|| panic!("no run id: {started}")).to_string();

    // The page lists the runs when it loads: the review's among them.
    e.driver.refresh().await.expect("reload");
    let item = |id: &str| format!("[data-testid='run-item'][data-run-id='{id}']");
    let label = e.wait_for(By::Css(format!("{} [data-testid='run-request']", item(&reviewed)))).await;
    assert_eq!(label.text().await.unwrap_or_default(), "o/r#7");
    let title = label.attr("title").await.ok().flatten();
    assert_eq!(title.as_deref(), Some("Review of pull request o/r#7"));
    e.wait_for(By::Css(item(&plain_run))).await;
    assert_eq!(e.count(By::Css(format!("{} [data-testid='run-request']", item(&plain_run)))).await, 0);

    // The review's run is watched as any other.
    e.wait_for(By::Css(item(&reviewed))).await.click().await.expect("watch the review");
    wait_for_status(&e, Some(&reviewed), "succeeded").await;
    e.driver.clone().quit().await.ok();
}
