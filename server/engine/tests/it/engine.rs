//! Engine behaviour with the in-tree fake provider: joins, parallelism, failure
//! propagation, cancellation, timeouts, limits, retries, and event ordering.

use conclave_catalog::LoadError;
use conclave_core::{Message, ProviderError, ProviderRegistry, RunStore};
use conclave_doubles::{FakeProvider, FakeStep, MemoryStore};
use conclave_engine::{Engine, EngineConfig, RunOptions, RunOutcome, StartError};
use conclave_shared::{
    AgentConfig, Conclave, Edge, ErrorKind, EventKind, Node, NodeKind, NodeState, RunEvent, RunStatus, Settings,
};
use conclave_store::SqliteStore;
use conclave_testkit::{check, checked};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Builds a conclave from `id:kind` specs (kind: t, a, o) and `from>to` edges.
pub(crate) fn graph(nodes: &[&str], edges: &[&str]) -> Conclave {
    let nodes = nodes
        .iter()
        .map(|spec| {
            let (id, kind) = spec.split_once(':').expect("id:kind");
            let kind = match kind {
                "t" => NodeKind::Trigger,
                "a" => NodeKind::Agent,
                _ => NodeKind::Output,
            };
            Node { agent: (kind == NodeKind::Agent).then(|| AgentConfig::new("fake")), ..Node::new(id, kind) }
        })
        .collect();
    let edges = edges
        .iter()
        .map(|e| {
            let (from, to) = e.split_once('>').expect("from>to");
            Edge { from: from.into(), to: to.into(), case: None }
        })
        .collect();
    Conclave {
        version: 1,
        id: "test".into(),
        name: "Test".into(),
        description: String::new(),
        settings: Settings::default(),
        nodes,
        edges,
    }
}

pub(crate) fn engine_with(fake: Arc<FakeProvider>, store: Arc<dyn RunStore>, config: EngineConfig) -> Engine {
    let mut providers = ProviderRegistry::default();
    providers.register(fake);
    Engine::new(providers, store, config)
}

/// Starts a run of a conclave that must pass the checks.
pub async fn start(
    engine: &Engine,
    conclave: Conclave,
    input: Value,
) -> Result<conclave_engine::RunHandle, StartError> {
    engine.start(checked(conclave), input, RunOptions::default()).await
}

async fn run(engine: &Engine, conclave: Conclave) -> (RunOutcome, Vec<RunEvent>) {
    let handle = start(engine, conclave, json!({"text": "the change"})).await.expect("run starts");
    let outcome = handle.wait().await;
    let events = engine.store().events(&outcome.run_id, 0).await.expect("events");
    (outcome, events)
}

fn completions(events: &[RunEvent]) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    for e in events {
        if let EventKind::NodeCompleted { node_id, .. } = &e.kind {
            *counts.entry(node_id.clone()).or_default() += 1;
        }
    }
    counts
}

#[tokio::test]
async fn diamond_runs_branches_concurrently_and_joins_once_with_both_inputs() {
    let fake = Arc::new(FakeProvider::new("fake"));
    let delay = Duration::from_millis(300);
    fake.script("b", [FakeStep::json(json!({"from": "b"})).after(delay)]);
    fake.script("c", [FakeStep::text("plain text from c").after(delay)]);
    let engine = engine_with(fake.clone(), Arc::new(MemoryStore::new()), EngineConfig::default());
    let conclave = graph(&["t:t", "a:a", "b:a", "c:a", "d:a", "out:o"], &["t>a", "a>b", "a>c", "b>d", "c>d", "d>out"]);
    let (outcome, events) = run(&engine, conclave).await;
    assert_eq!(outcome.status, RunStatus::Succeeded, "{:?}", outcome.error);

    let spans = fake.spans();
    let span = |id: &str| spans.iter().find(|s| s.node_id == id).expect("span").clone();
    let (b, c, d) = (span("b"), span("c"), span("d"));
    let (b_end, c_end) = (b.end.expect("b ended"), c.end.expect("c ended"));
    let overlap = b_end.min(c_end).saturating_duration_since(b.start.max(c.start));
    assert!(overlap >= delay / 2, "b and c must run at the same time; they overlapped for {overlap:?}");
    assert!(d.start >= b_end && d.start >= c_end, "d started before both of its inputs finished");

    let d_calls = fake.calls_for("d");
    assert_eq!(d_calls.len(), 1, "d must run exactly once");
    assert_eq!(
        d_calls[0].input,
        json!({"input": {"text": "the change"}, "upstream": {"b": {"from": "b"}, "c": "plain text from c"}}),
        "d receives the run input and both upstream outputs keyed by node id (JSON as JSON, text as text)"
    );
    assert_eq!(completions(&events).get("d"), Some(&1));
    assert_eq!(outcome.result, json!({"d": {"node": "d", "upstream": ["b", "c"]}}));
}

