//! The process's metrics recorder: the engine's and the API's metrics kept in memory
//! and rendered in the Prometheus text format when `GET /metrics` is scraped.

use conclave_engine::observe::{describe_metrics, names};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use std::sync::OnceLock;

/// Buckets of the provider call latency, in seconds: from a quick local answer to a
/// long reasoning call.
const LATENCY_BUCKETS: &[f64] = &[0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0];

/// HTTP requests answered, by `route` and `status`.
pub const HTTP_REQUESTS: &str = "conclave_http_requests_total";

/// Runs started through this server's API that have not finished, read at each scrape.
pub const LIVE_RUNS: &str = "conclave_api_live_runs";

/// Runs waiting in the run queue, read at each scrape.
pub const QUEUE_DEPTH: &str = "conclave_queue_depth";

/// Runs a worker holds from the run queue, read at each scrape.
pub const QUEUE_RUNNING: &str = "conclave_queue_running";

/// How long the oldest queued run has waited, read at each scrape.
pub const QUEUE_OLDEST_SECONDS: &str = "conclave_queue_oldest_age_seconds";

/// Webhook deliveries received, by `forge`, `event` and `outcome` (`accepted`,
/// `ignored`, `duplicate`, `refused`, `failed`).
pub const WEBHOOK_DELIVERIES: &str = "conclave_webhook_deliveries_total";
/// Reviews of pull requests cancelled by a newer push before they ended.
pub const WEBHOOK_REVIEWS_SUPERSEDED: &str = "conclave_webhook_reviews_superseded_total";
/// How long the oldest review a webhook asked for has waited to start, set by the
/// dispatcher on each pass.
pub const WEBHOOK_OLDEST_REVIEW_SECONDS: &str = "conclave_webhook_oldest_waiting_review_seconds";

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Installs the Prometheus recorder as the process's global recorder, once; later
/// calls return the same handle. When another recorder was installed first, the
/// handle renders nothing and a warning says so.
pub fn install() -> PrometheusHandle {
    HANDLE
        .get_or_init(|| {
            let builder = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Full(names::PROVIDER_CALL_SECONDS.to_string()), LATENCY_BUCKETS)
                // Only an empty bucket list is refused; without buckets it renders a summary.
                .unwrap_or_else(|_| PrometheusBuilder::new());
            let recorder = builder.build_recorder();
            let handle = recorder.handle();
            if metrics::set_global_recorder(recorder).is_err() {
                tracing::warn!("another metrics recorder is installed; GET /metrics will be empty");
            }
            describe_metrics();
            metrics::describe_counter!(HTTP_REQUESTS, "HTTP requests answered, by matched route and status.");
            metrics::describe_counter!(
                WEBHOOK_DELIVERIES,
                "Webhook deliveries received, by forge, event and outcome (accepted, ignored, duplicate, refused, failed)."
            );
            metrics::describe_counter!(
                WEBHOOK_REVIEWS_SUPERSEDED,
                "Reviews of pull (merge) requests cancelled by a newer push before they ended."
            );
            metrics::describe_gauge!(
                WEBHOOK_OLDEST_REVIEW_SECONDS,
                metrics::Unit::Seconds,
                "How long the oldest review a webhook asked for has waited to start (0 with none)."
            );
            metrics::describe_gauge!(LIVE_RUNS, "Runs started through this server's API that have not finished.");
            metrics::describe_gauge!(QUEUE_DEPTH, "Runs waiting in the run queue for a worker.");
            metrics::describe_gauge!(QUEUE_RUNNING, "Runs of the queue a worker holds.");
            metrics::describe_gauge!(
                QUEUE_OLDEST_SECONDS,
                metrics::Unit::Seconds,
                "How long the oldest queued run has waited (0 with none)."
            );
            handle
        })
        .clone()
}
