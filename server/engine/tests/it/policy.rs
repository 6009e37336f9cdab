//! The output policy's hook as the engine uses it: the comparison of sibling agents
//! reaches the node they feed under the headings the policy words, and without a
//! policy of words the engine names only what it knows, nothing of code review.

use conclave_core::Message;
use conclave_doubles::{FakeProvider, FakeStep, MemoryStore};
use conclave_engine::{ComparisonHeadings, EngineConfig, OutputPolicy, RunOptions, SiblingOutput};
use conclave_shared::{FindingsCheck, RunStatus};
use conclave_testkit::checked;
use serde_json::{Value, json};
use std::sync::Arc;

use crate::engine::{engine_with, graph, with_schema};

/// Compares any siblings, finding nothing, and words the headings when told to.
#[derive(Debug)]
struct Siblings {
    headings: Option<ComparisonHeadings>,
}

impl OutputPolicy for Siblings {
    fn compare(&self, siblings: &[SiblingOutput<'_>]) -> Option<FindingsCheck> {
        Some(FindingsCheck { agents: siblings.iter().map(|s| s.node_id.to_string()).collect(), ..Default::default() })
    }

    fn comparison_headings(&self) -> ComparisonHeadings {
        self.headings.clone().unwrap_or_default()
    }
}

/// Compares any siblings and leaves the headings to the engine.
#[derive(Debug)]
struct Wordless;

impl OutputPolicy for Wordless {
    fn compare(&self, siblings: &[SiblingOutput<'_>]) -> Option<FindingsCheck> {
        Siblings { headings: None }.compare(siblings)
    }
}

fn findings_schema() -> Value {
    json!({"type": "object", "required": ["findings"], "properties": {"findings": {"type": "array", "items": {
        "type": "object",
        "properties": {"file": {"type": "string"}, "line": {"type": "integer"}, "severity": {"type": "string"}}
    }}}})
}

/// What the node fed by two findings-shaped siblings is first told, under `policy`.
async fn first_message_of_the_fed_node(policy: Arc<dyn OutputPolicy>) -> String {
    let fake = Arc::new(FakeProvider::new("fake"));
    for sibling in ["a", "b"] {
        fake.script(sibling, [FakeStep::json(json!({"findings": [{"file": "x.rs", "line": 3, "severity": "minor"}]}))]);
    }
    fake.script("w", [FakeStep::text("merged")]);
    let engine = engine_with(fake.clone(), Arc::new(MemoryStore::new()), EngineConfig::default());
    let conclave = graph(&["t:t", "a:a", "b:a", "w:a", "o:o"], &["t>a", "t>b", "a>w", "b>w", "w>o"]);
    let conclave = with_schema(with_schema(conclave, "a", findings_schema(), 0), "b", findings_schema(), 0);
    let options = RunOptions { policy: Some(policy), ..RunOptions::default() };
    let outcome = engine.start(checked(conclave), json!({}), options).await.expect("starts").wait().await;
    assert_eq!(outcome.status, RunStatus::Succeeded, "{:?}", outcome.error);
    match fake.calls_for("w").first().and_then(|call| call.messages.first()) {
        Some(Message::User(text)) => text.clone(),
        other => panic!("the fed node was not called with its input: {other:?}"),
    }
}

#[tokio::test]
async fn the_comparison_reaches_the_fed_node_under_the_policy_s_headings() {
    let headings = ComparisonHeadings {
        contradictions: "Where the specialists clash".into(),
        disagreements: "Where they nearly agree".into(),
        duplicates: "What they both said".into(),
    };
    let text = first_message_of_the_fed_node(Arc::new(Siblings { headings: Some(headings) })).await;
    for heading in [
        "## Where the specialists clash (`contradictions`)",
        "## Where they nearly agree (`disagreements`)",
        "## What they both said (`duplicates`)",
    ] {
        assert!(text.contains(heading), "{heading} is missing from:\n{text}");
    }
}

#[tokio::test]
async fn without_headings_of_its_policy_the_engine_words_nothing_of_code_review() {
    let text = first_message_of_the_fed_node(Arc::new(Wordless)).await;
    for heading in [
        "## Contradictions between the outputs above (`contradictions`)",
        "## Disagreements between the outputs above (`disagreements`)",
        "## Near-duplicates among the outputs above (`duplicates`)",
    ] {
        assert!(text.contains(heading), "{heading} is missing from:\n{text}");
    }
    assert!(!text.to_lowercase().contains("review"), "the engine words code review:\n{text}");
}
