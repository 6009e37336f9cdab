//! The new node kinds in headless Chromium, built as a person builds them: nodes
//! dragged from the palette, ports connected with real pointer events, settings
//! typed key by key; then run: a route that skips a lane, an approval decided with
//! the run panel's Approve button, and a cached agent marked on a second run.

use conclave_tests::browser::{Editor, node, tid, wait_until};
use serde_json::{Value, json};
use std::path::Path;
use thirtyfour::prelude::*;

use crate::editor_runs::{agent, open, plain, put, start_from_dialog, text_of, wait_for_status};

const TESTBED: &str = env!("CARGO_BIN_EXE_conclave-testbed");

fn status_of(id: &str) -> By {
    By::Css(format!("[data-testid='node-status'][data-node-id='{id}']"))
}

async fn select(e: &Editor, id: &str) {
    e.wait_for(node(id)).await.find(By::ClassName("label")).await.expect("label").click().await.expect("select");
    e.wait_for(tid("inspector")).await;
}

fn edges(conclave: &Value) -> Vec<(String, String, Option<String>)> {
    let list = conclave["edges"].as_array().cloned().unwrap_or_default();
    let mut edges: Vec<_> = list
        .iter()
        .map(|e| {
            let end = |k: &str| e[k].as_str().unwrap_or_default().to_string();
            (end("from"), end("to"), e["case"].as_str().map(str::to_string))
        })
        .collect();
    edges.sort();
    edges
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_route_built_by_hand_sends_the_run_down_one_lane_and_the_join_runs() {
    let e = Editor::start(Path::new(TESTBED)).await;
    let lanes = vec![
        agent("security", 520, 0, "text=security looked"),
        agent("general", 520, 300, "text=general looked"),
        agent("writer", 700, 150, "text=written"),
    ];
    put(&e, &plain("lanes", lanes, &[("writer", "out")]), true).await;
    open(&e, "lanes").await;
    e.drop_on_canvas("palette-route", -120, 260).await;
    e.wait_for(node("route")).await;
    for (from, to) in [("input", "route"), ("route", "security"), ("route", "general")] {
        e.connect(from, to).await;
    }
    for from in ["security", "general"] {
        e.connect(from, "writer").await;
    }
    wait_until("the cases on the route's edges", || async { e.count(tid("edge-case")).await == 2 }).await;
    let mut labels = Vec::new();
    for label in e.driver.find_all(tid("edge-case")).await.expect("labels") {
        labels.push(label.text().await.unwrap_or_default());
    }
    labels.sort();
    assert_eq!(labels, ["no", "yes"], "each edge out of the route shows its case");

    select(&e, "route").await;
    let pointer = e.wait_for(tid("case-pointer")).await;
    e.clear_and_type(&pointer, "/input/touches_auth").await;
    let saved = e.save_as("lanes").await;
    assert_eq!(
        saved["nodes"].as_array().expect("nodes").iter().find(|n| n["id"] == "route").expect("route")["route"],
        json!({"cases": [{"name": "yes", "when": {"pointer": "/input/touches_auth", "op": "exists"}}], "otherwise": "no"})
    );
    assert_eq!(
        edges(&saved),
        [
            ("general".into(), "writer".into(), None),
            ("input".into(), "route".into(), None),
            ("route".into(), "general".into(), Some("no".into())),
            ("route".into(), "security".into(), Some("yes".into())),
            ("security".into(), "writer".into(), None),
            ("writer".into(), "out".into(), None),
        ]
    );

    // The run input is text, with no `touches_auth`: the route takes `no`.
    start_from_dialog(&e, None, "a change").await;
    wait_for_status(&e, None, "succeeded").await;
    assert_eq!(text_of(&e, status_of("security")).await, "skipped (route)");
    assert_eq!(text_of(&e, status_of("general")).await, "succeeded");
    let run = &e.api("/api/runs").await[0];
    let record = e.api(&format!("/api/runs/{}", run["id"].as_str().expect("id"))).await;
    let state = |id: &str| {
        record["nodes"].as_array().and_then(|n| n.iter().find(|n| n["node_id"] == id)).map(|n| n["state"].clone())
    };
    assert_eq!(state("writer"), Some(json!("succeeded")), "the join ran on the lane that was taken");
    assert_eq!(state("security"), Some(json!("skipped")));
    e.driver.clone().quit().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_dropped_on_the_canvas_waits_for_the_approve_button() {
    let e = Editor::start(Path::new(TESTBED)).await;
    put(&e, &plain("gated", Vec::new(), &[]), true).await;
    open(&e, "gated").await;
    e.drop_on_canvas("palette-approval", 0, 0).await;
    e.wait_for(node("approval")).await;
    e.connect("input", "approval").await;
    e.connect("approval", "out").await;
    select(&e, "approval").await;
    let prompt = e.wait_for(tid("approval-prompt")).await;
    e.clear_and_type(&prompt, "Ship it?").await;
    let saved = e.save_as("gated").await;
    let approval = saved["nodes"].as_array().expect("nodes").iter().find(|n| n["id"] == "approval").cloned();
    assert_eq!(approval.expect("approval")["approval"], json!({"prompt": "Ship it?"}));

    start_from_dialog(&e, None, "hello").await;
    wait_for_status(&e, None, "waiting").await;
    assert_eq!(text_of(&e, status_of("approval")).await, "waiting");
    e.wait_for(node("approval"))
        .await
        .find(tid("approve"))
        .await
        .expect("the Approve button")
        .click()
        .await
        .expect("approve");
    wait_for_status(&e, None, "succeeded").await;
    assert_eq!(text_of(&e, status_of("approval")).await, "succeeded");
    assert_eq!(e.count(tid("approve")).await, 0, "a decided approval has no buttons");
    let run = &e.api("/api/runs").await[0];
    let events = e.api(&format!("/api/runs/{}", run["id"].as_str().expect("id"))).await;
    let approval = events["nodes"].as_array().expect("nodes").iter().find(|n| n["node_id"] == "approval").cloned();
    assert_eq!(approval.expect("approval")["output"]["value"]["by"], "editor");
    e.driver.clone().quit().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cached_agent_is_marked_cached_after_a_second_run() {
    let e = Editor::start(Path::new(TESTBED)).await;
    put(&e, &plain("cached", vec![agent("a", 300, 150, "text=an answer")], &[("input", "a"), ("a", "out")]), true)
        .await;
    open(&e, "cached").await;
    select(&e, "a").await;
    e.wait_for(tid("node-cache")).await.click().await.expect("tick cache");
    let saved = e.save_as("cached").await;
    assert_eq!(saved["nodes"][1]["agent"]["cache"], json!(true));
    for (round, expected) in [(1, "succeeded"), (2, "cached")] {
        start_from_dialog(&e, None, "the same input").await;
        // The run is listed once the server has created it, which a busy machine delays.
        let mut runs = e.api("/api/runs").await;
        for _ in 0..200 {
            if runs.as_array().is_some_and(|list| list.len() >= round) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            runs = e.api("/api/runs").await;
        }
        let id = runs[0]["id"].as_str().expect("id").to_string();
        wait_for_status(&e, Some(&id), "succeeded").await;
        assert_eq!(text_of(&e, status_of("a")).await, expected, "run {round}");
    }
    e.driver.clone().quit().await.ok();
}
