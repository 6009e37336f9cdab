//! Budgets end to end: `conclave review --max-cost` on the default review with
//! Anthropic faked over loopback, and runs queued with `conclave run --queue
//! --max-cost` worked by two `conclave worker` processes on PostgreSQL. The fake
//! reports 42 generated tokens a call; a `pricing.json` in the config directory
//! prices the model at $0 a prompt token and $1 a generated token, so a call's worst
//! case is its `max_tokens` (4096 by default) in dollars and each call spends $42.

use conclave_testkit::wire::Vendor;
use conclave_testkit::{FakeServer, Route};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::review_e2e::{fixture_workspace, review, routes};
use crate::workers_cli::{conclave, fresh_postgres, stop};

/// The worst case of one call: 4096 generated tokens at $1.
const WORST: f64 = 4096.0;
/// What one call of the fake spends: 42 generated tokens at $1.
const CALL: f64 = 42.0;

fn price_generated_tokens_at_a_dollar(config: &Path) {
    std::fs::create_dir_all(config).expect("mkdir");
    let prices = json!({"anthropic": {"claude-sonnet-4-5": {"input": 0.0, "output": 1_000_000.0}}});
    std::fs::write(config.join("pricing.json"), prices.to_string()).expect("write");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_whose_budget_fits_two_reviewers_runs_two_and_is_degraded() {
    let (_dir, repo, workdir) = fixture_workspace();
    price_generated_tokens_at_a_dollar(&workdir.join("config"));
    let server = FakeServer::start_routed(routes()).await;
    // A reviewer makes two calls (its tool turn, then its answer). One at a time, the
    // fourth call starts with $126 spent and the fifth with $168: a budget of
    // $4096 + 3.5 × $42 lets the first four in and stops the fifth, the third
    // reviewer's first call.
    let budget = WORST + 3.5 * CALL;
    let args = vec![
        repo.display().to_string(),
        "--base".into(),
        "main".into(),
        "--format".into(),
        "json".into(),
        "--max-concurrency".into(),
        "1".into(),
        "--max-cost".into(),
        budget.to_string(),
        "--fail-on".into(),
        "blocker".into(),
    ];
    let out = review(&workdir, &server, args).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(6), "a degraded review fails its gate: {stderr}");
    assert!(stderr.contains("gate: the review is degraded"), "{stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).expect("a JSON report");

    let agents = report["budget"]["agents"].as_array().expect("the budget's agents").clone();
    let ran: Vec<&Value> = agents.iter().filter(|a| a["spent_usd"].as_f64() == Some(2.0 * CALL)).collect();
    let stopped: Vec<&Value> = agents.iter().filter(|a| a["stopped_by_budget"] == true).collect();
    assert_eq!(ran.len(), 2, "two reviewers ran both their calls: {agents:?}");
    assert_eq!(stopped.len(), 1, "the third reviewer was stopped by the budget: {agents:?}");
    assert_eq!(stopped[0]["spent_usd"], 0.0, "its call was not made");
    let writer = agents.iter().find(|a| a["node_id"] == "writer").expect("the writer is listed");
    assert_eq!((writer["spent_usd"].as_f64(), &writer["stopped_by_budget"]), (Some(0.0), &json!(false)));
    assert_eq!(report["budget"]["max_cost_usd"], budget);
    let spent = report["budget"]["spent_usd"].as_f64().expect("spent");
    assert_eq!(spent, 4.0 * CALL);
    assert!(spent <= budget);
    assert_eq!(server.requests().len(), 4, "four calls were made: the fifth did not fit");

    let reasons = report["review"]["degraded_reasons"].to_string();
    let stopped_id = stopped[0]["node_id"].as_str().expect("id");
    assert!(
        reasons
            .contains(&format!("agent `{stopped_id}` did not run to the end: a call of it did not fit in the budget")),
        "{reasons}"
    );
    assert!(reasons.contains("this provider call was not made: it may use up to $4096.0000"), "{reasons}");
    // The Writer comes after a failed reviewer, so it is skipped as after any failure.
    assert!(reasons.contains("agent `writer` was skipped"), "{reasons}");
    assert_eq!(report["review"]["degraded"], true);

    // The stored Markdown report shows the spending against the budget.
    let run_id = report["run_id"].as_str().expect("run id");
    let markdown = crate::review_e2e::conclave(&workdir, &server, &["runs", "report", run_id]);
    let markdown = String::from_utf8_lossy(&markdown.stdout);
    assert!(markdown.contains(&format!("Spent $168.0000 of ${budget:.4}")), "{markdown}");
    assert!(
        markdown.contains(&format!("| {stopped_id} | $0.0000 | 0 | - | stopped: a call did not fit in the budget |")),
        "{markdown}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_gate_a_budget_stop_exits_3_and_an_unpriced_model_is_refused_before_any_call() {
    let (_dir, repo, workdir) = fixture_workspace();
    let server = FakeServer::start_routed(routes()).await;
    let base = |extra: &[&str]| {
        let mut args = vec![repo.display().to_string(), "--base".into(), "main".into()];
        args.extend(extra.iter().map(|a| a.to_string()));
        args
    };
    // The built-in price of claude-sonnet-4-5 ($15 per million generated tokens)
    // makes a call's worst case over $0.06: a budget of a cent fits none.
    let out = review(&workdir, &server, base(&["--max-cost", "0.01"])).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "a budget stop is in the provider class: {stderr}");
    assert!(stderr.contains("this provider call was not made"), "{stderr}");
    assert!(server.requests().is_empty(), "no call fits");

    // A model with no price cannot be held to a cost budget: refused at the start.
    let mut conclave: Value =
        serde_json::from_str(include_str!("../../../conclaves/light-code-review.conclave.json")).expect("json");
    for node in conclave["nodes"].as_array_mut().expect("nodes") {
        if node["kind"] == "agent" {
            node["agent"]["model"] = json!("claude-unreleased");
        }
    }
    std::fs::write(workdir.join("unpriced.conclave.json"), conclave.to_string()).expect("write");
    let out = review(&workdir, &server, base(&["--conclave", "unpriced.conclave.json", "--max-cost", "1"])).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "node `security`: the run has a cost budget, but model `claude-unreleased` of provider `anthropic` has no \
             price"
        ) && stderr.contains("$CONCLAVE_CONFIG_DIR/pricing.json"),
        "{stderr}"
    );
    assert!(server.requests().is_empty(), "refused before any call");
}

