//! Parts: a partitioned run input, the agents named running once per part (each
//! part under the run's limits), their answers merged by the run's policy; the
//! other nodes receive the run input without its parts.

use conclave_core::ProviderError;
use conclave_doubles::{FakeProvider, FakeStep, MemoryStore};
use conclave_engine::{EngineConfig, OutputPolicy, Parts, RunOptions, Samples};
use conclave_shared::{EventKind, RunStatus};
use conclave_testkit::checked;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::engine::{engine_with, graph, with_schema};

/// Merges parts by listing the lines found, in part order, and the failed parts;
/// merges samples by keeping every finding.
#[derive(Debug)]
struct Gather;

impl OutputPolicy for Gather {
    fn merge_parts(&self, answers: Vec<Value>, findings_field: &str, failed: &[String]) -> Value {
        let lines: Vec<Value> =
            answers.iter().flat_map(|a| a[findings_field].as_array().cloned().unwrap_or_default()).collect();
        json!({"findings": lines, "answered": answers.len(), "failed": failed})
    }

    fn merge_samples(&self, answers: Vec<Value>, findings_field: &str, _failed: &[String]) -> Value {
        let all: Vec<Value> =
            answers.iter().flat_map(|a| a[findings_field].as_array().cloned().unwrap_or_default()).collect();
        json!({"findings": all})
    }
}

fn findings_schema() -> Value {
    json!({"type": "object", "required": ["findings"], "properties": {"findings": {"type": "array", "items": {
        "type": "object",
        "properties": {"file": {"type": "string"}, "line": {"type": "integer"}, "severity": {"type": "string"}}
    }}}})
}

fn answer(line: u64) -> FakeStep {
    FakeStep::json(json!({"findings": [{"file": "a", "line": line}]}))
}

fn partitioned(parts: usize) -> Value {
    let list: Vec<Value> = (1..=parts).map(|p| json!({"text": format!("piece {p}"), "part": p})).collect();
    json!({"text": "too long for one call", "names": ["x", "y"], "parts": list})
}

fn limited(limit: usize) -> EngineConfig {
    EngineConfig { provider_limits: HashMap::from([("fake".to_string(), limit)]), ..Default::default() }
}

fn options(nodes: &[&str]) -> RunOptions {
    RunOptions {
        policy: Some(Arc::new(Gather)),
        parts: Some(Parts { nodes: nodes.iter().map(|n| n.to_string()).collect() }),
        ..RunOptions::default()
    }
}

#[tokio::test]
async fn a_named_agent_runs_once_per_part_within_the_limit_and_the_others_see_no_parts() {
    let fake = Arc::new(FakeProvider::new("fake"));
    fake.script("a", (1..=4).map(|line| answer(line).after(Duration::from_millis(60))));
    let engine = engine_with(fake.clone(), Arc::new(MemoryStore::new()), limited(2));
    let conclave = with_schema(graph(&["t:t", "a:a", "w:a", "o:o"], &["t>a", "a>w", "w>o"]), "a", findings_schema(), 0);
    let handle = engine.start(checked(conclave), partitioned(4), options(&["a"])).await.expect("starts");
    let outcome = handle.wait().await;
    assert_eq!(outcome.status, RunStatus::Succeeded, "{:?}", outcome.error);

    let calls = fake.calls_for("a");
    assert_eq!(calls.len(), 4, "one call per part");
    let mut seen: Vec<Value> = calls.iter().map(|c| c.input["input"]["text"].clone()).collect();
    seen.sort_by_key(Value::to_string);
    assert_eq!(seen, [json!("piece 1"), json!("piece 2"), json!("piece 3"), json!("piece 4")]);
    assert!(
        calls.iter().all(|c| c.input["input"]["names"] == json!(["x", "y"]) && c.input["input"]["parts"].is_null())
    );
    assert_eq!(fake.peak_concurrency(), 2, "parts share the provider's limit of 2");

    let merged = outcome.outputs["a"].to_input_value();
    assert_eq!(merged["answered"], 4);
    assert_eq!(merged["findings"].as_array().map(Vec::len), Some(4), "every part's findings reach the merge");
    let writer = fake.calls_for("w");
    assert_eq!(writer.len(), 1, "a node not named runs once");
    assert_eq!(writer[0].input["input"], json!({"text": "too long for one call", "names": ["x", "y"]}));
    assert_eq!(writer[0].input["upstream"]["a"], merged, "it reads the merged output");
    let events = engine.store().events(&outcome.run_id, 0).await.expect("events");
    let started = events.iter().filter(|e| matches!(&e.kind, EventKind::NodeStarted { node_id, .. } if node_id == "a"));
    assert_eq!(started.count(), 1, "the node starts once however many parts it runs");
}

