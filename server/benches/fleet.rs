//! The run queue at scale, and live events across server instances.
//!
//! Run with `cargo bench -p conclave-server --bench fleet`. Two measurements:
//!
//! - **Throughput:** 200 runs of a 5-node review-shaped conclave (a trigger, three
//!   reviewers in parallel, a Writer after them) on a provider that answers after
//!   100 ms are queued, then worked by 1, 2 and 4 in-process workers taking 4 runs at
//!   once each (`conclave worker`'s default). The ideal is the critical path (two
//!   calls, 200 ms) times the waves the limits allow (200 runs / (workers × 4)). On
//!   SQLite always, and on PostgreSQL when a database is given.
//! - **SSE fan-out** (PostgreSQL only): a worker on one store runs runs whose agents
//!   stream text, while clients follow every run over SSE through a server on another
//!   store (its own pool and LISTEN connection), as a second instance would. The
//!   latency of each event is from its creation on the worker (`at_ms`, before its
//!   commit, so an upper bound of commit-to-arrival) to its arrival at the client.
//!
//! - **Cancel** (PostgreSQL only): runs on the worker are cancelled through the other
//!   instance's API; the time from the request to the run's end in the store.
//! - **`conclave serve`:** the same 200 runs POSTed at once to the real binary's API
//!   (`conclave serve --workers 64`), its agents on the `openai` provider pointed at
//!   a fake OpenAI-compatible server on loopback that answers every call after
//!   100 ms, with `--max-concurrency` 16 (the value `serve` had built in) and 256. The
//!   ideal is the critical path (200 ms) times the waves 64 runs at a time take:
//!   ceil(200 / 64) × 0.2 s = 0.8 s. `cargo bench --bench fleet -- serve` runs only
//!   this one.
//!
//! PostgreSQL is measured when `CONCLAVE_BENCH_POSTGRES_URL` (or
//! `CONCLAVE_TEST_POSTGRES_URL`) names a database (`bash scripts/postgres.sh start
//! DIR` prints one).

use async_trait::async_trait;
use conclave_catalog::CatalogContext;
use conclave_core::{
    AgentReply, AgentRequest, Capabilities, NewRun, Provider, ProviderError, ProviderRegistry, RunQueue, Secret,
    StreamSink, now_ms,
};
use conclave_engine::{Engine, EngineConfig};
use conclave_schema::SchemaCatalog;
use conclave_server::Workspace;
use conclave_server::api::{AppState, EditorSource, Security, app};
use conclave_server::worker::{Worker, WorkerConfig};
use conclave_shared::{AgentConfig, Conclave, Edge, Node, NodeKind, Settings};
use conclave_store::{PostgresStore, SqliteStore};
use conclave_testkit::answers::chat_completion_answer;
use conclave_testkit::{FakeServer, Reply};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

const RUNS: usize = 200;
const CALL: Duration = Duration::from_millis(100);
const RUNS_PER_WORKER: usize = 4;
const TOKEN: &str = "bench-token-0123456789abcdef0123456789abcdef";

/// Answers after `pause`, streaming its answer in `pieces` pieces over it.
#[derive(Debug)]
struct PausingProvider {
    pieces: usize,
    pause: Duration,
}

#[async_trait]
impl Provider for PausingProvider {
    fn name(&self) -> &str {
        "pausing"
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities { native_schema: None, tools: false, context_window: None }
    }
    fn default_model(&self) -> &str {
        ""
    }
    async fn call(&self, _request: &AgentRequest, stream: &dyn StreamSink) -> Result<AgentReply, ProviderError> {
        let pieces = self.pieces.max(1);
        for _ in 0..pieces {
            tokio::time::sleep(self.pause / pieces as u32).await;
            if self.pieces > 0 {
                stream.text("a piece of the answer ").await;
            }
        }
        Ok(AgentReply::text("done", Default::default()))
    }
}

/// Trigger → security, correctness, conventions → writer.
fn review_shaped() -> Conclave {
    let node = |id: &str, kind: NodeKind| Node {
        agent: (kind == NodeKind::Agent).then(|| AgentConfig::new("pausing")),
        ..Node::new(id, kind)
    };
    let lanes = ["security", "correctness", "conventions"];
    let mut nodes = vec![node("change", NodeKind::Trigger)];
    nodes.extend(lanes.iter().map(|l| node(l, NodeKind::Agent)));
    nodes.push(node("writer", NodeKind::Agent));
    let mut edges: Vec<Edge> =
        lanes.iter().map(|l| Edge { from: "change".into(), to: (*l).into(), case: None }).collect();
    edges.extend(lanes.iter().map(|l| Edge { from: (*l).into(), to: "writer".into(), case: None }));
    Conclave {
        version: 1,
        id: "review-shaped".into(),
        name: "Review-shaped".into(),
        description: String::new(),
        settings: Settings::default(),
        nodes,
        edges,
    }
}

