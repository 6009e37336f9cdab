//! Engine overhead on layered DAGs of 10 to 10,000 nodes with an instant provider.
//!
//! Run with `cargo bench -p conclave-engine --bench engine`. Prints, per size and
//! store, the median wall time of a whole run and the engine overhead per node (the
//! provider answers instantly, so all of the time is the engine's and the store's).

use async_trait::async_trait;
use conclave_catalog::CheckedConclave;
use conclave_core::testing::MemoryStore;
use conclave_core::{
    AgentReply, AgentRequest, Capabilities, Provider, ProviderError, ProviderRegistry, RunStore, StreamSink,
};
use conclave_engine::{Engine, EngineConfig, RunOptions};
use conclave_shared::{AgentConfig, Conclave, Edge, Node, NodeKind, Position, RunStatus, Settings};
use conclave_store::SqliteStore;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Answers every call at once, without streaming.
#[derive(Debug)]
struct InstantProvider;

#[async_trait]
impl Provider for InstantProvider {
    fn name(&self) -> &str {
        "instant"
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities { native_schema: None, tools: false }
    }
    fn default_model(&self) -> &str {
        ""
    }
    async fn call(&self, _request: &AgentRequest, _stream: &dyn StreamSink) -> Result<AgentReply, ProviderError> {
        Ok(AgentReply::text("ok", Default::default()))
    }
}

/// A trigger, then layers of `width` agents, each fed by up to three nodes of the
/// layer before; `nodes` counts the trigger.
fn layered(nodes: usize, width: usize) -> Conclave {
    let mut list = vec![Node {
        id: "n0".into(),
        kind: NodeKind::Trigger,
        label: String::new(),
        position: Position::default(),
        agent: None,
    }];
    let mut edges = Vec::new();
    let mut previous = vec![0usize];
    let mut layer = Vec::new();
    for i in 1..nodes {
        list.push(Node {
            id: format!("n{i}"),
            kind: NodeKind::Agent,
            label: String::new(),
            position: Position::default(),
            agent: Some(AgentConfig::new("instant")),
        });
        for k in 0..previous.len().min(3) {
            let from = previous[(i + k) % previous.len()];
            edges.push(Edge { from: format!("n{from}"), to: format!("n{i}") });
        }
        layer.push(i);
        if layer.len() == width {
            previous = std::mem::take(&mut layer);
        }
    }
    Conclave {
        version: 1,
        id: format!("layered-{nodes}"),
        name: String::new(),
        description: String::new(),
        settings: Settings::default(),
        nodes: list,
        edges,
    }
}

/// Checks a benchmark conclave as loading a file would.
fn check(conclave: Conclave) -> CheckedConclave {
    let mut context = conclave_testkit::test_catalog();
    context.providers.push("instant".into());
    conclave_catalog::check_conclave("bench.conclave.json", conclave, &context).expect("the conclave checks")
}

async fn one_run(engine: &Engine, conclave: &CheckedConclave) -> Duration {
    let started = Instant::now();
    let handle =
        engine.start(conclave.clone(), serde_json::Value::Null, RunOptions::default()).await.expect("run starts");
    let outcome = handle.wait().await;
    let took = started.elapsed();
    assert_eq!(outcome.status, RunStatus::Succeeded, "{:?}", outcome.error);
    took
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let dir = tempfile::tempdir().expect("tempdir");
    let mut providers = ProviderRegistry::default();
    providers.register(Arc::new(InstantProvider));
    let config = EngineConfig { max_concurrency: 64, ..EngineConfig::default() };
    println!("{:<8} {:>7} {:>8} {:>12} {:>14}", "store", "nodes", "samples", "median run", "per node");
    for store_kind in ["memory", "sqlite"] {
        let mut per_node = Vec::new();
        for nodes in [10usize, 100, 1_000, 10_000] {
            let store: Arc<dyn RunStore> = match store_kind {
                "memory" => Arc::new(MemoryStore::new()),
                _ => Arc::new(SqliteStore::open(&dir.path().join(format!("bench-{nodes}.db"))).expect("open")),
            };
            let engine = Engine::new(providers.clone(), store, config.clone());
            let conclave = check(layered(nodes, 10));
            let samples = match nodes {
                n if n <= 100 => 30,
                1_000 => 10,
                _ => 3,
            };
            runtime.block_on(one_run(&engine, &conclave)); // warm-up
            let times: Vec<Duration> = (0..samples).map(|_| runtime.block_on(one_run(&engine, &conclave))).collect();
            let m = median(times);
            let us_per_node = m.as_secs_f64() * 1e6 / nodes as f64;
            per_node.push(us_per_node);
            println!(
                "{store_kind:<8} {nodes:>7} {samples:>8} {:>10.2}ms {:>11.2} µs",
                m.as_secs_f64() * 1e3,
                us_per_node
            );
        }
        let growth = per_node.last().copied().unwrap_or(0.0) / per_node.get(2).copied().unwrap_or(1.0);
        println!("{store_kind:<8} per-node cost at 10,000 nodes / at 1,000 nodes = {growth:.2} (1.0 is linear)\n");
    }
}
