//! Engine overhead on layered DAGs of 10 to 10,000 nodes with an instant provider;
//! then the overhead of a loop iteration over a one-node body (10 loops in a row,
//! each exhausting 100 iterations: 1,000 iterations a run), and a cache lookup and
//! hit of an agent with a 100 KB input.
//!
//! Run with `cargo bench -p conclave-engine --bench engine`. Prints, per size and
//! store, the median wall time of a whole run and the engine overhead per node (the
//! provider answers instantly, so all of the time is the engine's and the store's).
//! Name stores to measure only those (`-- sqlite postgres`); PostgreSQL is measured
//! when `CONCLAVE_BENCH_POSTGRES_URL` (or `CONCLAVE_TEST_POSTGRES_URL`) names a database.

use async_trait::async_trait;
use conclave_catalog::CheckedConclave;
use conclave_core::{
    AgentReply, AgentRequest, Capabilities, Provider, ProviderError, ProviderRegistry, RunStore, StreamSink,
};
use conclave_doubles::MemoryStore;
use conclave_engine::{Engine, EngineConfig, RunOptions, cache};
use conclave_shared::{
    AgentConfig, CacheSetting, Conclave, Edge, LoopConfig, Node, NodeKind, NodeOutput, Predicate, PredicateOp,
    RunStatus, Settings,
};
use conclave_store::{PostgresStore, SqliteStore};
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
        Capabilities { native_schema: None, tools: false, context_window: None }
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
    let mut list = vec![Node { label: String::new(), ..Node::new("n0", NodeKind::Trigger) }];
    let mut edges = Vec::new();
    let mut previous = vec![0usize];
    let mut layer = Vec::new();
    for i in 1..nodes {
        list.push(Node {
            label: String::new(),
            agent: Some(AgentConfig::new("instant")),
            ..Node::new(format!("n{i}"), NodeKind::Agent)
        });
        for k in 0..previous.len().min(3) {
            let from = previous[(i + k) % previous.len()];
            edges.push(Edge { from: format!("n{from}"), to: format!("n{i}"), case: None });
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

/// Counts a store's commits, for the stores that count them.
type Commits = Option<Box<dyn Fn() -> u64>>;

/// A fresh store of `kind` for the `nodes`-node measurement, and how to count its
/// commits.
fn open_store(
    runtime: &tokio::runtime::Runtime,
    kind: &str,
    dir: &std::path::Path,
    nodes: usize,
) -> (Arc<dyn RunStore>, Commits) {
    match kind {
        "memory" => (Arc::new(MemoryStore::new()), None),
        "sqlite" => {
            let store = Arc::new(SqliteStore::open(&dir.join(format!("bench-{nodes}.db"))).expect("open"));
            let counted = store.clone();
            (store, Some(Box::new(move || counted.commits())))
        }
        _ => {
            let url = postgres_url().expect("checked before");
            let store = Arc::new(runtime.block_on(PostgresStore::connect(&url)).expect("connect to PostgreSQL"));
            let counted = store.clone();
            (store, Some(Box::new(move || counted.event_commits())))
        }
    }
}

/// The PostgreSQL database to measure on: `CONCLAVE_BENCH_POSTGRES_URL`, else the
/// test suite's `CONCLAVE_TEST_POSTGRES_URL`.
fn postgres_url() -> Option<String> {
    std::env::var("CONCLAVE_BENCH_POSTGRES_URL").or_else(|_| std::env::var("CONCLAVE_TEST_POSTGRES_URL")).ok()
}

/// The stores to measure: those named on the command line (`memory`, `sqlite`,
/// `postgres`), else all; PostgreSQL only when a database is given.
fn stores() -> Vec<&'static str> {
    let named: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let mut kinds = vec![];
    for kind in ["memory", "sqlite", "postgres"] {
        if !named.is_empty() && !named.iter().any(|n| n == kind) {
            continue;
        }
        if kind == "postgres" && postgres_url().is_none() {
            println!(
                "postgres: skipped; set CONCLAVE_BENCH_POSTGRES_URL (`bash scripts/postgres.sh start DIR` prints one)\n"
            );
            continue;
        }
        kinds.push(kind);
    }
    kinds
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let dir = tempfile::tempdir().expect("tempdir");
    let mut providers = ProviderRegistry::default();
    providers.register(Arc::new(InstantProvider));
    let config = EngineConfig { max_concurrency: 64, ..EngineConfig::default() };
    let conclaves: Vec<(usize, CheckedConclave)> =
        [10usize, 100, 1_000, 10_000].into_iter().map(|n| (n, check(layered(n, 10)))).collect();
    println!("{:<8} {:>7} {:>8} {:>12} {:>14}", "store", "nodes", "samples", "median run", "per node");
    for store_kind in stores() {
        let mut per_node = Vec::new();
        for (nodes, conclave) in &conclaves {
            let nodes = *nodes;
            let (store, commits) = open_store(&runtime, store_kind, dir.path(), nodes);
            let engine = Engine::new(providers.clone(), store.clone(), config.clone());
            let samples = match nodes {
                n if n <= 100 => 30,
                1_000 => 10,
                _ => 3,
            };
            runtime.block_on(one_run(&engine, conclave)); // warm-up
            let times: Vec<Duration> = (0..samples).map(|_| runtime.block_on(one_run(&engine, conclave))).collect();
            let m = median(times);
            let commits = commits.as_ref().map_or(String::new(), |count| {
                let runs = samples + 1;
                format!("  {:.1} commits per run", count() as f64 / runs as f64)
            });
            let us_per_node = m.as_secs_f64() * 1e6 / nodes as f64;
            per_node.push(us_per_node);
            println!(
                "{store_kind:<8} {nodes:>7} {samples:>8} {:>10.2}ms {:>11.2} µs{commits}",
                m.as_secs_f64() * 1e3,
                us_per_node
            );
        }
        let growth = per_node.last().copied().unwrap_or(0.0) / per_node.get(2).copied().unwrap_or(1.0);
        println!("{store_kind:<8} per-node cost at 10,000 nodes / at 1,000 nodes = {growth:.2} (1.0 is linear)\n");
    }
    let looped = check(loops(10, 100));
    println!("{:<8} {:>11} {:>8} {:>12} {:>16}", "store", "iterations", "samples", "median run", "per iteration");
    for store_kind in stores() {
        let (store, _) = open_store(&runtime, store_kind, dir.path(), 0);
        let engine = Engine::new(providers.clone(), store, config.clone());
        runtime.block_on(one_run(&engine, &looped));
        let m = median((0..5).map(|_| runtime.block_on(one_run(&engine, &looped))).collect());
        println!(
            "{store_kind:<8} {:>11} {:>8} {:>10.2}ms {:>13.2} µs",
            1000,
            5,
            m.as_secs_f64() * 1e3,
            m.as_secs_f64() * 1e6 / 1000.0
        );
    }
    println!();
    for store_kind in stores() {
        let (store, _) = open_store(&runtime, store_kind, dir.path(), 1);
        let per_lookup = runtime.block_on(cache_hits(&providers, store));
        println!("{store_kind:<8} cache lookup and hit, 100 KB input: median {:.3} ms", per_lookup.as_secs_f64() * 1e3);
    }
}

/// A trigger, then `loops` loop nodes in a row, each over a one-agent body whose
/// predicate never holds, so each runs `iterations` times.
fn loops(loops: usize, iterations: u32) -> Conclave {
    let mut conclave = layered(1, 1);
    conclave.id = "loops".into();
    let mut previous = "n0".to_string();
    for l in 0..loops {
        let (id, body) = (format!("loop{l}"), format!("body{l}"));
        let mut node = Node::new(&id, NodeKind::Loop);
        node.repeat = Some(LoopConfig {
            body: vec![body.clone()],
            until: Predicate { pointer: format!("/{body}/done"), op: PredicateOp::Exists, value: None },
            max_iterations: iterations,
        });
        conclave.nodes.push(node);
        conclave.nodes.push(Node { agent: Some(AgentConfig::new("instant")), ..Node::new(&body, NodeKind::Agent) });
        conclave.edges.push(Edge::new(&previous, &id));
        previous = id;
    }
    conclave
}

/// The median time of finding an agent's cached answer for a 100 KB input: its
/// cache key hashed and the store asked.
async fn cache_hits(providers: &ProviderRegistry, store: Arc<dyn RunStore>) -> Duration {
    let mut conclave = layered(2, 1);
    conclave.nodes[1].agent.as_mut().expect("agent").cache = Some(CacheSetting::On(true));
    let engine = Engine::new(providers.clone(), store.clone(), EngineConfig::default());
    let plan = engine.plan(&check(conclave), &RunOptions::default()).expect("plans");
    let agent = plan.nodes[1].agent.clone().expect("agent");
    let message: String = (0..100 * 1024).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
    let key = cache::agent_key(&agent, &message, &[]);
    let output = NodeOutput::Text("ok".into());
    store.cache_output(&key, &cache::entry(CacheSetting::On(true), &output, "r", "n1")).await.expect("stored");
    let mut times = Vec::new();
    for _ in 0..200 {
        let started = Instant::now();
        let key = cache::agent_key(&agent, &message, &[]);
        let hit = store.cached_output(&key, conclave_core::now_ms()).await.expect("read");
        times.push(started.elapsed());
        assert!(hit.is_some(), "a hit");
    }
    median(times)
}
