//! Budgets: the ledger's reservations under concurrency, settling, per-agent limits,
//! token limits and a ledger resumed from stored events; and runs that stop at their
//! budget, with samples, across a resumed run, and refused when a model has no price.

use conclave_core::{NewRun, PriceTable, RunStore};
use conclave_doubles::{FakeProvider, FakeStep, MemoryStore};
use conclave_engine::budget::{Ledger, Limit, WorstCase};
use conclave_engine::{EngineConfig, OutputPolicy, RunOptions, Samples, StartError};
use conclave_shared::{Budget, ErrorKind, EventKind, NodeOutput, RunEvent, RunStatus, Usage};
use conclave_testkit::checked;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;

use crate::engine::{engine_with, graph, with_schema};

fn ledger(budget: Budget) -> Arc<Ledger> {
    Arc::new(Ledger::new(budget, HashMap::new()))
}

fn cost(usd: f64) -> WorstCase {
    WorstCase { prompt_tokens: 100, output_tokens: 100, cost_usd: Some(usd) }
}

fn usd(max: f64) -> Budget {
    Budget { max_cost_usd: Some(max), max_tokens: None, max_tool_calls: None }
}

fn used(cost: f64, tokens: u64) -> Usage {
    Usage { cost_usd: Some(cost), ..Usage::tokens(tokens, 0) }
}

#[test]
fn concurrent_reservations_never_exceed_the_budget() {
    let ledger = ledger(usd(1.0));
    // Sixteen threads reserve at once, none settling: only three worst cases of $0.30
    // fit in $1, and the others are told to wait, not refused.
    let outcomes: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..16)
            .map(|_| scope.spawn(|| ledger.try_reserve("a", None, &cost(0.3)).expect("never refused")))
            .collect();
        handles.into_iter().map(|h| h.join().expect("joined")).collect()
    });
    let held: Vec<_> = outcomes.into_iter().flatten().collect();
    assert_eq!(held.len(), 3, "3 × $0.30 fit in $1, a fourth would not");
    for reservation in held {
        reservation.settle(Some(&used(0.3, 200)));
    }
    assert!((ledger.spent().cost_usd - 0.9).abs() < 1e-9);
    let refused = ledger.try_reserve("a", None, &cost(0.3)).expect_err("$0.90 spent: $0.30 more cannot fit");
    assert_eq!(refused.limit, Limit::RunCost);
    assert_eq!(
        refused.to_string(),
        "this provider call was not made: it may use up to $0.3000 (100 prompt tokens at most and 100 generated), and \
         $0.9000 of the run's cost budget of $1.0000 is already spent; raise the budget (`--max-cost`, `max_cost_usd` \
         in the API or the conclave's `settings.budget`), or lower the agent's `max_tokens`"
    );
}

#[test]
fn settling_releases_what_the_call_did_not_use() {
    let ledger = ledger(usd(1.0));
    let first = ledger.try_reserve("a", None, &cost(0.6)).expect("fits").expect("reserved");
    assert!(ledger.try_reserve("b", None, &cost(0.6)).expect("could fit").is_none(), "waits while $0.60 is held");
    first.settle(Some(&used(0.05, 300)));
    let second = ledger.try_reserve("b", None, &cost(0.6)).expect("fits").expect("reserved once released");
    second.settle(None);
    assert_eq!(ledger.spent().tokens, 300, "a failed call settles to nothing");
    assert!((ledger.spent().cost_usd - 0.05).abs() < 1e-9);
    // A call cut off (its future dropped) stays charged at its worst case.
    drop(ledger.try_reserve("c", None, &cost(0.5)).expect("fits").expect("reserved"));
    assert!((ledger.spent().cost_usd - 0.55).abs() < 1e-9);
}

