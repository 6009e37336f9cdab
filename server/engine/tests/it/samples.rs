//! Samples: an agent run K times on the same input, each sample under the run's
//! limits, merged by the run's policy into the node's one output.

use conclave_doubles::{FakeProvider, FakeStep, MemoryStore};
use conclave_engine::{EngineConfig, OutputPolicy, RunOptions, Samples, StartError};
use conclave_shared::{EventKind, RunStatus};
use conclave_testkit::checked;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::engine::{engine_with, graph, with_schema};

/// Merges samples by listing how many answered and how many failed.
#[derive(Debug)]
struct Tally;

impl OutputPolicy for Tally {
    fn merge_samples(&self, answers: Vec<Value>, findings_field: &str, failed: &[String]) -> Value {
        let lines: Vec<Value> = answers.iter().map(|a| a[findings_field][0]["line"].clone()).collect();
        json!({"answered": answers.len(), "failed": failed, "lines": lines})
    }
}

fn findings_schema() -> Value {
    json!({"type": "object", "required": ["findings"], "properties": {"findings": {"type": "array", "items": {
        "type": "object",
        "properties": {"file": {"type": "string"}, "line": {"type": "integer"}, "severity": {"type": "string"}}
    }}}})
}

fn answer(line: u64) -> FakeStep {
    FakeStep::json(json!({"findings": [{"file": "a.rs", "line": line, "severity": "minor"}]}))
        .after(Duration::from_millis(60))
}

#[tokio::test]
async fn each_sample_runs_under_the_provider_limit_and_the_policy_merges_them() {
    let fake = Arc::new(FakeProvider::new("fake"));
    fake.script("a", [answer(1), answer(2), answer(3)]);
    let config = EngineConfig { provider_limits: HashMap::from([("fake".to_string(), 2)]), ..Default::default() };
    let engine = engine_with(fake.clone(), Arc::new(MemoryStore::new()), config);
    let conclave = with_schema(graph(&["t:t", "a:a", "o:o"], &["t>a", "a>o"]), "a", findings_schema(), 0);
    let options = RunOptions {
        policy: Some(Arc::new(Tally)),
        samples: Some(Samples { count: 3, nodes: vec!["a".into()] }),
        ..RunOptions::default()
    };
    let handle = engine.start(checked(conclave), json!({}), options).await.expect("starts");
    let outcome = handle.wait().await;
    assert_eq!(outcome.status, RunStatus::Succeeded, "{:?}", outcome.error);
    assert_eq!(fake.calls_for("a").len(), 3, "three samples, one call each");
    assert_eq!(fake.peak_concurrency(), 2, "samples share the provider's limit of 2");
    let merged = outcome.outputs["a"].to_input_value();
    assert_eq!(merged["answered"], 3);
    let mut lines: Vec<u64> = merged["lines"].as_array().expect("lines").iter().filter_map(Value::as_u64).collect();
    lines.sort();
    assert_eq!(lines, [1, 2, 3], "every sample's answer reaches the merge");
    let events = engine.store().events(&outcome.run_id, 0).await.expect("events");
    let started = events.iter().filter(|e| matches!(&e.kind, EventKind::NodeStarted { node_id, .. } if node_id == "a"));
    assert_eq!(started.count(), 1, "the node starts once however many samples it runs");
}

#[tokio::test]
async fn only_findings_shaped_agents_can_be_sampled_and_only_with_a_policy() {
    let engine = engine_with(Arc::new(FakeProvider::new("fake")), Arc::new(MemoryStore::new()), Default::default());
    let conclave = || {
        let plain = graph(&["t:t", "a:a", "b:a", "o:o"], &["t>a", "a>b", "b>o"]);
        checked(with_schema(plain, "a", findings_schema(), 0))
    };
    let cases: [(u32, &str, bool, &str); 5] = [
        (3, "zz", true, "cannot sample node `zz`: the conclave has no such node"),
        (3, "t", true, "cannot sample node `t`: it is not an agent"),
        (3, "b", true, "cannot sample node `b`: its output has no findings to merge"),
        (3, "a", false, "cannot sample node `a`: the run has no output policy"),
        (17, "a", true, "cannot sample 17 times: give a sample count from 1 to 16"),
    ];
    for (count, node, policy, says) in cases {
        let options = RunOptions {
            policy: policy.then(|| Arc::new(Tally) as Arc<dyn OutputPolicy>),
            samples: Some(Samples { count, nodes: vec![node.into()] }),
            ..RunOptions::default()
        };
        let error = engine.start(conclave(), json!({}), options).await.expect_err("refused");
        assert!(matches!(error, StartError::Samples { .. }), "{error:?}");
        assert!(error.to_string().starts_with(says), "{error}");
    }
}
