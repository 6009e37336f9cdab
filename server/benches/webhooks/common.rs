//! What both webhook measurements share: the server's state, a delivery's body as
//! GitHub sends one, POSTing it signed, and printing the figures.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use conclave_core::{ProviderRegistry, RunStore, Secret};
use conclave_engine::{Engine, EngineConfig};
use conclave_schema::SchemaCatalog;
use conclave_server::Workspace;
use conclave_server::api::webhooks::settings::Webhooks;
use conclave_server::api::webhooks::signature::github_signature;
use conclave_server::api::{AppState, EditorSource, Security, app};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tower::ServiceExt;

/// Deliveries per measurement.
pub(crate) const DELIVERIES: usize = 1000;
/// Clients at once in the concurrent measurement.
pub(crate) const CLIENTS: usize = 8;
/// The webhook secret deliveries are signed with.
pub(crate) const SECRET: &str = "bench-webhook-secret-0123456789";

/// A server's state over `store`, receiving GitHub webhooks.
pub(crate) fn state(store: Arc<dyn RunStore>) -> AppState {
    let dir = std::env::temp_dir().join("conclave-webhooks-bench");
    let workspace =
        Workspace::new(dir.join("conclaves"), SchemaCatalog::with_roots(vec![]), ProviderRegistry::default());
    let engine = Engine::new(ProviderRegistry::default(), store, EngineConfig::default());
    let security = Security {
        token: Some(Secret::new("bench-token")),
        allowed_hosts: Vec::new(),
        repo_roots: vec![dir],
        allowed_programs: Vec::new(),
    };
    let secrets = |name: &str| (name == "CONCLAVE_GITHUB_WEBHOOK_SECRET").then(|| SECRET.to_string());
    AppState::new(workspace, engine, security, EditorSource::embedded())
        .with_webhooks(Webhooks::from_env(&secrets, false))
}

/// A `pull_request` body as GitHub sends one: the pull request, repository and
/// sender objects with their many URLs, about 20 KB.
pub(crate) fn body(n: usize) -> String {
    let urls: serde_json::Map<String, serde_json::Value> = (0..120)
        .map(|i| (format!("url_{i}"), json!(format!("https://api.example/repos/acme/app/things/{i}/{n}"))))
        .collect();
    json!({
        "action": "synchronize", "number": n,
        "pull_request": {
            "number": n, "draft": false, "title": "A change", "body": "x".repeat(2000),
            "head": {"sha": format!("{n:040x}"), "ref": "feature", "repo": urls.clone()},
            "base": {"sha": "f".repeat(40), "ref": "main", "repo": urls.clone()}, "links": urls.clone()
        },
        "repository": {"full_name": "acme/app", "more": urls},
        "installation": {"id": 4242}, "sender": {"login": "ann"}
    })
    .to_string()
}

/// POSTs a delivery and checks its 202; when the request started, and how long it
/// took.
pub(crate) async fn deliver(state: &AppState, id: String, body: String) -> (Instant, Duration) {
    let signature = github_signature(SECRET, body.as_bytes());
    let request = Request::post("/webhooks/github")
        .header("host", "127.0.0.1:7700")
        .header("content-type", "application/json")
        .header("x-github-event", "pull_request")
        .header("x-github-delivery", id)
        .header("x-hub-signature-256", signature)
        .body(Body::from(body))
        .expect("request");
    let start = Instant::now();
    let response = app(state.clone()).oneshot(request).await.expect("response");
    let took = start.elapsed();
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    (start, took)
}

/// Prints `what` took `times`: their p50, p99 and largest.
pub(crate) fn report(label: &str, what: &str, mut times: Vec<Duration>) {
    times.sort();
    let at = |q: f64| times[((times.len() as f64 * q).ceil() as usize).saturating_sub(1)];
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{label}: {} deliveries, {what} p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        times.len(),
        ms(at(0.50)),
        ms(at(0.99)),
        ms(times[times.len() - 1])
    );
}