#[test]
fn an_agent_s_max_cost_holds_across_its_calls_and_not_for_others() {
    let ledger = ledger(Budget::default());
    let a1 = ledger.try_reserve("a", Some(0.5), &cost(0.3)).expect("fits").expect("reserved");
    assert!(ledger.try_reserve("a", Some(0.5), &cost(0.3)).expect("could fit").is_none(), "a's second sample waits");
    assert!(ledger.try_reserve("b", None, &cost(0.3)).expect("no limit").is_some(), "b has no limit");
    a1.settle(Some(&used(0.3, 10)));
    let refused = ledger.try_reserve("a", Some(0.5), &cost(0.3)).expect_err("a spent $0.30 of $0.50");
    assert_eq!(refused.limit, Limit::AgentCost);
    assert!(refused.to_string().contains("raise the agent's `max_cost`"), "{refused}");
}

#[test]
fn a_token_budget_counts_prompt_and_generated_tokens() {
    let ledger = ledger(Budget { max_cost_usd: None, max_tokens: Some(500), max_tool_calls: None });
    let first = ledger.try_reserve("a", None, &cost(0.0)).expect("fits").expect("200 of 500");
    first.settle(Some(&Usage { cache_read_tokens: 50, ..Usage::tokens(100, 100) }));
    assert_eq!(ledger.spent().tokens, 250, "cached prompt tokens count too");
    ledger.try_reserve("a", None, &cost(0.0)).expect("fits").expect("450 of 500").settle(Some(&Usage::tokens(0, 200)));
    let refused = ledger.try_reserve("a", None, &cost(0.0)).expect_err("450 + 200 > 500");
    assert_eq!(refused.limit, Limit::RunTokens);
    let message = refused.to_string();
    assert!(message.contains("may use up to 200 tokens"), "{message}");
    assert!(message.contains("and 450 tokens of the run's token budget of 500 tokens is already spent"), "{message}");
}

#[test]
fn a_resumed_ledger_starts_from_what_the_events_say_was_spent() {
    let event = |seq, kind| RunEvent { run_id: "r".into(), seq, at_ms: seq, kind };
    let events = [
        event(
            1,
            EventKind::NodeCompleted {
                node_id: "a".into(),
                output: NodeOutput::Text("done".into()),
                usage: used(0.4, 1000),
                duration_ms: 1,
            },
        ),
        // A failed attempt of a node that did not complete is spent too; one of a
        // node that completed is already in its usage.
        event(
            2,
            EventKind::AttemptFailed {
                node_id: "b".into(),
                attempt: 1,
                errors: vec![],
                raw: String::new(),
                usage: used(0.2, 10),
            },
        ),
        event(
            3,
            EventKind::AttemptFailed {
                node_id: "a".into(),
                attempt: 1,
                errors: vec![],
                raw: String::new(),
                usage: used(0.1, 10),
            },
        ),
    ];
    let ledger = Arc::new(Ledger::new(usd(1.0), HashMap::new()).resumed_from(&events));
    assert!((ledger.spent().cost_usd - 0.6).abs() < 1e-9);
    assert_eq!(ledger.spent().tokens, 1010);
    ledger.try_reserve("c", None, &cost(0.45)).expect_err("$0.60 spent: $0.45 cannot fit in $1");
    let refused = ledger.try_reserve("b", Some(0.3), &cost(0.15)).expect_err("b spent $0.20 of its $0.30");
    assert_eq!(refused.limit, Limit::AgentCost);
}

/// A price of $0 per prompt token and $1 per generated token for the fake's model
/// `m`, so a call's worst case is its `max_tokens` in dollars.
fn priced() -> (tempfile::TempDir, EngineConfig) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("pricing.json"), r#"{"fake": {"m": {"input": 0.0, "output": 1000000.0}}}"#)
        .expect("write");
    let prices = Arc::new(PriceTable::load(Some(dir.path())));
    (dir, EngineConfig { prices, ..EngineConfig::default() })
}

fn on_model(mut conclave: conclave_shared::Conclave, model: &str, max_tokens: u32) -> conclave_shared::Conclave {
    for agent in conclave.nodes.iter_mut().filter_map(|n| n.agent.as_mut()) {
        agent.model = model.into();
        agent.max_tokens = Some(max_tokens);
    }
    conclave
}

