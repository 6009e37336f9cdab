//! Running from a node: only the node and its descendants call the provider, the
//! others take their earlier output (`node_reused`), downstream nodes get the inputs
//! they would have had, and every way an earlier run cannot be reused is refused
//! before anything runs, with its exact message.

use conclave_core::{ProviderError, ProviderRegistry};
use conclave_doubles::{FakeProvider, FakeStep, MemoryStore};
use conclave_engine::{Engine, EngineConfig, Reuse, RunOptions, StartError};
use conclave_shared::{
    AgentConfig, Conclave, Edge, EventKind, Node, NodeKind, NodeOutput, NodeState, Position, RunEvent, RunRecord,
    RunStatus, Settings,
};
use conclave_testkit::checked;
use serde_json::{Value, json};
use std::sync::Arc;

/// t → a → {b, c} → d → out: a fan-out after `a` and a fan-in at `d`.
fn diamond(id: &str) -> Conclave {
    let node = |id: &str, kind| Node {
        agent: (kind == NodeKind::Agent).then(|| AgentConfig::new("fake")),
        ..Node::new(id, kind)
    };
    let edges = [("t", "a"), ("a", "b"), ("a", "c"), ("b", "d"), ("c", "d"), ("d", "out")];
    Conclave {
        version: 1,
        id: id.into(),
        name: id.into(),
        description: String::new(),
        settings: Settings::default(),
        nodes: vec![
            node("t", NodeKind::Trigger),
            node("a", NodeKind::Agent),
            node("b", NodeKind::Agent),
            node("c", NodeKind::Agent),
            node("d", NodeKind::Agent),
            node("out", NodeKind::Output),
        ],
        edges: edges.iter().map(|(f, t)| Edge { from: (*f).into(), to: (*t).into(), case: None }).collect(),
    }
}

fn engine(fake: Arc<FakeProvider>) -> Engine {
    let mut providers = ProviderRegistry::default();
    providers.register(fake);
    Engine::new(providers, Arc::new(MemoryStore::new()), EngineConfig::default())
}

/// Runs `conclave` to its end, from a node of `reuse` when given; the run's record
/// and events.
async fn run(engine: &Engine, conclave: Conclave, reuse: Option<Reuse>) -> (RunRecord, Vec<RunEvent>) {
    let options = RunOptions { reuse, ..RunOptions::default() };
    let handle = engine.start(checked(conclave), json!({"text": "the change"}), options).await.expect("run starts");
    let outcome = handle.wait().await;
    let record = engine.store().get_run(&outcome.run_id).await.expect("get").expect("stored");
    let events = engine.store().events(&outcome.run_id, 0).await.expect("events");
    (record, events)
}

fn reuse(from_node: &str, earlier: &RunRecord) -> Option<Reuse> {
    Some(Reuse { from_node: from_node.into(), earlier: Arc::new(earlier.clone()) })
}

/// The input each node's first provider call got, by node, in call order.
fn inputs(fake: &FakeProvider, node: &str) -> Vec<Value> {
    fake.calls_for(node).into_iter().map(|c| c.input).collect()
}

fn started_input<'a>(events: &'a [RunEvent], node: &str) -> Option<&'a str> {
    events.iter().find_map(|e| match &e.kind {
        EventKind::NodeStarted { node_id, input } if node_id == node => input.as_deref(),
        _ => None,
    })
}