#[tokio::test]
async fn a_failing_node_skips_exactly_its_descendants() {
    let fake = Arc::new(FakeProvider::new("fake"));
    fake.script("b", [FakeStep::fail(ProviderError::Auth("key refused".into()))]);
    let store: Arc<dyn RunStore> = Arc::new(MemoryStore::new());
    let engine = engine_with(fake.clone(), store.clone(), EngineConfig::default());
    let conclave = graph(
        &["t:t", "a:a", "b:a", "c:a", "e:a", "d:a", "x:a", "y:a", "out:o"],
        &["t>a", "a>b", "b>c", "c>e", "a>d", "t>x", "x>y", "y>out", "d>out"],
    );
    let (outcome, events) = run(&engine, conclave).await;
    assert_eq!(outcome.status, RunStatus::Failed);
    assert_eq!(outcome.failed_node.as_deref(), Some("b"));
    assert_eq!(outcome.error_kind, Some(ErrorKind::Provider));
    assert!(
        outcome.error.as_deref().unwrap_or("").contains("authentication failed: key refused"),
        "{:?}",
        outcome.error
    );

    let skipped: Vec<(String, String)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::NodeSkipped { node_id, because_of, .. } => Some((node_id.clone(), because_of.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(skipped, vec![("c".to_string(), "b".to_string()), ("e".to_string(), "c".to_string())]);

    let record = store.get_run(&outcome.run_id).await.expect("get").expect("exists");
    let states: HashMap<&str, NodeState> = record.nodes.iter().map(|n| (n.node_id.as_str(), n.state)).collect();
    for id in ["t", "a", "d", "x", "y", "out"] {
        assert_eq!(states[id], NodeState::Succeeded, "{id} is unrelated to b and must complete");
    }
    assert_eq!(states["b"], NodeState::Failed);
    assert_eq!((states["c"], states["e"]), (NodeState::Skipped, NodeState::Skipped));
    assert_eq!(record.summary.status, RunStatus::Failed);
}

#[tokio::test]
async fn cancelling_a_run_of_30_second_nodes_ends_within_a_second() {
    let fake = Arc::new(FakeProvider::new("fake"));
    for id in ["a", "b", "c"] {
        fake.script(id, [FakeStep::text("never").after(Duration::from_secs(30))]);
    }
    let store: Arc<dyn RunStore> = Arc::new(MemoryStore::new());
    let engine = engine_with(fake.clone(), store.clone(), EngineConfig::default());
    let conclave = graph(&["t:t", "a:a", "b:a", "c:a", "d:a"], &["t>a", "t>b", "t>c", "a>d"]);
    let mut handle = start(&engine, conclave, json!(null)).await.expect("starts");
    let mut events = handle.take_events().expect("events");
    // Wait until all three calls are in flight.
    let mut started = 0;
    while started < 3 {
        if let EventKind::NodeStarted { node_id, .. } = &events.recv().await.expect("event").kind
            && node_id != "t"
        {
            started += 1;
        }
    }
    let asked = Instant::now();
    handle.cancel();
    let outcome = handle.wait().await;
    let took = asked.elapsed();
    assert!(took < Duration::from_secs(1), "cancellation took {took:?}");
    assert_eq!(outcome.status, RunStatus::Cancelled);
    assert!(fake.spans().iter().all(|s| s.end.is_none()), "in-flight calls are dropped, not awaited to completion");
    let record = store.get_run(&outcome.run_id).await.expect("get").expect("exists");
    assert_eq!(record.summary.status, RunStatus::Cancelled);
    let states: Vec<NodeState> = record.nodes.iter().map(|n| n.state).collect();
    assert_eq!(
        states,
        vec![
            NodeState::Succeeded,
            NodeState::Cancelled,
            NodeState::Cancelled,
            NodeState::Cancelled,
            NodeState::Cancelled
        ]
    );
}

#[tokio::test]
async fn a_node_past_its_timeout_fails_with_a_timeout_error() {
    let fake = Arc::new(FakeProvider::new("fake"));
    fake.script("slow", [FakeStep::text("late").after(Duration::from_secs(5))]);
    let config = EngineConfig { node_timeout: Some(Duration::from_millis(100)), ..EngineConfig::default() };
    let engine = engine_with(fake, Arc::new(MemoryStore::new()), config);
    let started = Instant::now();
    let (outcome, events) = run(&engine, graph(&["t:t", "slow:a"], &["t>slow"])).await;
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(outcome.status, RunStatus::Failed);
    assert_eq!(outcome.error_kind, Some(ErrorKind::Timeout));
    let failure = events.iter().find_map(|e| match &e.kind {
        EventKind::NodeFailed { node_id, error_kind, message } => Some((node_id.clone(), *error_kind, message.clone())),
        _ => None,
    });
    let (node, kind, message) = failure.expect("a node_failed event");
    assert_eq!((node.as_str(), kind.as_str()), ("slow", "timeout"));
    assert!(message.starts_with("timed out after 100ms; raise `timeout_secs`"), "{message}");
}

#[tokio::test]
async fn a_200_node_random_dag_runs_each_node_once_in_topological_order() {
    let mut rng = fastrand::Rng::with_seed(42);
    let n = 200;
    let mut specs = vec!["n0:t".to_string()];
    specs.extend((1..n).map(|i| format!("n{i}:a")));
    let mut edges = Vec::new();
    for j in 1..n {
        // Every node gets at least one parent, so all are reachable.
        edges.push(format!("n{}>n{j}", rng.usize(0..j)));
        for _ in 0..rng.usize(0..3) {
            let i = rng.usize(0..j);
            let e = format!("n{i}>n{j}");
            if !edges.contains(&e) {
                edges.push(e);
            }
        }
    }
    let spec_refs: Vec<&str> = specs.iter().map(String::as_str).collect();
    let edge_refs: Vec<&str> = edges.iter().map(String::as_str).collect();
    let fake = Arc::new(FakeProvider::new("fake"));
    for i in 1..n {
        fake.script(&format!("n{i}"), [FakeStep::text("ok").after(Duration::from_micros(rng.u64(0..2000)))]);
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let store: Arc<dyn RunStore> = Arc::new(SqliteStore::open(&dir.path().join("runs.db")).expect("open"));
    let engine = engine_with(fake, store, EngineConfig::default());
    let (outcome, events) = run(&engine, graph(&spec_refs, &edge_refs)).await;
    assert_eq!(outcome.status, RunStatus::Succeeded, "{:?}", outcome.error);

    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=events.len() as u64).collect::<Vec<_>>(), "sequence numbers are 1..n without gaps");
    let counts = completions(&events);
    assert_eq!(counts.len(), n, "every node completed");
    assert!(counts.values().all(|&c| c == 1), "a node completed more than once");
    let mut completed_at = HashMap::new();
    let mut started_at = HashMap::new();
    for e in &events {
        match &e.kind {
            EventKind::NodeCompleted { node_id, .. } => {
                completed_at.insert(node_id.clone(), e.seq);
            }
            EventKind::NodeStarted { node_id, .. } => {
                started_at.insert(node_id.clone(), e.seq);
            }
            _ => {}
        }
    }
    for e in &edges {
        let (from, to) = e.split_once('>').expect("edge");
        assert!(completed_at[from] < started_at[to], "{to} started before its upstream {from} completed");
    }
}

#[tokio::test]
async fn concurrency_limits_hold_globally_and_per_provider() {
    let specs = ["t:t", "a:a", "b:a", "c:a", "d:a", "e:a", "f:a"];
    let edges = ["t>a", "t>b", "t>c", "t>d", "t>e", "t>f"];
    let scripted = || {
        let fake = Arc::new(FakeProvider::new("fake"));
        for id in ["a", "b", "c", "d", "e", "f"] {
            fake.script(id, [FakeStep::text("ok").after(Duration::from_millis(60))]);
        }
        fake
    };
    let fake = scripted();
    let engine = engine_with(
        fake.clone(),
        Arc::new(MemoryStore::new()),
        EngineConfig { max_concurrency: 2, ..Default::default() },
    );
    assert_eq!(run(&engine, graph(&specs, &edges)).await.0.status, RunStatus::Succeeded);
    assert_eq!(fake.peak_concurrency(), 2, "global limit of 2");

    let fake = scripted();
    let engine = engine_with(fake.clone(), Arc::new(MemoryStore::new()), EngineConfig::default());
    let mut conclave = graph(&specs, &edges);
    conclave.settings.provider_limits.insert("fake".into(), 1);
    assert_eq!(run(&engine, conclave).await.0.status, RunStatus::Succeeded);
    assert_eq!(fake.peak_concurrency(), 1, "per-provider limit of 1");

    let fake = scripted();
    let engine = engine_with(fake.clone(), Arc::new(MemoryStore::new()), EngineConfig::default());
    assert_eq!(run(&engine, graph(&specs, &edges)).await.0.status, RunStatus::Succeeded);
    assert_eq!(fake.peak_concurrency(), 6, "without limits all six run at once");
}

#[tokio::test]
async fn a_provider_limit_holds_across_concurrent_runs_of_one_engine() {
    let fake = Arc::new(FakeProvider::new("fake"));
    for id in ["a", "b", "c"] {
        fake.script(id, [FakeStep::text("ok").after(Duration::from_millis(80))]);
    }
    let config = EngineConfig { provider_limits: HashMap::from([("fake".to_string(), 1)]), ..Default::default() };
    let engine = engine_with(fake.clone(), Arc::new(MemoryStore::new()), config);
    let conclave = || graph(&["t:t", "a:a", "b:a", "c:a"], &["t>a", "t>b", "t>c"]);
    let twin = engine.clone();
    let (first, second) = tokio::join!(run(&engine, conclave()), run(&twin, conclave()));
    assert_eq!((first.0.status, second.0.status), (RunStatus::Succeeded, RunStatus::Succeeded));
    assert_eq!(fake.calls().len(), 6, "both runs called every agent");
    assert_eq!(fake.peak_concurrency(), 1, "one call at a time across both runs, not one per run");

    // A conclave may lower the engine's limit for its own runs, but not raise it.
    let fake = Arc::new(FakeProvider::new("fake"));
    for id in ["a", "b", "c"] {
        fake.script(id, [FakeStep::text("ok").after(Duration::from_millis(80))]);
    }
    let config = EngineConfig { provider_limits: HashMap::from([("fake".to_string(), 1)]), ..Default::default() };
    let engine = engine_with(fake.clone(), Arc::new(MemoryStore::new()), config);
    let mut raised = conclave();
    raised.settings.provider_limits.insert("fake".into(), 3);
    assert_eq!(run(&engine, raised).await.0.status, RunStatus::Succeeded);
    assert_eq!(fake.peak_concurrency(), 1, "the conclave's 3 does not raise the engine's 1");
}

pub(crate) fn with_schema(mut conclave: Conclave, node: &str, schema: Value, retries: u32) -> Conclave {
    let agent = conclave.nodes.iter_mut().find(|n| n.id == node).and_then(|n| n.agent.as_mut()).expect("agent");
    agent.output_schema = Some(schema);
    agent.output_retries = Some(retries);
    conclave
}

#[tokio::test]
async fn invalid_output_is_retried_with_the_errors_fed_back() {
    let fake = Arc::new(FakeProvider::new("fake"));
    fake.script("a", [FakeStep::json(json!({"score": "high"})), FakeStep::json(json!({"score": 4}))]);
    let engine = engine_with(fake.clone(), Arc::new(MemoryStore::new()), EngineConfig::default());
    let schema = json!({"type": "object", "properties": {"score": {"type": "integer"}}, "required": ["score"]});
    let (outcome, events) = run(&engine, with_schema(graph(&["t:t", "a:a"], &["t>a"]), "a", schema, 2)).await;
    assert_eq!(outcome.status, RunStatus::Succeeded, "{:?}", outcome.error);
    assert_eq!(outcome.outputs["a"].to_input_value(), json!({"score": 4}));
    let calls = fake.calls_for("a");
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[1].attempt, 2);
    let Some(Message::User(feedback)) = calls[1].messages.last() else { panic!("the retry ends with feedback") };
    assert!(feedback.contains("- /score: \"high\" is not of type \"integer\""), "{feedback}");
    assert!(
        matches!(&calls[1].messages[1], Message::Assistant { text, .. } if text == "{\"score\":\"high\"}"),
        "the failed answer is part of the conversation: {:?}",
        calls[1].messages
    );
    let failed: Vec<u32> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::AttemptFailed { attempt, .. } => Some(*attempt),
            _ => None,
        })
        .collect();
    assert_eq!(failed, vec![1]);
}

