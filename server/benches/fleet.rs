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
//! - **`conclave serve`:** the same 200 runs POSTed at once to the real binary's API,
//!   its agents on the `anthropic` provider (which caches prompts, so sibling agents
//!   would wait for a leader if their shared prefix were long enough to cache; here
//!   it is a few hundred tokens, so they start together) pointed at a fake on
//!   loopback that answers every call after 100 ms, with `--workers 4` and
//!   `--workers 64 --max-concurrency 256`. The ideal is the critical path (200 ms)
//!   times the waves the workers take: ceil(200 / workers) × 0.2 s.
//! - **The run path:** 100 runs one after another through `conclave serve --workers
//!   1` against a provider that answers at once, each timed from its POST (created,
//!   planned, queued) through the worker (five nodes run, every event stored) to
//!   the end of its SSE stream: what a run costs beyond its provider calls.
//!   `cargo bench --bench fleet -- serve` runs only these two.
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
use conclave_testkit::wire::Vendor;
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

/// Answers an Anthropic Messages call after the bench's provider time.
fn anthropic_after_a_while(_request: &serde_json::Value) -> Reply {
    Reply::After { millis: CALL.as_millis() as u64, reply: Box::new(Vendor::Anthropic.answer("done")) }
}

/// Answers an Anthropic Messages call at once.
fn anthropic_at_once(_request: &serde_json::Value) -> Reply {
    Vendor::Anthropic.answer("done")
}

/// `conclave serve` in `dir` with these arguments, its agents' `anthropic` provider
/// at `base`; killed when dropped.
struct Served(std::process::Child, String);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `conclave serve` in `dir` (with the review-shaped conclave on the
/// `anthropic` provider, which caches prompts, in its catalog) against `base`.
fn serve(dir: &std::path::Path, base: &str, args: &[&str]) -> Served {
    use std::io::BufRead;
    let mut conclave = review_shaped();
    for node in conclave.nodes.iter_mut().filter_map(|n| n.agent.as_mut()) {
        (node.provider, node.model) = ("anthropic".into(), "claude-sonnet-4-5".into());
    }
    std::fs::create_dir_all(dir.join("conclaves")).expect("mkdir");
    let file = dir.join("conclaves/review-shaped.conclave.json");
    std::fs::write(file, serde_json::to_string_pretty(&conclave).expect("json")).expect("write");
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_conclave"))
        .args(["serve", "--bind", &format!("127.0.0.1:{port}")])
        .args(args)
        .current_dir(dir)
        .env("CONCLAVE_DB", dir.join("runs.db"))
        .env("CONCLAVE_TOKEN", TOKEN)
        .env("ANTHROPIC_BASE_URL", base)
        .env("ANTHROPIC_API_KEY", "sk-ant-bench")
        .env_remove("CONCLAVE_PROVIDER_LIMITS")
        .env_remove("CONCLAVE_PROMPT_CACHE")
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

/// POSTs one run of the review-shaped conclave; its id.
async fn post_run(client: &reqwest::Client, server: &Served, i: usize) -> String {
    let request = client.post(format!("{}/api/runs", server.1)).bearer_auth(TOKEN);
    let answer = request.json(&json!({"conclave_id": "review-shaped", "input": format!("change {i}")})).send();
    let body: serde_json::Value = answer.await.expect("POST").json().await.expect("JSON");
    body["run_id"].as_str().expect("a run id").to_string()
}

/// Where the time of [`serve_throughput`] went.
struct Spent {
    /// From the first POST until the last run ended (its `finished_ms`).
    wall: Duration,
    /// Until every POST was answered.
    posting: Duration,
    /// Each run's time from its creation to its end, in ms, sorted.
    runs: Vec<u64>,
}

/// 200 runs POSTed at once to `conclave serve ARGS`; where the time went. The runs'
/// end is read from their `finished_ms`, and the listing that reads it is asked for
/// only every [`LOOK`]: a listing of every run 100 times a second would itself load
/// the server the figure is of.
async fn serve_throughput(args: &[&str]) -> Spent {
    let fake = FakeServer::start_responding(anthropic_after_a_while).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let server = serve(dir.path(), &fake.base, args);
    let client = reqwest::Client::new();
    let (started, started_ms) = (Instant::now(), now_ms());
    let posts = (0..RUNS).map(|i| post_run(&client, &server, i));
    let ids: std::collections::HashSet<String> = futures::future::join_all(posts).await.into_iter().collect();
    let posting = started.elapsed();
    loop {
        tokio::time::sleep(LOOK).await;
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
            let finished = |r: &&serde_json::Value| r["finished_ms"].as_u64().unwrap_or(0);
            let last = ended.iter().map(finished).max().unwrap_or(started_ms);
            let wall = Duration::from_millis(last.saturating_sub(started_ms));
            let took = |r: &&serde_json::Value| finished(r).saturating_sub(r["created_ms"].as_u64().unwrap_or(0));
            let mut runs: Vec<u64> = ended.iter().map(took).collect();
            runs.sort_unstable();
            return Spent { wall, posting, runs };
        }
    }
}

/// How often [`serve_throughput`] looks whether every run ended.
const LOOK: Duration = Duration::from_millis(250);

/// The whole run path through `conclave serve --workers 1` against a provider that
/// answers at once: each of `count` runs POSTed (created, planned and queued), taken
/// by the embedded worker, its five nodes run and stored, and followed over SSE to
/// its end, one after another. The time of each, and where it went.
async fn run_path(count: usize) -> Vec<PathSpent> {
    let fake = FakeServer::start_responding(anthropic_at_once).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let server = serve(dir.path(), &fake.base, &["--workers", "1"]);
    let client = reqwest::Client::new();
    let mut took = Vec::with_capacity(count);
    for i in 0..count {
        let started = Instant::now();
        let id = post_run(&client, &server, i).await;
        let posted = started.elapsed();
        let events = client.get(format!("{}/api/runs/{id}/events", server.1)).bearer_auth(TOKEN).send();
        let text = events.await.expect("GET events").text().await.expect("the stream to its end");
        let (whole, streamed_ms) = (started.elapsed(), now_ms());
        assert!(text.contains("run_finished"), "run {id} ended: {text}");
        let run: serde_json::Value = client
            .get(format!("{}/api/runs/{id}", server.1))
            .bearer_auth(TOKEN)
            .send()
            .await
            .expect("GET")
            .json()
            .await
            .expect("JSON");
        let created_ms = run["created_ms"].as_u64().expect("created_ms");
        took.push(PathSpent::of(&text, whole, posted, created_ms, streamed_ms));
    }
    took
}

/// Where one run's time went on the run path, in ms, from its events' times.
#[derive(Debug, Clone, Copy)]
struct PathSpent {
    /// The whole: from the POST to the end of the SSE stream.
    whole: f64,
    /// The POST answered (the run created, planned and queued).
    post: f64,
    /// From the run's creation to its first `node_started` (claimed, prepared, started).
    start: f64,
    /// From the first `node_started` to the last `node_completed`.
    nodes: f64,
    /// From the last `node_completed` to `run_finished`.
    finish: f64,
    /// From `run_finished` to the stream's end at the client.
    stream: f64,
}

impl PathSpent {
    /// Reads the events of an SSE stream's text.
    fn of(text: &str, whole: Duration, posted: Duration, created_ms: u64, streamed_ms: u64) -> PathSpent {
        let events: Vec<serde_json::Value> = text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str(d.trim()).ok())
            .collect();
        let times = |kind: &str| -> Vec<u64> {
            events.iter().filter(|e| e["type"] == kind).filter_map(|e| e["at_ms"].as_u64()).collect()
        };
        let first = |kind: &str| times(kind).into_iter().min().unwrap_or_else(|| panic!("no {kind} in {text}"));
        let last = |kind: &str| times(kind).into_iter().max().unwrap_or_else(|| panic!("no {kind} in {text}"));
        let (started, nodes_done, finished) = (first("node_started"), last("node_completed"), last("run_finished"));
        let gap = |from: u64, to: u64| to.saturating_sub(from) as f64;
        PathSpent {
            whole: whole.as_secs_f64() * 1e3,
            post: posted.as_secs_f64() * 1e3,
            start: gap(created_ms, started),
            nodes: gap(started, nodes_done),
            finish: gap(nodes_done, finished),
            stream: gap(finished, streamed_ms),
        }
    }
}

