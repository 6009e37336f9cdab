//! What the request guard costs on `GET /api/runs` (Host, Origin, token and
//! content-type checks), measured two ways, each in alternating paired rounds of
//! the whole app against the same routes without the guard:
//!
//! - in process: requests driven through the router with `tower`'s `oneshot`, one
//!   at a time, so the figure is the server's own work per request;
//! - over HTTP on loopback: 8 keep-alive clients at once, end to end, which on a
//!   shared 2-core machine is noisier.
//!
//! The cost is the median over rounds of (without − with) / without, in requests
//! per second. Also the time of `POST /api/providers/local/probe` through the app,
//! which answers the embedded model's dialect without loading the model (target:
//! under 100 ms). Run with `cargo bench -p conclave-server --bench api`.

use axum::body::Body;
use axum::http::Request;
use conclave_core::{ProviderRegistry, Secret};
use conclave_doubles::MemoryStore;
use conclave_engine::{Engine, EngineConfig};
use conclave_schema::SchemaCatalog;
use conclave_server::Workspace;
use conclave_server::api::{AppState, EditorSource, Security, app, unguarded};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tower::ServiceExt;

const CLIENTS: usize = 8;
const ROUND: Duration = Duration::from_secs(1);
const ROUNDS: usize = 15;
const TOKEN: &str = "bench-token-0123456789abcdef0123456789abcdef";

/// Local probes measured, one at a time.
const PROBES: usize = 50;

fn state() -> AppState {
    state_with(ProviderRegistry::default())
}

fn state_with(providers: ProviderRegistry) -> AppState {
    let dir = std::env::temp_dir().join("conclave-api-bench");
    let workspace = Workspace::new(dir.join("conclaves"), SchemaCatalog::with_roots(vec![]), providers);
    let engine = Engine::new(ProviderRegistry::default(), Arc::new(MemoryStore::new()), EngineConfig::default());
    let security = Security { token: Some(Secret::new(TOKEN)), allowed_hosts: Vec::new(), repo_roots: vec![dir] };
    AppState::new(workspace, engine, security, EditorSource::embedded())
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// Requests per second through the router in process, one request at a time.
async fn in_process_round<S>(service: &S) -> f64
where
    S: tower::Service<Request<Body>, Response = axum::response::Response, Error = std::convert::Infallible> + Clone,
{
    let deadline = Instant::now() + ROUND;
    let mut done = 0u64;
    while Instant::now() < deadline {
        let request = Request::get("/api/runs")
            .header("host", "127.0.0.1:7700")
            .header("origin", "http://127.0.0.1:7700")
            .header("authorization", format!("Bearer {TOKEN}"))
            .body(Body::empty())
            .expect("request");
        let response = service.clone().oneshot(request).await.expect("response");
        assert!(response.status().is_success(), "{}", response.status());
        let _ = axum::body::to_bytes(response.into_body(), usize::MAX).await;
        done += 1;
    }
    done as f64 / ROUND.as_secs_f64()
}

async fn serve<S>(service: S) -> String
where
    S: tower::Service<Request<Body>, Response = axum::response::Response, Error = std::convert::Infallible>,
    S: Clone + Send + Sync + 'static,
    S::Future: Send,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, axum::ServiceExt::into_make_service(service)).await });
    base
}

/// Requests per second over HTTP, `CLIENTS` keep-alive clients at once.
async fn http_round(base: &str) -> f64 {
    let done = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + ROUND;
    let tasks: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (done, url) = (done.clone(), format!("{base}/api/runs"));
            tokio::spawn(async move {
                let client = reqwest::Client::new();
                while Instant::now() < deadline {
                    let response = client.get(&url).bearer_auth(TOKEN).send().await.expect("request");
                    assert!(response.status().is_success(), "{}", response.status());
                    let _ = response.bytes().await;
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("client");
    }
    done.load(Ordering::Relaxed) as f64 / ROUND.as_secs_f64()
}

/// Alternating rounds with and without the guard; prints the medians and the cost.
async fn compare<F, Fut>(what: &str, mut round: F)
where
    F: FnMut(bool) -> Fut,
    Fut: Future<Output = f64>,
{
    round(true).await; // warm-up
    round(false).await;
    let (mut with, mut without, mut costs) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..ROUNDS {
        // Alternate which goes first, so drift in the machine's load hits both.
        let (w, wo) = if i % 2 == 0 {
            let w = round(true).await;
            (w, round(false).await)
        } else {
            let wo = round(false).await;
            (round(true).await, wo)
        };
        with.push(w);
        without.push(wo);
        costs.push((wo - w) / wo * 100.0);
    }
    println!("{what}, {ROUNDS} paired rounds of {}s:", ROUND.as_secs());
    println!("  with the guard:    median {:>7.0} req/s", median(with));
    println!("  without the guard: median {:>7.0} req/s", median(without));
    println!("  cost of the checks: median {:.1}% (target: under 5%)", median(costs));
}

/// `POST /api/providers/local/probe` through the guarded app, one at a time, with the
/// built-in providers as `conclave serve` has them.
async fn local_probe() {
    let service = app(state_with(conclave_providers::builtin()));
    let mut millis = Vec::new();
    let mut answer = String::new();
    for _ in 0..PROBES {
        let request = Request::post("/api/providers/local/probe")
            .header("host", "127.0.0.1:7700")
            .header("origin", "http://127.0.0.1:7700")
            .header("authorization", format!("Bearer {TOKEN}"))
            .header("content-type", "application/json")
            .body(Body::from("{}"))
            .expect("request");
        let started = Instant::now();
        let response = service.clone().oneshot(request).await.expect("response");
        assert!(response.status().is_success(), "{}", response.status());
        let body = axum::body::to_bytes(response.into_body(), usize::MAX).await.expect("body");
        millis.push(started.elapsed().as_secs_f64() * 1000.0);
        answer = String::from_utf8_lossy(&body).into_owned();
    }
    let slowest = millis.iter().copied().fold(0.0, f64::max);
    println!("POST /api/providers/local/probe in process, {PROBES} requests one at a time:");
    println!("  median {:.2} ms, slowest {slowest:.2} ms (target: under 100 ms)", median(millis));
    println!("  answer: {answer}");
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    runtime.block_on(async {
        local_probe().await;
        let (guarded, bare) = (app(state()), unguarded(state()));
        compare("GET /api/runs in process, one at a time", |guard| {
            let (guarded, bare) = (guarded.clone(), bare.clone());
            async move { if guard { in_process_round(&guarded).await } else { in_process_round(&bare).await } }
        })
        .await;
        let (guarded, bare) = (serve(app(state())).await, serve(unguarded(state())).await);
        compare(&format!("GET /api/runs over HTTP on loopback, {CLIENTS} clients"), |guard| {
            let base = if guard { guarded.clone() } else { bare.clone() };
            async move { http_round(&base).await }
        })
        .await;
    });
}