#[tokio::test]
async fn output_still_invalid_after_retries_fails_the_node_without_passing_anything_on() {
    let fake = Arc::new(FakeProvider::new("fake"));
    fake.script("a", [FakeStep::text("not json"), FakeStep::text("```json\n{}\n```"), FakeStep::json(json!({}))]);
    let engine = engine_with(fake.clone(), Arc::new(MemoryStore::new()), EngineConfig::default());
    let schema = json!({"type": "object", "properties": {"score": {"type": "integer"}}, "required": ["score"]});
    let conclave = with_schema(graph(&["t:t", "a:a", "b:a"], &["t>a", "a>b"]), "a", schema, 2);
    let (outcome, _) = run(&engine, conclave).await;
    assert_eq!(outcome.status, RunStatus::Failed);
    assert_eq!(outcome.error_kind, Some(ErrorKind::InvalidOutput));
    assert!(outcome.error.as_deref().unwrap_or("").contains("after 3 attempt(s)"), "{:?}", outcome.error);
    assert!(fake.calls_for("b").is_empty(), "nothing runs downstream of an invalid output");
}

#[tokio::test]
async fn unavailable_providers_and_bad_schemas_stop_the_run_before_it_starts() {
    let fake = Arc::new(FakeProvider::new("fake"));
    let store: Arc<dyn RunStore> = Arc::new(MemoryStore::new());
    let engine = engine_with(fake, store.clone(), EngineConfig::default());
    let mut conclave = graph(&["t:t", "a:a"], &["t>a"]);
    conclave.nodes[1].agent.as_mut().expect("agent").provider = "anthropic".into();
    let err = start(&engine, conclave, json!(null)).await.expect_err("must not start");
    assert!(matches!(err, StartError::ProviderUnavailable { ref node_id, .. } if node_id == "a"), "{err}");
    assert_eq!(err.to_string(), "node `a`: provider `anthropic` is not available in this build of Conclave");

    // A schema that is not an object schema never gets as far as the engine.
    let conclave = with_schema(graph(&["t:t", "a:a"], &["t>a"]), "a", json!({"type": "array"}), 0);
    let Err(LoadError::Invalid { diagnostics, .. }) = check(conclave) else { panic!("the schema is refused") };
    assert_eq!(diagnostics[0].path, "/nodes/1/agent/output_schema/type", "{diagnostics:?}");
    assert!(store.list_runs(10).await.expect("list").is_empty(), "no run is recorded when planning fails");
}