fn context() -> CatalogContext {
    let mut context = conclave_testkit::test_catalog();
    context.providers.push("pausing".into());
    context
}

fn postgres_url() -> Option<String> {
    std::env::var("CONCLAVE_BENCH_POSTGRES_URL").or_else(|_| std::env::var("CONCLAVE_TEST_POSTGRES_URL")).ok()
}

/// Starts `count` workers on `queue` with a provider streaming `pieces` pieces over
/// `pause`.
fn start_workers(
    queue: &Arc<dyn RunQueue>,
    count: usize,
    (pieces, pause): (usize, Duration),
    tag: &str,
) -> CancellationToken {
    let shutdown = CancellationToken::new();
    for w in 0..count {
        let mut providers = ProviderRegistry::default();
        providers.register(Arc::new(PausingProvider { pieces, pause }));
        let engine = Engine::new(providers, queue.clone(), EngineConfig { max_concurrency: 16, ..Default::default() });
        let config = WorkerConfig {
            id: format!("bench-{tag}-{w}"),
            lease: Duration::from_secs(30),
            idle: Duration::from_millis(10),
            max_runs: RUNS_PER_WORKER,
        };
        tokio::spawn(Worker::new(queue.clone(), engine, context(), config).work(shutdown.clone()));
    }
    shutdown
}

/// Queues `count` runs; their ids.
async fn enqueue(queue: &Arc<dyn RunQueue>, count: usize, tag: &str) -> Vec<String> {
    let mut ids = Vec::with_capacity(count);
    for i in 0..count {
        let id = format!("{tag}-{i}-{}", now_ms());
        let run = NewRun {
            id: id.clone(),
            conclave: review_shaped(),
            input: json!({"n": i}),
            created_ms: now_ms(),
            owner: "bench".into(),
        };
        queue.enqueue(&run, &json!({"kind": "run"})).await.expect("enqueue");
        ids.push(id);
    }
    ids
}