/// The median of one part of the run path's runs.
fn median(spent: &[PathSpent], part: fn(&PathSpent) -> f64) -> f64 {
    let mut values: Vec<f64> = spent.iter().map(part).collect();
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

async fn serve_figures() {
    println!("\n`conclave serve`: {RUNS} runs of 5 nodes POSTed at once, a {} ms Anthropic provider", CALL.as_millis());
    println!(
        "{:>8} {:>16} {:>10} {:>10} {:>9} {:>9} {:>14}",
        "workers", "max-concurrency", "ideal", "wall", "ratio", "posting", "run p50 / p90"
    );
    for (workers, concurrency) in [(4u16, 16u16), (64, 256)] {
        let (w, c) = (workers.to_string(), concurrency.to_string());
        let spent = serve_throughput(&["--workers", &w, "--max-concurrency", &c]).await;
        let ideal = 2 * CALL * RUNS.div_ceil(usize::from(workers)) as u32;
        let (wall, ideal_s) = (spent.wall.as_secs_f64(), ideal.as_secs_f64());
        let (p50, p90) = (spent.runs[spent.runs.len() / 2], spent.runs[spent.runs.len() * 9 / 10]);
        println!(
            "{workers:>8} {concurrency:>16} {ideal_s:>9.2}s {wall:>9.2}s {:>8.2}× {:>8.2}s {:>6} / {} ms",
            wall / ideal_s,
            spent.posting.as_secs_f64(),
            p50,
            p90
        );
    }
    println!("(run: from its creation by the POST to its end, queueing included)");
    let path = run_path(100).await;
    let p90 = {
        let mut whole: Vec<f64> = path.iter().map(|p| p.whole).collect();
        whole.sort_by(f64::total_cmp);
        whole[whole.len() * 9 / 10]
    };
    println!(
        "\nrun path through `conclave serve --workers 1`, an instant provider, 100 runs one at a time \
         (POST, queue, worker, 5 nodes, store, SSE to the end): median {:.1} ms, p90 {p90:.1} ms",
        median(&path, |p| p.whole)
    );
    println!(
        "medians of its parts: POST answered {:.1} ms; created to the first node_started {:.0} ms; to the last \
         node_completed {:.0} ms; to run_finished {:.0} ms; run_finished to the stream's end {:.0} ms",
        median(&path, |p| p.post),
        median(&path, |p| p.start),
        median(&path, |p| p.nodes),
        median(&path, |p| p.finish),
        median(&path, |p| p.stream)
    );
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