#[tokio::test]
async fn the_prompt_contract_travels_in_the_system_prompt_and_fenced_answers_are_accepted() {
    let fake = Arc::new(FakeProvider::new("fake"));
    fake.script("a", [FakeStep::text("Here is my answer:\n```json\n{\"score\": 5}\n```\nThanks.")]);
    let engine = engine_with(fake.clone(), Arc::new(MemoryStore::new()), EngineConfig::default());
    let schema = json!({"type": "object", "properties": {"score": {"type": "integer"}}, "required": ["score"]});
    let mut conclave = with_schema(graph(&["t:t", "a:a"], &["t>a"]), "a", schema, 0);
    conclave.nodes[1].agent.as_mut().expect("agent").system_prompt = "Score the change.".into();
    let (outcome, events) = run(&engine, conclave).await;
    assert_eq!(outcome.status, RunStatus::Succeeded, "{:?}", outcome.error);
    assert_eq!(outcome.outputs["a"].to_input_value(), json!({"score": 5}));
    let call = &fake.calls_for("a")[0];
    assert!(
        call.system_prompt
            .starts_with("Score the change.\n\nAnswer with one JSON value that satisfies this JSON Schema")
    );
    assert!(call.system_prompt.contains("\"score\""), "the schema is rendered: {}", call.system_prompt);
    assert!(call.output_schema.is_none(), "no native schema for a provider without structured output");
    let lowered = events.iter().find_map(|e| match &e.kind {
        EventKind::SchemaLowered { target, native, .. } => Some((target.clone(), *native)),
        _ => None,
    });
    assert_eq!(lowered, Some(("prompt".to_string(), false)));
}

