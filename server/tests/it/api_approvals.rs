//! Approval nodes through the HTTP API: a decision recorded and the run taken up
//! again by the server, a decision refused once made or for no run, a parked run
//! cancelled, and a wait whose time ran out ended by the server's sweep.

use axum::http::StatusCode;
use serde_json::json;

use crate::api::{Api, api_with};

/// Polls run `id` until its status is none of `passing` (nor `running`, `queued`);
/// that status.
async fn settled(api: &Api, id: &str, passing: &[&str]) -> String {
    for _ in 0..400 {
        let (_, run, _) = api.get(&format!("/api/runs/{id}")).await;
        let status = run["status"].as_str().unwrap_or_default().to_string();
        if !["running", "queued", ""].contains(&status.as_str()) && !passing.contains(&status.as_str()) {
            return status;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    panic!("run {id} never settled");
}

#[tokio::test]
async fn an_approval_is_decided_through_the_api_and_the_run_goes_on() {
    let api = api_with(None);
    let gate = json!({"version": 1, "id": "gate", "name": "Gate",
        "nodes": [{"id": "in", "kind": "trigger"}, {"id": "approve", "kind": "approval", "approval": {"prompt": "Go on?"}},
                  {"id": "out", "kind": "output"}],
        "edges": [{"from": "in", "to": "approve"}, {"from": "approve", "to": "out"}]});
    assert_eq!(api.send("POST", "/api/conclaves", gate).await.0, StatusCode::CREATED);
    let (_, started, _) = api.send("POST", "/api/runs", json!({"conclave_id": "gate", "input": "x"})).await;
    let id = started["run_id"].as_str().expect("run id").to_string();
    assert_eq!(settled(&api, &id, &[]).await, "waiting");
    let (_, run, _) = api.get(&format!("/api/runs/{id}")).await;
    let approve = run["nodes"].as_array().expect("nodes").iter().find(|n| n["node_id"] == "approve").cloned();
    assert_eq!(approve.expect("node")["state"], "waiting", "{run}");

    let url = format!("/api/runs/{id}/nodes/approve/approval");
    let (status, body, _) = api.call("POST", &url, Some("{\"approve\": ".into()), &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let decision = json!({"approve": true, "comment": "fine", "by": "carol"});
    let (status, body, _) = api.send("POST", &url, decision.clone()).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    // Until the server takes it up again, the decided run still reads `waiting`.
    assert_eq!(settled(&api, &id, &["waiting"]).await, "succeeded");
    let (_, run, _) = api.get(&format!("/api/runs/{id}")).await;
    let out = run["nodes"].as_array().expect("nodes").iter().find(|n| n["node_id"] == "out").cloned().expect("out");
    assert_eq!(out["output"]["value"]["approve"], json!({"approved": true, "by": "carol", "comment": "fine"}));

    let (status, body, _) = api.send("POST", &url, decision.clone()).await;
    assert_eq!(status, StatusCode::CONFLICT, "a decided node is not decided again: {body}");
    let (status, _, _) = api.send("POST", "/api/runs/no-such-run/nodes/approve/approval", decision).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // A parked run can be cancelled: no process holds it, so the server ends it.
    let (_, started, _) = api.send("POST", "/api/runs", json!({"conclave_id": "gate", "input": "y"})).await;
    let id = started["run_id"].as_str().expect("run id").to_string();
    assert_eq!(settled(&api, &id, &[]).await, "waiting");
    let (status, body, _) = api.send("POST", &format!("/api/runs/{id}/cancel"), json!({})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(settled(&api, &id, &[]).await, "cancelled");
    let (_, run, _) = api.get(&format!("/api/runs/{id}")).await;
    let approve = run["nodes"].as_array().expect("nodes").iter().find(|n| n["node_id"] == "approve").cloned();
    assert_eq!(approve.expect("node")["state"], "cancelled", "the waiting approval ends with the run");
    let url = format!("/api/runs/{id}/nodes/approve/approval");
    assert_eq!(api.send("POST", &url, json!({"approve": true})).await.0, StatusCode::CONFLICT);
}

#[tokio::test]
async fn an_approval_whose_time_ran_out_ends_the_run_rejected_without_anyone_deciding() {
    let api = api_with(None);
    let gate = json!({"version": 1, "id": "brief", "name": "Brief",
        "nodes": [{"id": "in", "kind": "trigger"}, {"id": "approve", "kind": "approval", "approval": {"timeout_secs": 1}},
                  {"id": "out", "kind": "output"}],
        "edges": [{"from": "in", "to": "approve"}, {"from": "approve", "to": "out"}]});
    assert_eq!(api.send("POST", "/api/conclaves", gate).await.0, StatusCode::CREATED);
    let (_, started, _) = api.send("POST", "/api/runs", json!({"conclave_id": "brief", "input": "x"})).await;
    let id = started["run_id"].as_str().expect("run id").to_string();
    assert_eq!(settled(&api, &id, &[]).await, "waiting");
    assert!(
        conclave_server::api::approvals::expire_approvals(&api.state).await.is_empty(),
        "not yet: a second to decide"
    );
    // The sweep the server runs every few seconds, until the second has passed.
    let mut taken = Vec::new();
    for _ in 0..100 {
        taken = conclave_server::api::approvals::expire_approvals(&api.state).await;
        if !taken.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(taken, std::slice::from_ref(&id));
    assert_eq!(settled(&api, &id, &["waiting"]).await, "rejected");
    let (_, run, _) = api.get(&format!("/api/runs/{id}")).await;
    assert_eq!(run["error"], "`approve` was rejected by timeout: the time to decide ran out", "{run}");
}