/// A workspace with `conclaves/panel.conclave.json`: three reviewers without tools
/// feeding a writer.
fn panel_workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("conclaves")).expect("mkdir");
    let agent = |id: &str| {
        json!({"id": id, "kind": "agent", "label": id, "position": {"x": 0, "y": 0},
               "agent": {"provider": "anthropic", "model": "claude-sonnet-4-5", "system_prompt": format!("You are the {id} reviewer.")}})
    };
    let conclave = json!({
        "version": 1, "id": "panel", "name": "Panel",
        "nodes": [
            {"id": "in", "kind": "trigger", "label": "In", "position": {"x": 0, "y": 0}},
            agent("security"), agent("correctness"), agent("conventions"), agent("writer"),
            {"id": "out", "kind": "output", "label": "Out", "position": {"x": 0, "y": 0}}
        ],
        "edges": [
            {"from": "in", "to": "security"}, {"from": "in", "to": "correctness"}, {"from": "in", "to": "conventions"},
            {"from": "security", "to": "writer"}, {"from": "correctness", "to": "writer"},
            {"from": "conventions", "to": "writer"}, {"from": "writer", "to": "out"}
        ]
    });
    std::fs::write(dir.path().join("conclaves/panel.conclave.json"), conclave.to_string()).expect("write");
    price_generated_tokens_at_a_dollar(&dir.path().join("config"));
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_runs_keep_their_budget_on_two_workers_on_postgres() {
    let dir = panel_workspace();
    std::fs::write(dir.path().join("database-url"), fresh_postgres()).expect("write");
    let answer = || Vendor::Anthropic.answer("looked");
    let routes = ["security", "correctness", "conventions", "writer"]
        .map(|id| Route { marker: format!("You are the {id} reviewer."), replies: vec![answer(), answer()] })
        .to_vec();
    let server = FakeServer::start_routed(routes).await;
    // One call a reviewer, one at a time: the third starts with $84 spent, and a
    // budget of $4096 + 1.5 × $42 stops it.
    let budget = WORST + 1.5 * CALL;
    let ids: Vec<String> = (0..2)
        .map(|i| {
            let out = conclave(dir.path(), &server)
                .args(["run", "panel", "--input", &format!("change {i}"), "--queue", "--max-cost", &budget.to_string()])
                .output()
                .expect("runs");
            assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        })
        .collect();
    let workers: Vec<_> = (0..2)
        .map(|_| {
            conclave(dir.path(), &server)
                .args(["worker", "--max-concurrency", "1"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("a worker starts")
        })
        .collect();
    for id in &ids {
        let shown = ended(dir.path(), &server, id).await;
        assert_eq!(shown["run"]["status"], "failed", "{shown}");
        let nodes = shown["run"]["nodes"].as_array().expect("nodes");
        assert_eq!(shown["run"]["conclave"]["settings"]["budget"]["max_cost_usd"], budget, "stored with the run");
        let state = |s: &str| nodes.iter().filter(|n| n["state"] == s).count();
        let stopped: Vec<&Value> = nodes.iter().filter(|n| n["state"] == "failed").collect();
        assert_eq!(stopped.len(), 1, "{shown}");
        assert!(
            stopped[0]["error"].as_str().unwrap_or("").starts_with("budget: this provider call was not made"),
            "{shown}"
        );
        let writer = nodes.iter().find(|n| n["node_id"] == "writer").expect("writer");
        assert_eq!(writer["state"], "skipped", "the writer is skipped after the stopped reviewer: {shown}");
        assert_eq!(state("succeeded"), 3, "the trigger and two reviewers: {shown}");
        let spent: f64 = nodes.iter().filter_map(|n| n["usage"]["cost_usd"].as_f64()).sum();
        assert_eq!(spent, 2.0 * CALL, "two reviewers ran: {shown}");
        assert!(spent <= budget);
    }
    assert_eq!(server.requests().len(), 4, "two calls a run");
    workers.into_iter().for_each(stop);
}

/// Waits (off the async runtime, so the fake keeps serving) until `run_id` ends.
async fn ended(dir: &Path, server: &FakeServer, run_id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let out: std::process::Output = tokio::task::block_in_place(|| {
            conclave(dir, server).args(["runs", "show", run_id, "--json"]).output().expect("runs")
        });
        let shown: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        if !["", "queued", "running"].contains(&shown["run"]["status"].as_str().unwrap_or("")) {
            return shown;
        }
        assert!(Instant::now() < deadline, "run {run_id} did not end: {shown}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn the_api_takes_a_budget_and_stores_it_with_the_run() {
    use axum::http::StatusCode;
    let api = crate::api::api_with(None);
    api.send("POST", "/api/conclaves", crate::api::conclave("pair", "text=hello")).await;
    let body = json!({"conclave_id": "pair", "input": "x", "budget": {"max_cost_usd": -1}});
    let (status, refused, _) = api.send("POST", "/api/runs", body).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
    assert_eq!(refused["error"]["path"], "/budget/max_cost_usd", "{refused}");

    // A token budget needs no price: 4,096 generated tokens at most do not fit in 100.
    let body = json!({"conclave_id": "pair", "input": "x", "budget": {"max_tokens": 100}});
    let (status, started, _) = api.send("POST", "/api/runs", body).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{started}");
    let id = started["run_id"].as_str().expect("run id").to_string();
    let (_, _, events) = api.get(&format!("/api/runs/{id}/events")).await;
    assert!(events.contains("run_finished"), "{events}");
    let (_, run, _) = api.get(&format!("/api/runs/{id}")).await;
    assert_eq!(run["conclave"]["settings"]["budget"], json!({"max_tokens": 100}), "{run}");
    let a = run["nodes"].as_array().and_then(|n| n.iter().find(|n| n["node_id"] == "a").cloned()).expect("a");
    assert_eq!(a["state"], "failed", "{run}");
    assert!(a["error"].as_str().unwrap_or("").contains("of the run's token budget of 100 tokens"), "{run}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conclave_run_stops_at_its_budget_with_exit_3_and_says_what_it_spent() {
    let dir = panel_workspace();
    let answer = || Vendor::Anthropic.answer("looked");
    let routes = ["security", "correctness", "conventions", "writer"]
        .map(|id| Route { marker: format!("You are the {id} reviewer."), replies: vec![answer()] })
        .to_vec();
    let server = FakeServer::start_routed(routes).await;
    let budget = (WORST + 1.5 * CALL).to_string();
    let args = ["run", "panel", "--input", "a change", "--max-concurrency", "1", "--max-cost", budget.as_str()];
    let out = tokio::task::block_in_place(|| conclave(dir.path(), &server).args(args).output().expect("runs"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("this provider call was not made"), "{stderr}");
    assert!(stderr.contains("budget: spent $84.0000 of $4159.0000, 324 tokens"), "{stderr}");
}
