//! `POST /api/runs` with `from_node` and `reuse_run`, through `app()` without a socket:
//! a plain run and a review run from a node, and each refusal with its status, JSON
//! path and message.

use axum::http::StatusCode;
use conclave_testkit::git;
use serde_json::{Value, json};

use super::api::{Api, api_with};

fn api() -> Api {
    api_with(None)
}

impl Api {
    async fn post(&self, uri: &str, body: Value) -> (StatusCode, Value, String) {
        self.send("POST", uri, body).await
    }

    /// Starts a run that must be accepted and waits for its end (the event stream
    /// ends with `run_finished`); its record.
    async fn run(&self, body: Value) -> Value {
        let (status, started, _) = self.post("/api/runs", body).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{started}");
        let id = started["run_id"].as_str().expect("run id").to_string();
        self.get(&format!("/api/runs/{id}/events")).await;
        self.get(&format!("/api/runs/{id}")).await.1
    }

    /// A refused start: its status, JSON path and message.
    async fn refused(&self, body: Value) -> (StatusCode, Option<String>, String) {
        let (status, body, _) = self.post("/api/runs", body).await;
        let error = &body["error"];
        (status, error["path"].as_str().map(str::to_string), error["message"].as_str().unwrap_or_default().to_string())
    }
}

fn agent(id: &str, model: &str) -> Value {
    json!({"id": id, "kind": "agent", "label": id, "position": {"x": 0, "y": 0}, "agent": {"provider": "fake", "model": model}})
}

/// input → {a, b} → c → out.
fn fan(id: &str) -> Value {
    json!({
        "version": 1, "id": id, "name": id,
        "nodes": [
            {"id": "input", "kind": "trigger", "label": "Input", "position": {"x": 0, "y": 0}},
            agent("a", ""), agent("b", ""), agent("c", ""),
            {"id": "out", "kind": "output", "label": "Out", "position": {"x": 600, "y": 0}}
        ],
        "edges": [{"from": "input", "to": "a"}, {"from": "input", "to": "b"},
                  {"from": "a", "to": "c"}, {"from": "b", "to": "c"}, {"from": "c", "to": "out"}]
    })
}

fn node<'a>(record: &'a Value, id: &str) -> &'a Value {
    record["nodes"].as_array().expect("nodes").iter().find(|n| n["node_id"] == id).expect("node")
}

#[tokio::test]
async fn a_plain_run_from_a_node_reuses_the_others_and_the_earlier_input() {
    let api = api();
    assert_eq!(api.post("/api/conclaves", fan("fan")).await.0, StatusCode::CREATED);
    let first = api.run(json!({"conclave_id": "fan", "input": {"question": "why?"}})).await;
    let first_id = first["id"].as_str().expect("id");
    assert_eq!(first["status"], "succeeded");

    let second = api.run(json!({"conclave_id": "fan", "from_node": "c", "reuse_run": first_id})).await;
    assert_eq!(second["status"], "succeeded", "{second}");
    assert_eq!(second["input"], json!({"question": "why?"}), "the earlier input is used again");
    for id in ["a", "b"] {
        assert_eq!(node(&second, id)["reused_from"], first_id, "{id}");
        assert_eq!(node(&second, id)["output"], node(&first, id)["output"], "{id}");
        assert_eq!(node(&second, id)["input"], node(&first, id)["input"], "{id}");
        assert_eq!(node(&second, id)["usage"], Value::Null, "a reused node costs nothing");
    }
    let c = node(&second, "c");
    assert_eq!((c["reused_from"].clone(), c["attempts"].clone()), (Value::Null, json!(1)));
    assert_eq!(c["input"], node(&first, "c")["input"], "c got what it got the first time");
    assert!(c["input"].as_str().is_some_and(|i| i.contains("## Output of `a`")), "{c}");
    assert!(c["started_ms"].as_u64() <= c["finished_ms"].as_u64() && c["started_ms"].is_u64(), "{c}");

    let third = api
        .run(json!({"conclave_id": "fan", "from_node": "c", "reuse_run": first_id, "input": "a new question"}))
        .await;
    assert_eq!(third["input"], "a new question", "a new input replaces the earlier one");
}