#[tokio::test]
async fn a_failed_part_is_recorded_by_the_policy_and_only_every_part_failing_fails_the_node() {
    let fake = Arc::new(FakeProvider::new("fake"));
    // One call at a time: the parts take the provider's permit in part order.
    fake.script("a", [answer(1), FakeStep::fail(ProviderError::Auth("key refused".into())), answer(3)]);
    let engine = engine_with(fake.clone(), Arc::new(MemoryStore::new()), limited(1));
    let conclave = || with_schema(graph(&["t:t", "a:a", "o:o"], &["t>a", "a>o"]), "a", findings_schema(), 0);
    let outcome =
        engine.start(checked(conclave()), partitioned(3), options(&["a"])).await.expect("starts").wait().await;
    assert_eq!(outcome.status, RunStatus::Succeeded, "{:?}", outcome.error);
    let merged = outcome.outputs["a"].to_input_value();
    assert_eq!(merged["answered"], 2);
    assert_eq!(merged["findings"], json!([{"file": "a", "line": 1}, {"file": "a", "line": 3}]), "in part order");
    let failed = merged["failed"].as_array().expect("failed parts");
    assert_eq!(failed.len(), 1);
    assert!(
        failed[0].as_str().is_some_and(|f| f.starts_with("part 2 of 3: ") && f.contains("key refused")),
        "{failed:?}"
    );

    let refused = || FakeStep::fail(ProviderError::Auth("key refused".into()));
    fake.script("a", [refused(), refused(), refused()]);
    let outcome =
        engine.start(checked(conclave()), partitioned(3), options(&["a"])).await.expect("starts").wait().await;
    assert_eq!(outcome.status, RunStatus::Failed, "every part failed");
    assert_eq!(outcome.failed_node.as_deref(), Some("a"));
    assert!(outcome.error.as_deref().is_some_and(|e| e.contains("key refused")), "{:?}", outcome.error);
}

#[tokio::test]
async fn parts_and_samples_multiply_and_an_input_without_parts_runs_once() {
    let fake = Arc::new(FakeProvider::new("fake"));
    fake.script("a", (1..=7).map(answer));
    let engine = engine_with(fake.clone(), Arc::new(MemoryStore::new()), limited(3));
    let conclave = || with_schema(graph(&["t:t", "a:a", "o:o"], &["t>a", "a>o"]), "a", findings_schema(), 0);
    let sampled = RunOptions { samples: Some(Samples { count: 2, nodes: vec!["a".into()] }), ..options(&["a"]) };
    let outcome = engine.start(checked(conclave()), partitioned(3), sampled).await.expect("starts").wait().await;
    assert_eq!(outcome.status, RunStatus::Succeeded, "{:?}", outcome.error);
    assert_eq!(fake.calls_for("a").len(), 6, "3 parts × 2 samples");
    let merged = outcome.outputs["a"].to_input_value();
    assert_eq!((merged["answered"].clone(), merged["findings"].as_array().map(Vec::len)), (json!(3), Some(6)));

    let plain = json!({"text": "fits in one call"});
    let outcome = engine.start(checked(conclave()), plain.clone(), options(&["a"])).await.expect("starts").wait().await;
    assert_eq!(outcome.status, RunStatus::Succeeded, "{:?}", outcome.error);
    let calls = fake.calls_for("a");
    assert_eq!(calls.len(), 7, "one more call: the input has no parts");
    assert_eq!(calls[6].input["input"], plain, "the input as it is");
}