#[tokio::test]
async fn strict_compatibility_refuses_a_lossy_lowering_before_any_call() {
    use conclave_core::Capabilities;
    use conclave_shared::LowerTarget;
    let fake = Arc::new(FakeProvider::new("fake").with_capabilities(Capabilities {
        native_schema: Some(LowerTarget::Anthropic),
        tools: true,
        context_window: None,
    }));
    let engine = engine_with(fake.clone(), Arc::new(MemoryStore::new()), EngineConfig::default());
    let schema =
        json!({"type": "object", "properties": {"line": {"type": "integer", "minimum": 1}}, "required": ["line"]});
    let mut conclave = with_schema(graph(&["t:t", "a:a"], &["t>a"]), "a", schema.clone(), 0);
    conclave.nodes[1].agent.as_mut().expect("agent").compatibility = Some(conclave_shared::Compatibility::Strict);
    let err = start(&engine, conclave, json!(null)).await.expect_err("strict refuses");
    let text = err.to_string();
    assert!(text.contains("strict compatibility: provider `fake` cannot express the whole output schema"), "{text}");
    assert!(text.contains("/properties/line/minimum: `minimum` dropped"), "{text}");
    assert!(fake.calls().is_empty());

    // The same schema in lossy mode runs, and the native schema sent is the lowered one.
    fake.script("a", [FakeStep::text("{\"line\": 3}")]);
    let (outcome, _) = run(&engine, with_schema(graph(&["t:t", "a:a"], &["t>a"]), "a", schema, 0)).await;
    assert_eq!(outcome.status, RunStatus::Succeeded, "{:?}", outcome.error);
    let sent = fake.calls_for("a")[0].output_schema.clone().expect("native schema sent");
    assert_eq!(sent.schema["properties"]["line"], json!({"type": "integer", "description": "(minimum: 1)"}));
}