#[tokio::test]
async fn a_run_from_a_node_is_refused_with_where_and_why() {
    let api = api();
    for conclave in [fan("fan"), fan("other")] {
        assert_eq!(api.post("/api/conclaves", conclave).await.0, StatusCode::CREATED);
    }
    let first = api.run(json!({"conclave_id": "fan", "input": "x"})).await;
    let id = first["id"].as_str().expect("id").to_string();
    let other = api.run(json!({"conclave_id": "other", "input": "x"})).await;
    let other_id = other["id"].as_str().expect("id").to_string();
    let unprocessable = StatusCode::UNPROCESSABLE_ENTITY;

    assert_eq!(
        api.refused(json!({"conclave_id": "fan", "from_node": "c", "reuse_run": "nope"})).await,
        (StatusCode::NOT_FOUND, None, "no run `nope` to reuse".to_string())
    );
    assert_eq!(
        api.refused(json!({"conclave_id": "fan", "from_node": "c"})).await,
        (
            unprocessable,
            Some("/reuse_run".into()),
            "`from_node` needs `reuse_run`: the id of the earlier run whose other outputs are reused".into()
        )
    );
    assert_eq!(
        api.refused(json!({"conclave_id": "fan", "reuse_run": id})).await,
        (unprocessable, Some("/from_node".into()), "`reuse_run` needs `from_node`: the node to run from".into())
    );
    assert_eq!(
        api.refused(json!({"conclave_id": "fan", "from_node": "c", "reuse_run": other_id})).await,
        (
            unprocessable,
            Some("/reuse_run".into()),
            format!("run `{other_id}` is a run of conclave `other`, not `fan`; reuse a run of `fan`")
        )
    );
    assert_eq!(
        api.refused(json!({"conclave_id": "fan", "from_node": "zzz", "reuse_run": id})).await,
        (
            unprocessable,
            Some("/from_node".into()),
            "conclave `fan` has no node `zzz` to run from; give the id of one of its nodes".into()
        )
    );

    let mut changed = fan("fan");
    changed["nodes"][2]["agent"]["model"] = json!("text=another answer");
    assert_eq!(api.send("PUT", "/api/conclaves/fan", changed).await.0, StatusCode::OK);
    assert_eq!(
        api.refused(json!({"conclave_id": "fan", "from_node": "c", "reuse_run": id})).await,
        (
            unprocessable,
            Some("/from_node".into()),
            format!(
                "node `b` changed since run `{id}` (its agent settings are different), so its output there may not hold any more; run from `b` instead"
            )
        )
    );

    let mut failing = fan("fan");
    failing["nodes"][1]["agent"]["model"] = json!("fail=down");
    failing["settings"] = json!({"node_timeout_secs": 1});
    assert_eq!(api.send("PUT", "/api/conclaves/fan", failing.clone()).await.0, StatusCode::OK);
    let failed = api.run(json!({"conclave_id": "fan", "input": "x"})).await;
    assert_eq!(failed["status"], "failed");
    let failed_id = failed["id"].as_str().expect("id").to_string();
    assert_eq!(
        api.refused(json!({"conclave_id": "fan", "from_node": "b", "reuse_run": failed_id})).await,
        (
            unprocessable,
            Some("/from_node".into()),
            format!(
                "node `a` did not succeed in run `{failed_id}` (it ended `failed` there), so it has no output to reuse; run from `a` instead"
            )
        )
    );
    let runs = api.get("/api/runs").await.1;
    assert_eq!(runs.as_array().expect("runs").len(), 3, "no refused request started a run");
}

#[tokio::test]
async fn a_review_run_from_its_writer_reviews_the_same_change_and_stores_its_reports() {
    let api = api();
    let repo = api.dir.path().join("repo");
    std::fs::create_dir_all(&repo).expect("mkdir");
    git(&repo, &["init", "-q"]);
    std::fs::write(repo.join("a.rs"), "fn a() {}\n").expect("write");
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "a"]);
    std::fs::write(repo.join("a.rs"), "fn a() { b() }\n").expect("write");
    let answer = |severity: &str, lane: &str| {
        format!(
            r#"json={{"findings":[{{"severity":"{severity}","file":"a.rs","line":1,"description":"b is undefined","raisedBy":"{lane}"}}],"counts":{{"blocker":{},"major":0,"minor":{},"nit":0}}}}"#,
            u8::from(severity == "blocker"),
            u8::from(severity == "minor")
        )
    };
    let reviewer = |id: &str, severity: &str| {
        let mut node = agent(id, &answer(severity, id));
        node["agent"]["output_schema_ref"] = json!("review.findings.v1");
        node
    };
    let review = json!({
        "version": 1, "id": "mini-review", "name": "Mini review",
        "nodes": [
            {"id": "change", "kind": "trigger", "label": "Change", "position": {"x": 0, "y": 0}},
            reviewer("security", "blocker"), reviewer("style", "minor"), reviewer("writer", "blocker"),
            {"id": "report", "kind": "output", "label": "Report", "position": {"x": 600, "y": 0}}
        ],
        "edges": [{"from": "change", "to": "security"}, {"from": "change", "to": "style"},
                  {"from": "security", "to": "writer"}, {"from": "style", "to": "writer"}, {"from": "writer", "to": "report"}]
    });
    assert_eq!(api.post("/api/conclaves", review).await.0, StatusCode::CREATED);
    let first =
        api.run(json!({"conclave_id": "mini-review", "review": {"repository": repo.display().to_string()}})).await;
    let first_id = first["id"].as_str().expect("id").to_string();
    // The working tree changes after the first review; the run from the writer still
    // reviews the change the first run reviewed.
    std::fs::write(repo.join("a.rs"), "fn a() { c() }\n").expect("write");

    let second = api.run(json!({"conclave_id": "mini-review", "from_node": "writer", "reuse_run": first_id})).await;
    assert_eq!(second["status"], "succeeded", "{second}");
    assert_eq!(second["input"], first["input"], "the same change as the earlier review");
    let reused: Vec<&str> = second["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .filter(|n| n["reused_from"] == first_id.as_str())
        .filter_map(|n| n["node_id"].as_str())
        .collect();
    assert_eq!(reused, vec!["security", "style"]);
    let second_id = second["id"].as_str().expect("id");
    let mut report = (StatusCode::NOT_FOUND, Value::Null, String::new());
    for _ in 0..100 {
        report = api.get(&format!("/api/runs/{second_id}/report?format=json")).await;
        if report.0 == StatusCode::OK {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(report.0, StatusCode::OK, "a review run from a node gets its reports");
    let envelope = report.1;
    assert_eq!(envelope["review"]["findings"][0]["description"], "b is undefined", "{envelope}");
    let checks = &envelope["review"]["findings_checks"];
    assert_eq!(checks[0]["node_id"], "writer", "the writer compared its reused reviewers again: {envelope}");
    assert_eq!(checks[0]["check"]["contradictions"].as_array().map(Vec::len), Some(1), "{envelope}");
}