#[derive(Debug)]
struct Count;

impl OutputPolicy for Count {
    fn merge_samples(&self, answers: Vec<Value>, _field: &str, failed: &[String]) -> Value {
        json!({"answered": answers.len(), "failed": failed})
    }
}

#[tokio::test]
async fn samples_stop_at_the_budget_and_the_node_succeeds_from_those_that_answered() {
    let (_prices, config) = priced();
    let fake = Arc::new(FakeProvider::new("fake"));
    let answer = json!({"findings": [{"file": "a.rs", "line": 1, "severity": "minor"}]});
    // The fake reports a quarter of the answer's characters as generated tokens.
    let spent_per_call = (answer.to_string().len() / 4) as f64;
    fake.script("a", (0..3).map(|_| FakeStep::json(answer.clone())));
    let engine = engine_with(fake.clone(), Arc::new(MemoryStore::new()), config);
    let schema = json!({"type": "object", "required": ["findings"], "properties": {"findings": {"type": "array", "items": {
        "type": "object",
        "properties": {"file": {"type": "string"}, "line": {"type": "integer"}, "severity": {"type": "string"}}
    }}}});
    let conclave = on_model(with_schema(graph(&["t:t", "a:a", "o:o"], &["t>a", "a>o"]), "a", schema, 0), "m", 100);
    // Each call may cost $100 (100 tokens at $1): two samples fit, a third does not.
    let budget = 100.0 + 1.5 * spent_per_call;
    let options = RunOptions {
        policy: Some(Arc::new(Count)),
        samples: Some(Samples { count: 3, nodes: vec!["a".into()] }),
        budget: Some(usd(budget)),
        ..RunOptions::default()
    };
    let outcome = engine.start(checked(conclave), json!({}), options).await.expect("starts").wait().await;
    assert_eq!(outcome.status, RunStatus::Succeeded, "{:?}", outcome.error);
    assert_eq!(fake.calls_for("a").len(), 2, "the third sample's call is not made");
    let merged = outcome.outputs["a"].to_input_value();
    assert_eq!(merged["answered"], 2);
    assert!(merged["failed"][0].as_str().unwrap_or("").starts_with("this provider call was not made"), "{merged}");
    let record = engine.store().get_run(&outcome.run_id).await.expect("get").expect("run");
    let spent = record.nodes.iter().find(|n| n.node_id == "a").and_then(|n| n.usage.clone()).expect("usage");
    assert_eq!(spent.cost_usd, Some(2.0 * spent_per_call));
    assert!(spent.cost_usd.unwrap_or(f64::MAX) <= budget);
    assert_eq!(record.conclave.settings.budget, Some(usd(budget)), "the run's budget is stored with it");
}

#[tokio::test]
async fn the_tighter_of_the_conclave_s_budget_and_the_run_s_holds() {
    let (_prices, config) = priced();
    let fake = Arc::new(FakeProvider::new("fake"));
    fake.script("a", [FakeStep::text("ok")]);
    let engine = engine_with(fake.clone(), Arc::new(MemoryStore::new()), config);
    let mut conclave = on_model(graph(&["t:t", "a:a", "o:o"], &["t>a", "a>o"]), "m", 100);
    conclave.settings.budget =
        Some(Budget { max_cost_usd: Some(50.0), max_tokens: Some(1_000_000), max_tool_calls: None });
    let options = RunOptions { budget: Some(usd(500.0)), ..RunOptions::default() };
    let outcome = engine.start(checked(conclave), json!({}), options).await.expect("starts").wait().await;
    assert_eq!((outcome.status, outcome.error_kind), (RunStatus::Failed, Some(ErrorKind::Budget)));
    assert_eq!(outcome.failed_node.as_deref(), Some("a"));
    assert!(fake.calls_for("a").is_empty(), "a $100 call does not fit in the conclave's $50");
    let record = engine.store().get_run(&outcome.run_id).await.expect("get").expect("run");
    assert_eq!(
        record.conclave.settings.budget,
        Some(Budget { max_cost_usd: Some(50.0), max_tokens: Some(1_000_000), max_tool_calls: None })
    );
}