/// Waits until every run in `ids` has ended with `status`.
async fn all_ended(queue: &Arc<dyn RunQueue>, ids: &[String], status: &str) {
    for id in ids {
        loop {
            let run = queue.get_run(id).await.expect("read").expect("the run exists");
            if run.summary.status.is_terminal() {
                assert_eq!(run.summary.status.as_str(), status, "run {id}: {:?}", run.summary.error);
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

async fn throughput(store: &str, queue: Arc<dyn RunQueue>) {
    for workers in [1usize, 2, 4] {
        let tag = format!("{store}-w{workers}");
        let ids = enqueue(&queue, RUNS, &tag).await;
        let started = Instant::now();
        let shutdown = start_workers(&queue, workers, (0, CALL), &tag);
        all_ended(&queue, &ids, "succeeded").await;
        let took = started.elapsed();
        shutdown.cancel();
        let waves = RUNS.div_ceil(workers * RUNS_PER_WORKER);
        let ideal = 2 * CALL * waves as u32;
        println!(
            "{store:<8} {workers:>7} {waves:>6} {:>9.2}s {:>9.2}s {:>8.2}×",
            ideal.as_secs_f64(),
            took.as_secs_f64(),
            took.as_secs_f64() / ideal.as_secs_f64()
        );
        // Let the stopped workers' last renewals and releases land.
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Follows a run over SSE through `base`; the latency of each event, in ms.
async fn follow(client: reqwest::Client, base: String, id: String) -> Vec<u64> {
    let url = format!("{base}/api/runs/{id}/events");
    let mut response = client.get(url).bearer_auth(TOKEN).send().await.expect("the server answers");
    let (mut pending, mut latencies) = (String::new(), Vec::new());
    while let Some(chunk) = response.chunk().await.expect("the stream holds") {
        let arrived = now_ms();
        pending.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = pending.find('\n') {
            let line: String = pending.drain(..=end).collect();
            if let Some(data) = line.strip_prefix("data:") {
                let event: serde_json::Value = serde_json::from_str(data.trim()).expect("an event");
                latencies.push(arrived.saturating_sub(event["at_ms"].as_u64().unwrap_or(arrived)));
            }
        }
    }
    latencies
}

async fn fan_out(url: &str) -> (Arc<dyn RunQueue>, String) {
    let worker_side: Arc<dyn RunQueue> = Arc::new(PostgresStore::connect(url).await.expect("connect"));
    let server_side: Arc<dyn RunQueue> = Arc::new(PostgresStore::connect(url).await.expect("connect"));
    let workspace = Workspace::new(
        std::env::temp_dir().join("conclave-fleet-bench"),
        SchemaCatalog::with_roots(vec![]),
        ProviderRegistry::default(),
    );
    let engine = Engine::new(ProviderRegistry::default(), server_side.clone(), EngineConfig::default());
    let security = Security {
        token: Some(Secret::new(TOKEN)),
        allowed_hosts: Vec::new(),
        repo_roots: Vec::new(),
        allowed_programs: Vec::new(),
    };
    let state = AppState::new(workspace, engine, security, EditorSource::embedded()).with_queue(server_side);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move {
        axum::serve(listener, axum::ServiceExt::<axum::http::Request<axum::body::Body>>::into_make_service(app(state)))
            .await
    });

    let ids = enqueue(&worker_side, 40, "fan-out").await;
    let client = reqwest::Client::new();
    let followers: Vec<_> =
        ids.iter().map(|id| tokio::spawn(follow(client.clone(), base.clone(), id.clone()))).collect();
    // The followers are connected and waiting before any run starts.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let shutdown = start_workers(&worker_side, 2, (10, CALL), "fan-out");
    let mut latencies = Vec::new();
    for follower in followers {
        latencies.extend(follower.await.expect("follower"));
    }
    shutdown.cancel();
    latencies.sort_unstable();
    let at = |q: f64| latencies[((latencies.len() - 1) as f64 * q).round() as usize];
    println!(
        "{} events of {} runs: p50 {} ms, p99 {} ms, max {} ms",
        latencies.len(),
        ids.len(),
        at(0.5),
        at(0.99),
        latencies.last().copied().unwrap_or(0)
    );
    (worker_side, base)
}

/// Cancels runs on a worker through the other instance's API; how long until each
/// run ended, in ms.
async fn cancels(worker_side: Arc<dyn RunQueue>, base: &str) {
    let ids = enqueue(&worker_side, 10, "cancel").await;
    let shutdown = start_workers(&worker_side, 2, (1, Duration::from_secs(60)), "cancel");
    let client = reqwest::Client::new();
    let mut took = Vec::new();
    for id in &ids {
        while worker_side.get_run(id).await.expect("read").expect("run").summary.status.as_str() != "running" {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let asked = Instant::now();
        let url = format!("{base}/api/runs/{id}/cancel");
        let answer = client.post(url).bearer_auth(TOKEN).json(&json!({})).send().await.expect("answers");
        assert_eq!(answer.status().as_u16(), 202);
        all_ended(&worker_side, std::slice::from_ref(id), "cancelled").await;
        took.push(asked.elapsed().as_millis() as u64);
    }
    shutdown.cancel();
    took.sort_unstable();
    println!(
        "cancels of {} runs through the other instance: median {} ms, max {} ms",
        took.len(),
        took[took.len() / 2],
        took.last().copied().unwrap_or(0)
    );
}

/// Answers a Chat Completions call after the bench's provider time.
fn answer_after_a_while(request: &serde_json::Value) -> Reply {
    Reply::After { millis: CALL.as_millis() as u64, reply: Box::new(chat_completion_answer(request)) }
}

/// `conclave serve` in `dir` with these arguments, its agents' `openai` provider at
/// `base`; killed when dropped.
struct Served(std::process::Child, String);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn serve(dir: &std::path::Path, base: &str, args: &[&str]) -> Served {
    use std::io::BufRead;
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_conclave"))
        .args(["serve", "--bind", &format!("127.0.0.1:{port}")])
        .args(args)
        .current_dir(dir)
        .env("CONCLAVE_DB", dir.join("runs.db"))
        .env("CONCLAVE_TOKEN", TOKEN)
        .env("OPENAI_BASE_URL", format!("{base}/v1"))
        .env("OPENAI_API_KEY", "sk-bench")
        .env_remove("CONCLAVE_PROVIDER_LIMITS")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("conclave serve starts");
    let mut stderr = std::io::BufReader::new(child.stderr.take().expect("stderr"));
    let mut line = String::new();
    while !line.contains("serving on") {
        line.clear();
        assert!(stderr.read_line(&mut line).expect("read") > 0, "serve printed no URL");
    }
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    Served(child, format!("http://127.0.0.1:{port}"))
}

/// 200 runs POSTed at once to `conclave serve --workers 64 --max-concurrency
/// {max_concurrency}`; the time from the first POST until every run has ended.
async fn serve_throughput(max_concurrency: u16) -> Duration {
    let fake = FakeServer::start_responding(answer_after_a_while).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut conclave = review_shaped();
    for node in conclave.nodes.iter_mut().filter_map(|n| n.agent.as_mut()) {
        (node.provider, node.model) = ("openai".into(), "bench-model".into());
    }
    std::fs::create_dir_all(dir.path().join("conclaves")).expect("mkdir");
    let file = dir.path().join("conclaves/review-shaped.conclave.json");
    std::fs::write(file, serde_json::to_string_pretty(&conclave).expect("json")).expect("write");
    let concurrency = max_concurrency.to_string();
    let server = serve(dir.path(), &fake.base, &["--workers", "64", "--max-concurrency", &concurrency]);
    let client = reqwest::Client::new();
    let started = Instant::now();
    let posts = (0..RUNS).map(|i| {
        let request = client.post(format!("{}/api/runs", server.1)).bearer_auth(TOKEN);
        async move {
            let answer = request.json(&json!({"conclave_id": "review-shaped", "input": format!("change {i}")})).send();
            let body: serde_json::Value = answer.await.expect("POST").json().await.expect("JSON");
            body["run_id"].as_str().expect("a run id").to_string()
        }
    });
    let ids: std::collections::HashSet<String> = futures::future::join_all(posts).await.into_iter().collect();
    loop {
        let url = format!("{}/api/runs?limit=1000", server.1);
        let runs: Vec<serde_json::Value> =
            client.get(url).bearer_auth(TOKEN).send().await.expect("GET").json().await.expect("JSON");
        let ended: Vec<&serde_json::Value> = runs
            .iter()
            .filter(|r| ids.contains(r["id"].as_str().unwrap_or("")))
            .filter(|r| !matches!(r["status"].as_str(), Some("queued" | "running")))
            .collect();
        if ended.len() == ids.len() {
            let failed = ended.iter().filter(|r| r["status"] != "succeeded").count();
            assert_eq!(failed, 0, "every run succeeds: {:?}", ended.iter().find(|r| r["status"] != "succeeded"));
            return started.elapsed();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn serve_figures() {
    let ideal = 2 * CALL * RUNS.div_ceil(64) as u32;
    println!(
        "\n`conclave serve --workers 64`: {RUNS} runs of 5 nodes POSTed at once, a {} ms provider",
        CALL.as_millis()
    );
    println!("{:>15} {:>10} {:>10} {:>9}", "max-concurrency", "ideal", "wall", "ratio");
    for max_concurrency in [16u16, 256] {
        let took = serve_throughput(max_concurrency).await;
        println!(
            "{max_concurrency:>15} {:>9.2}s {:>9.2}s {:>8.2}×",
            ideal.as_secs_f64(),
            took.as_secs_f64(),
            took.as_secs_f64() / ideal.as_secs_f64()
        );
    }
}

fn main() {
    if std::env::args().any(|a| a == "serve") {
        let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
        return runtime.block_on(serve_figures());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let dir = tempfile::tempdir().expect("tempdir");
    println!(
        "Throughput: {RUNS} runs of 5 nodes, a {} ms provider, {RUNS_PER_WORKER} runs per worker",
        CALL.as_millis()
    );
    println!("{:<8} {:>7} {:>6} {:>10} {:>10} {:>9}", "store", "workers", "waves", "ideal", "wall", "ratio");
    runtime.block_on(async {
        let sqlite: Arc<dyn RunQueue> = Arc::new(SqliteStore::open(&dir.path().join("fleet.db")).expect("open"));
        throughput("sqlite", sqlite).await;
        match postgres_url() {
            Some(url) => {
                let postgres: Arc<dyn RunQueue> = Arc::new(PostgresStore::connect(&url).await.expect("connect"));
                throughput("postgres", postgres).await;
                println!("\nSSE fan-out from a worker on one store to clients of a server on another:");
                let (worker_side, base) = fan_out(&url).await;
                cancels(worker_side, &base).await;
            }
            None => println!("\npostgres: skipped; set CONCLAVE_BENCH_POSTGRES_URL"),
        }
        serve_figures().await;
    });
}
