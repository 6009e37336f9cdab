//! A run's output policy that panics, in each of its hooks: the node it was called
//! for fails with a typed error naming the hook (or the run is refused, for
//! `shape_schema`), and nothing it did not check is passed downstream.

use async_trait::async_trait;
use conclave_core::{ToolCall, ToolOutcome, ToolRunner, ToolSpec};
use conclave_doubles::{FakeProvider, FakeStep, MemoryStore};
use conclave_engine::{EngineConfig, OutputPolicy, RunOptions, RunOutcome, Samples, SiblingOutput, StartError};
use conclave_shared::{CountMismatch, ErrorKind, FindingsCheck, LoweringNote, RunStatus};
use conclave_testkit::checked;
use serde_json::{Value, json};
use std::sync::Arc;

use crate::engine::{engine_with, graph, with_schema};

/// A policy that panics in `hook` and does nothing in the others.
#[derive(Debug)]
struct Panics(&'static str);

impl Panics {
    fn maybe(&self, hook: &str) {
        if self.0 == hook {
            panic!("{hook} exploded");
        }
    }
}

impl OutputPolicy for Panics {
    fn shape_schema(&self, _schema: &mut Value, _findings_field: Option<&str>) -> Vec<LoweringNote> {
        self.maybe("shape_schema");
        Vec::new()
    }
    fn normalize_answer(&self, _answer: &mut Value, _findings_field: Option<&str>) {
        self.maybe("normalize_answer");
    }
    fn compare(&self, _siblings: &[SiblingOutput<'_>]) -> Option<FindingsCheck> {
        self.maybe("compare");
        Some(FindingsCheck::default())
    }
    fn check_output(&self, _output: &Value) -> Vec<CountMismatch> {
        self.maybe("check_output");
        Vec::new()
    }
    fn reject_answer(&self, _answer: &Value, _findings_field: Option<&str>) -> Vec<String> {
        self.maybe("reject_answer");
        Vec::new()
    }
    fn merge_samples(&self, answers: Vec<Value>, _findings_field: &str, _failed: &[String]) -> Value {
        self.maybe("merge_samples");
        answers.into_iter().next().unwrap_or(Value::Null)
    }
}

/// One tool, so agents can list it.
#[derive(Debug)]
struct OneTool;

#[async_trait]
impl ToolRunner for OneTool {
    fn specs(&self, ids: &[String]) -> Result<Vec<ToolSpec>, String> {
        Ok(ids
            .iter()
            .map(|id| ToolSpec {
                name: id.clone(),
                description: "Reads.".into(),
                parameters: json!({"type": "object"}),
            })
            .collect())
    }
    async fn run(&self, _call: &ToolCall) -> ToolOutcome {
        ToolOutcome::ok("nothing")
    }
}

fn findings_schema() -> Value {
    json!({"type": "object", "required": ["findings"], "properties": {"findings": {"type": "array", "items": {
        "type": "object",
        "properties": {"file": {"type": "string"}, "line": {"type": "integer"}, "severity": {"type": "string"}}
    }}}})
}

fn findings(line: u64) -> FakeStep {
    FakeStep::json(json!({"findings": [{"file": "a.rs", "line": line, "severity": "major"}]}))
}

/// Two reviewers `a` and `b` with findings, a writer `w` reading both, then `o`.
fn reviewers_and_writer() -> conclave_shared::Conclave {
    let conclave = graph(&["t:t", "a:a", "b:a", "w:a", "o:o"], &["t>a", "t>b", "a>w", "b>w", "w>o"]);
    let conclave = with_schema(conclave, "a", findings_schema(), 2);
    with_schema(conclave, "b", findings_schema(), 2)
}

/// Runs `conclave` with the policy panicking in `hook`, every agent answering with
/// findings.
async fn run(hook: &'static str, conclave: conclave_shared::Conclave, options: RunOptions) -> RunOutcome {
    let fake = Arc::new(FakeProvider::new("fake"));
    fake.script("a", [findings(1), findings(1), findings(1)]);
    fake.script("b", [findings(2)]);
    fake.script("w", [FakeStep::text("the report")]);
    let engine = engine_with(fake, Arc::new(MemoryStore::new()), EngineConfig::default());
    let options = RunOptions { policy: Some(Arc::new(Panics(hook))), ..options };
    let handle = engine.start(checked(conclave), json!({}), options).await.expect("the run starts");
    handle.wait().await
}

fn assert_failed_in(outcome: &RunOutcome, node: &str, hook: &str) {
    assert_eq!(outcome.status, RunStatus::Failed, "a failed policy fails the run");
    assert_eq!(outcome.failed_node.as_deref(), Some(node));
    assert_eq!(outcome.error_kind, Some(ErrorKind::Internal));
    assert_eq!(
        outcome.error.as_deref(),
        Some(format!("node `{node}` failed: the run's output policy failed in `{hook}`: {hook} exploded").as_str())
    );
}

#[tokio::test]
async fn a_panicking_reject_answer_fails_the_agent_instead_of_letting_its_answer_through() {
    let mut conclave = reviewers_and_writer();
    if let Some(agent) = conclave.nodes.iter_mut().find(|n| n.id == "a").and_then(|n| n.agent.as_mut()) {
        agent.tools = vec!["read_file".into()];
    }
    let options = RunOptions { tools: Some(Arc::new(OneTool)), ..RunOptions::default() };
    let outcome = run("reject_answer", conclave, options).await;
    assert_failed_in(&outcome, "a", "reject_answer");
    assert!(!outcome.outputs.contains_key("a"), "the unchecked answer is not an output");
    assert!(!outcome.outputs.contains_key("w"), "nothing downstream ran on it");
}

#[tokio::test]
async fn a_panicking_compare_fails_the_node_it_compares_for_instead_of_vanishing() {
    let outcome = run("compare", reviewers_and_writer(), RunOptions::default()).await;
    assert_failed_in(&outcome, "w", "compare");
    assert!(outcome.outputs.contains_key("a") && outcome.outputs.contains_key("b"), "the reviewers finished");
    assert!(!outcome.outputs.contains_key("w"), "the writer did not run without the comparison");
}

#[tokio::test]
async fn a_panicking_normalize_answer_fails_the_agent() {
    let outcome = run("normalize_answer", reviewers_and_writer(), RunOptions::default()).await;
    assert_eq!(outcome.failed_node.as_deref().map(|n| n == "a" || n == "b"), Some(true), "{outcome:?}");
    let node = outcome.failed_node.clone().unwrap_or_default();
    assert_failed_in(&outcome, &node, "normalize_answer");
}

#[tokio::test]
async fn a_panicking_check_output_fails_the_agent_instead_of_the_whole_run_task() {
    let outcome = run("check_output", reviewers_and_writer(), RunOptions::default()).await;
    let node = outcome.failed_node.clone().unwrap_or_default();
    assert!(node == "a" || node == "b", "{outcome:?}");
    assert_failed_in(&outcome, &node, "check_output");
    assert!(!outcome.outputs.contains_key(&node), "the unchecked output is not kept");
}

#[tokio::test]
async fn a_panicking_merge_samples_fails_the_sampled_agent() {
    let options = RunOptions { samples: Some(Samples { count: 2, nodes: vec!["a".into()] }), ..RunOptions::default() };
    let outcome = run("merge_samples", reviewers_and_writer(), options).await;
    assert_eq!(outcome.status, RunStatus::Failed);
    assert_eq!(outcome.failed_node.as_deref(), Some("a"));
    assert_eq!(outcome.error_kind, Some(ErrorKind::Internal));
    let error = outcome.error.clone().unwrap_or_default();
    assert!(error.starts_with("node `a` failed: internal error: merging the samples stopped: "), "{error}");
    assert!(error.contains("merge_samples exploded"), "{error}");
}

#[tokio::test]
async fn a_panicking_shape_schema_refuses_the_run_with_a_typed_error() {
    let fake = Arc::new(FakeProvider::new("fake"));
    let engine = engine_with(fake, Arc::new(MemoryStore::new()), EngineConfig::default());
    let options = RunOptions { policy: Some(Arc::new(Panics("shape_schema"))), ..RunOptions::default() };
    let refused = engine.start(checked(reviewers_and_writer()), json!({}), options).await.err();
    assert!(matches!(&refused, Some(StartError::Policy(failure)) if failure.hook == "shape_schema"), "{refused:?}");
    assert_eq!(
        refused.map(|e| e.to_string()).as_deref(),
        Some("the run's output policy failed in `shape_schema`: shape_schema exploded")
    );
}
