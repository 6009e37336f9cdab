//! `GET /metrics`: the process's metrics in the Prometheus text format, behind the
//! same guard as the API (Host allowlist and bearer token), and the count of HTTP
//! requests by route and status.

use axum::extract::{MatchedPath, Request, State};
use axum::http::header::CONTENT_TYPE;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::{ApiError, AppState};
use conclave_core::now_ms;

use crate::observe::prometheus::{HTTP_REQUESTS, LIVE_RUNS, QUEUE_DEPTH, QUEUE_OLDEST_SECONDS, QUEUE_RUNNING};

/// The media type of the Prometheus text format.
const TEXT_FORMAT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Renders every metric, after refreshing the gauges that are read at scrape time.
pub async fn scrape(State(state): State<AppState>) -> Response {
    let Some(handle) = &state.metrics else {
        return ApiError::NotFound("metrics are not recorded by this server".into()).into_response();
    };
    refresh_gauges(&state).await;
    handle.run_upkeep();
    ([(CONTENT_TYPE, TEXT_FORMAT)], handle.render()).into_response()
}

/// Counts each request the router answered, by its matched route (never the raw
/// path, which would make a series per run id) and status.
pub async fn count_requests(request: Request, next: Next) -> Response {
    let route = request.extensions().get::<MatchedPath>().map_or("unmatched".to_string(), |p| p.as_str().to_string());
    let response = next.run(request).await;
    metrics::counter!(HTTP_REQUESTS, "route" => route, "status" => response.status().as_u16().to_string()).increment(1);
    response
}

/// Sets the gauges whose value is read from the server's state when Prometheus
/// scrapes, rather than counted as things happen: live runs, and the run queue's
/// depth, the runs workers hold and the age of its oldest entry (shared by every
/// server on the database).
async fn refresh_gauges(state: &AppState) {
    let live = state.live.lock().unwrap_or_else(std::sync::PoisonError::into_inner).len();
    metrics::gauge!(LIVE_RUNS).set(live as f64);
    let Some(queue) = &state.queue else { return };
    match queue.queue_stats(now_ms()).await {
        Ok(stats) => {
            metrics::gauge!(QUEUE_DEPTH).set(stats.queued as f64);
            metrics::gauge!(QUEUE_RUNNING).set(stats.running as f64);
            metrics::gauge!(QUEUE_OLDEST_SECONDS).set(stats.oldest_queued_ms.unwrap_or(0) as f64 / 1000.0);
        }
        Err(e) => tracing::warn!("cannot read the run queue for /metrics: {e}"),
    }
}
