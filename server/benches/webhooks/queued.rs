//! Time from a webhook delivery to its queued review: deliveries like the first
//! figure's, but each of a pull request of its own, POSTed while a `Dispatcher` runs
//! over the same store (woken by the endpoint, as `conclave serve` wires it), each
//! timed from the start of its POST until the dispatcher's put of the request's record
//! naming the queued run has returned. Nothing polls: [`WatchedQueue`] reads the clock
//! in the dispatcher's task as that put returns, so the time is exact to the clock and
//! the store carries no load but the server's.
//!
//! No worker runs. The bench stands in for workers that keep up: it cancels each
//! review as soon as it is queued (asserting it was still queued), so the dispatcher
//! then notes the run's end and the request leaves its busy listing, as it does
//! in a service whose workers keep up.

use conclave_core::{Cancel, RunQueue, now_ms};
use conclave_review::pipeline::BUILTIN_REVIEW;
use conclave_server::api::AppState;
use conclave_server::forge_app::ForgeAuth;
use conclave_server::forge_service::{Dispatcher, ForgeService};
use conclave_server::mirrors::Mirrors;
use conclave_shared::Conclave;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

use crate::common::{CLIENTS, DELIVERIES, body, deliver, report};
use crate::watched::WatchedQueue;

/// How long a review may take to be queued before the bench gives up on it.
const STALL: Duration = Duration::from_secs(30);

/// [`DELIVERIES`] one at a time, then as many from [`CLIENTS`] at once, on `store`
/// (empty: the dispatcher would queue any pending delivery it finds there).
pub async fn measure(label: &str, store: Arc<dyn RunQueue>, dir: &Path) {
    let watched = Arc::new(WatchedQueue::new(store.clone()));
    let state = crate::common::state(store.clone()).with_queue(store);
    let shutdown = CancellationToken::new();
    let dispatching = tokio::spawn(dispatcher(watched.clone(), &state, dir).run(shutdown.clone()));
    // Pull requests 1 to 1,000 one at a time, 1,001 to 2,000 from the clients; the
    // body of pull request n at n - 1.
    let bodies: Arc<Vec<String>> = Arc::new((1..=2 * DELIVERIES).map(body).collect());
    let mut one = Vec::with_capacity(DELIVERIES);
    for (n, body) in (1..=DELIVERIES).zip(bodies.iter()) {
        one.push(queue_one(&state, &watched, n, body).await);
    }
    report(&format!("{label}, one at a time"), "delivery to a queued review", one);
    let mut tasks = tokio::task::JoinSet::new();
    for client in 0..CLIENTS {
        let (state, watched, bodies) = (state.clone(), watched.clone(), bodies.clone());
        tasks.spawn(async move {
            let mut times = Vec::new();
            for n in (DELIVERIES + 1 + client..=2 * DELIVERIES).step_by(CLIENTS) {
                times.push(queue_one(&state, &watched, n, &bodies[n - 1]).await);
            }
            times
        });
    }
    let many: Vec<Duration> = tasks.join_all().await.into_iter().flatten().collect();
    report(&format!("{label}, {CLIENTS} at once"), "delivery to a queued review", many);
    shutdown.cancel();
    dispatching.await.expect("the dispatcher stops");
}

/// Delivers pull request `n`'s push and waits for its review to be queued; the time
/// from the start of the POST. The review is then cancelled, as a worker would end it.
async fn queue_one(state: &AppState, watched: &WatchedQueue, n: usize, body: &str) -> Duration {
    let queued = watched.expect(n as u64);
    let (start, _) = deliver(state, format!("queue-{n}"), body.to_string()).await;
    let (at, run) = match tokio::time::timeout(STALL, queued).await {
        Ok(told) => told.expect("the watcher answers"),
        Err(_) => panic!("the review of pull request {n} was not queued within {STALL:?}"),
    };
    let cancel = watched.request_cancel(&run, now_ms()).await.expect("cancel the review");
    assert_eq!(cancel, Cancel::Dequeued, "review {run} of pull request {n} was still queued when the bench ended it");
    at.duration_since(start)
}

/// The dispatcher of `conclave serve` on `queue`, woken by `state`'s webhook
/// endpoint, passing every 50 ms when idle. Its forge credentials are never used:
/// only comment commands ask the forge anything.
fn dispatcher(queue: Arc<WatchedQueue>, state: &AppState, dir: &Path) -> Dispatcher {
    let env = |name: &str| match name {
        "CONCLAVE_GITHUB_TOKEN" => Some("bench-token".to_string()),
        "CONCLAVE_GITHUB_REPOSITORY" => Some("acme/app".to_string()),
        _ => None,
    };
    let auth = ForgeAuth::from_env(&env).expect("the bench's forge credentials");
    let service = ForgeService::new(auth, Mirrors::new(dir.join("mirrors")), (*state.workspace).clone());
    let placeholder: Conclave = serde_json::from_str(BUILTIN_REVIEW).expect("the built-in review conclave");
    Dispatcher::new(queue, service, placeholder, state.webhooks.kept.clone())
        .pacing(Duration::from_millis(50), Duration::from_secs(120))
}