#[tokio::test]
async fn running_from_a_middle_node_reruns_only_it_and_its_descendants() {
    let fake = Arc::new(FakeProvider::new("fake"));
    let engine = engine(fake.clone());
    let (first, first_events) = run(&engine, diamond("fan"), None).await;
    assert_eq!(first.summary.status, RunStatus::Succeeded);
    let calls_before = fake.calls().len();

    let (second, events) = run(&engine, diamond("fan"), reuse("b", &first)).await;
    assert_eq!(second.summary.status, RunStatus::Succeeded, "{:?}", second.summary.error);
    let called: Vec<String> = fake.calls()[calls_before..].iter().map(|c| c.node_id.clone()).collect();
    assert_eq!(called, vec!["b", "d"], "only b and its descendant agent call the provider");

    let reused: Vec<(String, String, NodeOutput, Option<String>)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::NodeReused { node_id, from_run, output, input } => {
                Some((node_id.clone(), from_run.clone(), output.clone(), input.clone()))
            }
            _ => None,
        })
        .collect();
    let earlier = |id: &str| first.nodes.iter().find(|n| n.node_id == id).expect("node").clone();
    let expected: Vec<(String, String, NodeOutput, Option<String>)> = ["a", "c"]
        .iter()
        .map(|id| {
            let node = earlier(id);
            (id.to_string(), first.summary.id.clone(), node.output.expect("output"), node.input)
        })
        .collect();
    assert_eq!(reused, expected, "a and c take their earlier outputs and inputs, in graph order");
    assert!(expected.iter().all(|(_, _, _, input)| input.as_deref().is_some_and(|i| i.starts_with("## Run input"))));

    let d_inputs = inputs(&fake, "d");
    assert_eq!(d_inputs.len(), 2);
    assert_eq!(d_inputs[1], d_inputs[0], "d receives exactly what it received in the full run");
    assert_eq!(
        d_inputs[1],
        json!({"input": {"text": "the change"}, "upstream": {"b": {"node": "b", "upstream": ["a"]}, "c": {"node": "c", "upstream": ["a"]}}})
    );
    assert_eq!(started_input(&events, "d"), started_input(&first_events, "d"), "the recorded input too");
    assert_eq!(inputs(&fake, "b")[1], inputs(&fake, "b")[0], "b gets a's earlier output");

    let states: Vec<(&str, NodeState, Option<&str>)> =
        second.nodes.iter().map(|n| (n.node_id.as_str(), n.state, n.reused_from.as_deref())).collect();
    let from = Some(first.summary.id.as_str());
    assert_eq!(
        states,
        vec![
            ("t", NodeState::Succeeded, None),
            ("a", NodeState::Succeeded, from),
            ("b", NodeState::Succeeded, None),
            ("c", NodeState::Succeeded, from),
            ("d", NodeState::Succeeded, None),
            ("out", NodeState::Succeeded, None),
        ]
    );
    let a = second.nodes.iter().find(|n| n.node_id == "a").expect("a");
    assert_eq!((a.usage.clone(), a.attempts), (None, 0), "a reused node costs nothing in the new run");
    assert_eq!(second.nodes.iter().find(|n| n.node_id == "out").expect("out").output, earlier("out").output);
}

#[tokio::test]
async fn a_new_input_reaches_the_rerun_nodes_and_the_earlier_run_is_untouched() {
    let fake = Arc::new(FakeProvider::new("fake"));
    let engine = engine(fake.clone());
    let (first, _) = run(&engine, diamond("fan"), None).await;
    let options = RunOptions { reuse: reuse("d", &first), ..RunOptions::default() };
    let handle = engine.start(checked(diamond("fan")), json!("another input"), options).await.expect("starts");
    assert_eq!(handle.wait().await.status, RunStatus::Succeeded);
    assert_eq!(inputs(&fake, "d")[1]["input"], json!("another input"), "the re-run node sees the new input");
    assert_eq!(fake.calls().len(), 5, "four agents, then d alone");
    let again = engine.store().get_run(&first.summary.id).await.expect("get").expect("stored");
    assert_eq!(again, first, "the earlier run is only read");
}

/// Starts a run from `from` reusing `earlier`; the refusal.
async fn refusal(engine: &Engine, conclave: Conclave, from: &str, earlier: &RunRecord) -> String {
    let runs_before = engine.store().list_runs(100).await.expect("list").len();
    let options = RunOptions { reuse: reuse(from, earlier), ..RunOptions::default() };
    let error = match engine.start(checked(conclave), json!(null), options).await {
        Ok(_) => panic!("a run from `{from}` must be refused"),
        Err(e) => e,
    };
    assert_eq!(engine.store().list_runs(100).await.expect("list").len(), runs_before, "nothing was recorded");
    assert!(!matches!(error, StartError::Store(_)));
    error.to_string()
}

