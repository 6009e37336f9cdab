//! The cost of the budget check per provider call: reserving a realistic request's
//! worst case in the run's ledger and settling it to the call's usage. The request
//! is a review agent's: a 20 KB prompt (system prompt and diff), three tools with
//! their parameter schemas, and a findings schema; the target is 5 µs a call.
//!
//! Run with `cargo bench -p conclave-engine --bench budget`. Prints the median time
//! of one reserve + settle over batches of calls, on one thread and with four tasks
//! sharing the ledger.

use conclave_core::pricing::Price;
use conclave_core::{AgentRequest, Message, SchemaSpec, ToolSpec};
use conclave_engine::Ledger;
use conclave_shared::{AgentConfig, Budget, Usage};
use serde_json::json;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

const CALLS: u32 = 20_000;
const BATCHES: usize = 15;

fn request() -> AgentRequest {
    let diff: String = (0..400).map(|i| format!("+    let value_{i} = compute(input, {i}); // line\n")).collect();
    let tool = |name: &str| ToolSpec {
        name: name.into(),
        description: format!("{name}: reads the repository under review, confined to its root."),
        parameters: json!({"type": "object", "additionalProperties": false, "required": ["path"],
            "properties": {"path": {"type": "string", "description": "A path relative to the root."},
                           "start": {"type": "integer", "minimum": 1}, "end": {"type": "integer", "minimum": 1}}}),
    };
    let finding = json!({"type": "object", "additionalProperties": false,
        "required": ["severity", "file", "line", "description", "raisedBy", "stance", "evidence"],
        "properties": {"severity": {"enum": ["blocker", "major", "minor", "nit"]}, "file": {"type": "string"},
            "line": {"type": "integer", "minimum": 1}, "description": {"type": "string", "minLength": 10},
            "raisedBy": {"type": "string"}, "stance": {"enum": ["concern", "approval"]},
            "evidence": {"type": "string", "description": "The code quoted from the file."}}});
    let schema = json!({"type": "object", "additionalProperties": false, "required": ["findings", "counts"],
        "properties": {"findings": {"type": "array", "items": finding},
            "counts": {"type": "object", "properties": {"blocker": {"type": "integer"}, "major": {"type": "integer"},
                "minor": {"type": "integer"}, "nit": {"type": "integer"}}}}});
    let mut agent = AgentConfig::new("anthropic");
    agent.model = "claude-sonnet-4-5".into();
    AgentRequest {
        run_id: "bench".into(),
        node_id: "security".into(),
        model: agent.model.clone(),
        shared_prefix: String::new(),
        system_prompt: "You are the security reviewer. ".repeat(130),
        input: json!({}),
        messages: vec![Message::User(diff)],
        tools: vec![tool("read_file"), tool("list_files"), tool("grep")],
        tool_calls_allowed: true,
        output_schema: Some(SchemaSpec { name: "findings".into(), schema: Arc::new(schema) }),
        max_tokens: 4096,
        agent: Arc::new(agent),
        dialect: None,
        attempt: 1,
        max_turns: 6,
        workdir: None,
    }
}

fn ledger() -> Arc<Ledger> {
    let price = Price { input: 3.0, output: 15.0, cache_read: Some(0.3), cache_write: Some(3.75) };
    let prices = HashMap::from([("anthropic".to_string(), HashMap::from([("claude-sonnet-4-5".to_string(), price)]))]);
    Arc::new(Ledger::new(
        Budget { max_cost_usd: Some(1e9), max_tokens: Some(u64::MAX / 2), max_tool_calls: None },
        prices,
    ))
}

async fn batch(ledger: &Arc<Ledger>, request: &AgentRequest) -> Duration {
    let usage = Usage { cost_usd: Some(0.01), ..Usage::tokens(5000, 800) };
    let started = Instant::now();
    for _ in 0..CALLS {
        let reservation = ledger.reserve("security", Some(1e9), "anthropic", request).await.expect("fits");
        reservation.settle(Some(&usage));
    }
    started.elapsed() / CALLS
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(4).build().expect("runtime");
    let request = Arc::new(request());
    let bytes = conclave_engine::budget::prompt_bound(&request);
    println!("budget check: a request of at most {bytes} prompt tokens (20 KB prompt, 3 tools, a findings schema)");
    let ledger = ledger();
    let one: Vec<Duration> = (0..BATCHES).map(|_| runtime.block_on(batch(&ledger, &request))).collect();
    println!("  reserve + settle, one task:   {:>8.2?} per call (median of {BATCHES} batches)", median(one));
    let shared: Vec<Duration> = (0..BATCHES)
        .map(|_| {
            runtime.block_on(async {
                let tasks: Vec<_> = (0..4)
                    .map(|_| {
                        let (ledger, request) = (ledger.clone(), request.clone());
                        tokio::spawn(async move { batch(&ledger, &request).await })
                    })
                    .collect();
                let mut worst = Duration::ZERO;
                for task in tasks {
                    worst = worst.max(task.await.expect("joined"));
                }
                worst
            })
        })
        .collect();
    println!("  reserve + settle, four tasks: {:>8.2?} per call (median of {BATCHES} batches)", median(shared));
}
