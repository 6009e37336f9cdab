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
//! under 100 ms), and `GET /api/conclaves` through `app()` in process with 200
//! conclaves in the catalog (copies of the repository's conclaves, saved an hour
//! before), one request at a time: the median and 95th percentile of a request's
//! time (target: at most 5 ms). Run with `cargo bench -p conclave-server --bench api`;
//! add `-- catalog`, `-- probe` or `-- guard` to run one part only.

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
/// How many conclaves the catalog benchmark lists, and how many requests it times.
const CATALOG_SIZE: usize = 200;
const CATALOG_REQUESTS: usize = 400;

/// Local probes measured, one at a time.
const PROBES: usize = 50;

fn state() -> AppState {
    state_with(ProviderRegistry::default())
}

fn state_with(providers: ProviderRegistry) -> AppState {
    let dir = std::env::temp_dir().join("conclave-api-bench");
    let workspace = Workspace::new(dir.join("conclaves"), SchemaCatalog::with_roots(vec![]), providers);
    let engine = Engine::new(ProviderRegistry::default(), Arc::new(MemoryStore::new()), EngineConfig::default());
    let security = Security {
        token: Some(Secret::new(TOKEN)),
        allowed_hosts: Vec::new(),
        repo_roots: vec![dir],
        allowed_programs: Vec::new(),
    };
    AppState::new(workspace, engine, security, EditorSource::embedded())
}

/// A state whose catalog holds [`CATALOG_SIZE`] conclaves: the repository's review
/// conclaves under new ids, so each is a realistic file with agents, prompts and
/// schema references to check.
fn catalog_state(dir: &std::path::Path) -> AppState {
    let catalog = dir.join("conclaves");
    std::fs::create_dir_all(&catalog).expect("catalog dir");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../conclaves");
    let sources: Vec<serde_json::Value> = ["light-code-review", "review-panel", "hello"]
        .iter()
        .map(|id| {
            let text =
                std::fs::read_to_string(root.join(format!("{id}.conclave.json"))).expect("a repository conclave");
            serde_json::from_str(&text).expect("JSON")
        })
        .collect();
    for i in 0..CATALOG_SIZE {
        let mut conclave = sources[i % sources.len()].clone();
        let id = format!("bench-{i:03}");
        conclave["id"] = serde_json::Value::String(id.clone());
        let text = serde_json::to_string_pretty(&conclave).expect("text");
        let path = catalog.join(format!("{id}.conclave.json"));
        std::fs::write(&path, text).expect("write a conclave");
        // A catalog at rest: the files were saved an hour ago, not this instant.
        let file = std::fs::OpenOptions::new().write(true).open(&path).expect("open");
        file.set_modified(std::time::SystemTime::now() - Duration::from_secs(3600)).expect("set its time");
    }
    // The workspace's own schema directory, empty as in this repository, is searched
    // before the built-in schemas.
    let schemas = catalog.join("schemas");
    std::fs::create_dir_all(&schemas).expect("schemas dir");
    let workspace = Workspace::new(
        catalog,
        SchemaCatalog::with_roots(vec![schemas]),
        conclave_providers::builtin(conclave_server::SECRET_VARIABLES),
    );
    let engine = Engine::new(ProviderRegistry::default(), Arc::new(MemoryStore::new()), EngineConfig::default());
    let security = Security {
        token: Some(Secret::new(TOKEN)),
        allowed_hosts: Vec::new(),
        repo_roots: vec![dir.to_path_buf()],
        allowed_programs: Vec::new(),
    };
    AppState::new(workspace, engine, security, EditorSource::embedded())
}

/// Times `GET /api/conclaves` through the whole app, one request at a time, and
/// prints the median and the 95th percentile.
async fn catalog_listing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let service = app(catalog_state(dir.path()));
    let list = || {
        let service = service.clone();
        async move {
            let request = Request::get("/api/conclaves")
                .header("host", "127.0.0.1:7700")
                .header("authorization", format!("Bearer {TOKEN}"))
                .body(Body::empty())
                .expect("request");
            let started = Instant::now();
            let response = service.oneshot(request).await.expect("response");
            assert!(response.status().is_success(), "{}", response.status());
            let body = axum::body::to_bytes(response.into_body(), usize::MAX).await.expect("body");
            let elapsed = started.elapsed();
            let listed: Vec<serde_json::Value> = serde_json::from_slice(&body).expect("a list");
            assert_eq!(listed.len(), CATALOG_SIZE);
            elapsed
        }
    };
    // The first requests fill whatever the server keeps between requests.
    for _ in 0..5 {
        list().await;
    }
    let mut times: Vec<f64> = Vec::with_capacity(CATALOG_REQUESTS);
    for _ in 0..CATALOG_REQUESTS {
        times.push(list().await.as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    let p95 = times[(times.len() * 95).div_ceil(100) - 1];
    println!(
        "GET /api/conclaves with {CATALOG_SIZE} conclaves, in process, {CATALOG_REQUESTS} requests one at a time:"
    );
    println!("  median {:.3} ms, p95 {p95:.3} ms (target: at most 5 ms)", median(times));
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
    let service = app(state_with(conclave_providers::builtin(conclave_server::SECRET_VARIABLES)));
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
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let wanted = |part: &str| args.is_empty() || args.iter().any(|a| a == part);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    runtime.block_on(async {
        if wanted("catalog") {
            catalog_listing().await;
        }
        if wanted("probe") {
            local_probe().await;
        }
        if !wanted("guard") {
            return;
        }
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