#[tokio::test]
async fn every_earlier_run_that_cannot_be_reused_is_refused_with_what_to_do() {
    let fake = Arc::new(FakeProvider::new("fake"));
    let engine = engine(fake.clone());
    let (first, _) = run(&engine, diamond("fan"), None).await;
    let id = first.summary.id.clone();
    let calls = fake.calls().len();

    assert_eq!(
        refusal(&engine, diamond("other"), "b", &first).await,
        format!("run `{id}` is a run of conclave `fan`, not `other`; reuse a run of `other`")
    );
    assert_eq!(
        refusal(&engine, diamond("fan"), "zzz", &first).await,
        "conclave `fan` has no node `zzz` to run from; give the id of one of its nodes"
    );

    let mut changed = diamond("fan");
    changed.nodes[3].agent.as_mut().expect("agent").system_prompt = "Be brief.".into();
    assert_eq!(
        refusal(&engine, changed, "b", &first).await,
        format!(
            "node `c` changed since run `{id}` (its agent settings are different), so its output there may not hold any more; run from `c` instead"
        )
    );
    let mut rewired = diamond("fan");
    rewired.edges.push(Edge { from: "t".into(), to: "c".into(), case: None });
    assert_eq!(
        refusal(&engine, rewired, "b", &first).await,
        format!(
            "node `c` changed since run `{id}` (its upstream nodes are different), so its output there may not hold any more; run from `c` instead"
        )
    );
    let mut grown = diamond("fan");
    grown.nodes.push(Node { agent: Some(AgentConfig::new("fake")), ..Node::new("e", NodeKind::Agent) });
    grown.edges.push(Edge { from: "a".into(), to: "e".into(), case: None });
    assert_eq!(
        refusal(&engine, grown, "b", &first).await,
        format!(
            "node `e` changed since run `{id}` (it was not in that run), so its output there may not hold any more; run from `e` instead"
        )
    );
    let mut moved = diamond("fan");
    moved.nodes[3].position = Position { x: 300, y: 300 };
    moved.nodes[3].label = "C, renamed".into();
    let (moved_run, _) = run(&engine, moved, reuse("b", &first)).await;
    assert_eq!(moved_run.summary.status, RunStatus::Succeeded, "moving or relabelling a card changes no output");
    assert_eq!(fake.calls().len(), calls + 2, "no refused run called the provider");
}

#[tokio::test]
async fn a_node_that_did_not_succeed_cannot_be_reused_but_can_be_run_from() {
    let fake = Arc::new(FakeProvider::new("fake"));
    fake.script("c", [FakeStep::fail(ProviderError::Auth("key refused".into()))]);
    let engine = engine(fake.clone());
    let (failed, _) = run(&engine, diamond("fan"), None).await;
    assert_eq!(failed.summary.status, RunStatus::Failed);
    let id = failed.summary.id.clone();
    assert_eq!(
        refusal(&engine, diamond("fan"), "b", &failed).await,
        format!(
            "node `c` did not succeed in run `{id}` (it ended `failed` there), so it has no output to reuse; run from `c` instead"
        )
    );
    let mut patched = failed.clone();
    let c = patched.nodes.iter_mut().find(|n| n.node_id == "c").expect("c");
    (c.state, c.output) = (NodeState::Succeeded, Some(NodeOutput::Text("c".into())));
    assert_eq!(
        refusal(&engine, diamond("fan"), "out", &patched).await,
        format!(
            "node `d` did not succeed in run `{id}` (it ended `skipped` there), so it has no output to reuse; run from `d` instead"
        )
    );
    let (fixed, _) = run(&engine, diamond("fan"), reuse("c", &failed)).await;
    assert_eq!(fixed.summary.status, RunStatus::Succeeded, "{:?}", fixed.summary.error);
    let reused: Vec<&str> =
        fixed.nodes.iter().filter(|n| n.reused_from.is_some()).map(|n| n.node_id.as_str()).collect();
    assert_eq!(reused, vec!["a", "b"], "the nodes that succeeded are reused, the failed one runs again");
}
