//! What the request guard costs: requests per second of `GET /api/runs` over HTTP on
//! loopback, through the whole app (Host, Origin, token and content-type checks)
//! and through the same routes without the guard, in alternating rounds.
//!
//! Run with `cargo bench -p conclave-server --bench api`.

use conclave_core::testing::MemoryStore;
use conclave_core::{ProviderRegistry, Secret};
use conclave_engine::{Engine, EngineConfig};
use conclave_schema::SchemaCatalog;
use conclave_server::Workspace;
use conclave_server::api::{AppState, Security, app, unguarded};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const CLIENTS: usize = 8;
const ROUND: Duration = Duration::from_secs(3);
const ROUNDS: usize = 5;
const TOKEN: &str = "bench-token-0123456789abcdef0123456789abcdef";

async fn serve(router: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, router).await });
    base
}

/// Requests per second over one round, `CLIENTS` keep-alive clients at once.
async fn round(base: &str) -> f64 {
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

fn state() -> AppState {
    let dir = std::env::temp_dir().join("conclave-api-bench");
    let workspace =
        Workspace::new(dir.join("conclaves"), SchemaCatalog::with_roots(vec![]), ProviderRegistry::default());
    let engine = Engine::new(ProviderRegistry::default(), Arc::new(MemoryStore::new()), EngineConfig::default());
    let security = Security { token: Some(Secret::new(TOKEN)), allowed_hosts: Vec::new(), repo_roots: vec![dir] };
    AppState::new(workspace, engine, security, None)
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    runtime.block_on(async {
        let guarded = serve(app(state())).await;
        let bare = serve(unguarded(state())).await;
        round(&guarded).await; // warm-up
        round(&bare).await;
        let (mut with, mut without) = (Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            with.push(round(&guarded).await);
            without.push(round(&bare).await);
        }
        let (w, wo) = (median(with.clone()), median(without.clone()));
        println!("GET /api/runs, {CLIENTS} clients, {ROUNDS} rounds of {}s each", ROUND.as_secs());
        println!("with the guard:    median {w:.0} req/s (rounds: {with:.0?})");
        println!("without the guard: median {wo:.0} req/s (rounds: {without:.0?})");
        println!("cost of the checks: {:.1}%", (wo - w) / wo * 100.0);
    });
}