#[tokio::test]
async fn a_cost_budget_is_refused_at_start_when_a_model_has_no_price() {
    let (_prices, config) = priced();
    let engine = engine_with(Arc::new(FakeProvider::new("fake")), Arc::new(MemoryStore::new()), config);
    let conclave = on_model(graph(&["t:t", "a:a", "o:o"], &["t>a", "a>o"]), "unpriced", 100);
    let options = RunOptions { budget: Some(usd(1.0)), ..RunOptions::default() };
    let error = engine.start(checked(conclave.clone()), json!({}), options).await.expect_err("refused");
    assert!(matches!(error, StartError::Unpriced { .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        "node `a`: the run has a cost budget, but model `unpriced` of provider `fake` has no price, so its calls \
         cannot be checked against it; add its price in dollars per million tokens to \
         $CONCLAVE_CONFIG_DIR/pricing.json, such as {\"fake\": {\"unpriced\": {\"input\": 3.0, \"output\": 15.0}}}, \
         or limit the run by tokens only"
    );
    // A token budget needs no price.
    let tokens = RunOptions {
        budget: Some(Budget { max_cost_usd: None, max_tokens: Some(10), max_tool_calls: None }),
        ..Default::default()
    };
    let outcome = engine.start(checked(conclave), json!({}), tokens).await.expect("starts").wait().await;
    assert_eq!(outcome.error_kind, Some(ErrorKind::Budget), "100 generated tokens at most do not fit in 10");
}

#[tokio::test]
async fn a_resumed_run_s_budget_counts_what_was_spent_before() {
    let (_prices, config) = priced();
    let store = Arc::new(MemoryStore::new());
    let mut conclave = on_model(graph(&["t:t", "a:a", "b:a", "o:o"], &["t>a", "a>b", "b>o"]), "m", 100);
    conclave.settings.budget = Some(usd(150.0));
    let new_run = NewRun {
        id: "crashed".into(),
        conclave: conclave.clone(),
        input: json!("x"),
        created_ms: 1,
        owner: "gone".into(),
    };
    store.create_run(&new_run).await.expect("create");
    let kinds = [
        EventKind::RunStarted { conclave_id: "test".into(), node_count: 4 },
        EventKind::NodeStarted { node_id: "a".into(), input: None },
        EventKind::NodeCompleted {
            node_id: "a".into(),
            output: NodeOutput::Text("a's answer".into()),
            usage: used(60.0, 60),
            duration_ms: 5,
        },
    ];
    for (seq, kind) in kinds.into_iter().enumerate() {
        let event = RunEvent { run_id: "crashed".into(), seq: seq as u64 + 1, at_ms: seq as u64, kind };
        store.append_event(&event).await.expect("append");
    }
    let fake = Arc::new(FakeProvider::new("fake"));
    fake.script("b", [FakeStep::text("b's answer")]);
    let engine = engine_with(fake.clone(), store.clone(), config);
    let handle = engine.resume(checked(conclave), "crashed", RunOptions::default()).await.expect("resumes");
    let outcome = handle.wait().await;
    assert_eq!((outcome.failed_node.as_deref(), outcome.error_kind), (Some("b"), Some(ErrorKind::Budget)));
    assert!(fake.calls_for("b").is_empty(), "$60 spent before the crash: a $100 call does not fit in $150");
    assert!(outcome.error.as_deref().unwrap_or("").contains("$60.0000 of the run's cost budget of $150.0000"));
}

#[tokio::test]
async fn a_loop_s_iterations_share_the_run_s_budget() {
    use conclave_shared::{Edge, LoopConfig, Node, NodeKind, Predicate, PredicateOp};
    let (_prices, config) = priced();
    let fake = Arc::new(FakeProvider::new("fake"));
    let unconfirmed = json!({"confirmed": false});
    for n in 1..=5 {
        fake.script(&format!("verify/{n}/check"), [FakeStep::json(unconfirmed.clone())]);
    }
    let spent_per_call = (unconfirmed.to_string().len() / 4) as f64;
    let mut conclave = on_model(graph(&["in:t", "check:a", "out:o"], &[]), "m", 100);
    let mut node = Node::new("verify", NodeKind::Loop);
    node.repeat = Some(LoopConfig {
        body: vec!["check".into()],
        until: Predicate { pointer: "/check/confirmed".into(), op: PredicateOp::Equals, value: Some(json!(true)) },
        max_iterations: 5,
    });
    conclave.nodes.push(node);
    conclave.edges.extend([Edge::new("in", "verify"), Edge::new("verify", "out")]);
    // Each iteration's call may cost $100: after three calls the fourth cannot fit.
    let options = RunOptions { budget: Some(usd(100.0 + 2.5 * spent_per_call)), ..RunOptions::default() };
    let engine = engine_with(fake.clone(), Arc::new(MemoryStore::new()), config);
    let outcome = engine.start(checked(conclave), json!({}), options).await.expect("starts").wait().await;
    assert_eq!((outcome.failed_node.as_deref(), outcome.error_kind), (Some("verify"), Some(ErrorKind::Budget)));
    let calls: Vec<usize> = (1..=5).map(|n| fake.calls_for(&format!("verify/{n}/check")).len()).collect();
    assert_eq!(calls, [1, 1, 1, 0, 0], "three iterations fit in the budget together");
}

#[test]
fn a_call_s_worst_case_is_a_token_a_byte_plus_allowances_and_max_tokens_at_the_dearest_prompt_price() {
    use conclave_core::pricing::Price;
    use conclave_core::{AgentRequest, Message, SchemaSpec, ToolSpec};
    use conclave_engine::budget::{PER_CALL_TOKENS, PER_MESSAGE_TOKENS, SCHEMA_TOKENS, TOOLS_TOKENS, json_len};
    let parameters = json!({"type": "object", "properties": {"path": {"type": "string"}}});
    let schema = json!({"type": "object", "required": ["findings"]});
    let request = AgentRequest {
        run_id: "r".into(),
        node_id: "a".into(),
        model: "m".into(),
        shared_prefix: "p".repeat(100),
        system_prompt: "s".repeat(1_000),
        input: json!({"not": "counted: the first message carries it"}),
        messages: vec![
            Message::User("u".repeat(10_000)),
            Message::Assistant { text: "a".repeat(50), tool_calls: vec![] },
        ],
        tools: vec![ToolSpec { name: "grep".into(), description: "d".repeat(20), parameters: parameters.clone() }],
        tool_calls_allowed: true,
        output_schema: Some(SchemaSpec { name: "findings".into(), schema: Arc::new(schema.clone()) }),
        max_tokens: 2_000,
        agent: Arc::new(conclave_shared::AgentConfig::new("fake")),
        dialect: None,
        attempt: 1,
        max_turns: 1,
        workdir: None,
    };
    let bytes = 100 + 1_000 + 10_000 + 50 + (4 + 20 + json_len(&parameters)) + (8 + json_len(&schema));
    assert!(json_len(&parameters) >= serde_json::to_string(&parameters).expect("json").len(), "an upper bound");
    let allowance = PER_CALL_TOKENS + 2 * PER_MESSAGE_TOKENS + TOOLS_TOKENS + SCHEMA_TOKENS;
    assert_eq!(conclave_engine::budget::prompt_bound(&request), bytes as u64 + allowance);
    // A cache write dearer than an input token prices every prompt token.
    let price = Price { input: 3.0, output: 15.0, cache_read: Some(0.3), cache_write: Some(3.75) };
    let worst = WorstCase::of(&request, Some(price));
    let expected = ((bytes as u64 + allowance) as f64 * 3.75 + 2_000.0 * 15.0) / 1e6;
    assert_eq!((worst.output_tokens, worst.cost_usd), (2_000, Some(expected)));
    assert_eq!(WorstCase::of(&request, None).cost_usd, None, "no price, no cost");
}