#[tokio::test]
async fn usage_and_cost_are_recorded_per_attempt_and_per_node() {
    let fake = Arc::new(FakeProvider::new("openai"));
    fake.script("a", [FakeStep::text("not json at all, sorry"), FakeStep::text("{\"score\": 1}")]);
    let engine = engine_with(fake, Arc::new(MemoryStore::new()), EngineConfig::default());
    let schema = json!({"type": "object", "properties": {"score": {"type": "integer"}}, "required": ["score"]});
    let mut conclave = with_schema(graph(&["t:t", "a:a"], &["t>a"]), "a", schema, 1);
    let agent = conclave.nodes[1].agent.as_mut().expect("agent");
    agent.provider = "openai".into();
    agent.model = "gpt-4.1-mini".into();
    let (outcome, events) = run(&engine, conclave).await;
    assert_eq!(outcome.status, RunStatus::Succeeded, "{:?}", outcome.error);
    let attempt_usage = events.iter().find_map(|e| match &e.kind {
        EventKind::AttemptFailed { usage, .. } => Some(usage.clone()),
        _ => None,
    });
    let attempt_usage = attempt_usage.expect("the first attempt failed");
    assert_eq!(attempt_usage.output_tokens, "not json at all, sorry".len() as u64 / 4);
    let node_usage = events.iter().find_map(|e| match &e.kind {
        EventKind::NodeCompleted { node_id, usage, .. } if node_id == "a" => Some(usage.clone()),
        _ => None,
    });
    let node_usage = node_usage.expect("completed");
    assert!(node_usage.output_tokens > attempt_usage.output_tokens, "the node total includes both attempts");
    let expected = (node_usage.input_tokens as f64 * 0.4 + node_usage.output_tokens as f64 * 1.6) / 1e6;
    let cost = node_usage.cost_usd.expect("gpt-4.1-mini has a price");
    assert!((cost - expected).abs() < 1e-12, "cost from the price table for gpt-4.1-mini: {cost} vs {expected}");
}
