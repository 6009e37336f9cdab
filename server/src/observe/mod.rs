//! Where the `conclave` binary installs what receives the engine's metrics and spans:
//! `prometheus.rs` (the recorder `conclave serve` renders at `GET /metrics`) and
//! `otel.rs` (the OTLP/HTTP trace exporter, only when `OTEL_EXPORTER_OTLP_ENDPOINT`
//! is set), plus the log output both sit beside.
//!
//! **Invariant:** the engine and the review crates record through the `metrics` facade
//! and `tracing` only; exporters are installed here and nowhere else.

pub mod otel;
pub mod prometheus;

use tracing_subscriber::Layer;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

pub use otel::TraceExport;

/// Installs the process's `tracing` subscriber: log lines on stderr filtered by
/// `CONCLAVE_LOG` (default `warn`), and, when `OTEL_EXPORTER_OTLP_ENDPOINT` is set,
/// the engine's spans exported over OTLP. Call it outside the async runtime (the
/// exporter's HTTP client runs its own), and call [`TraceExport::shutdown`] before
/// the process exits so the last spans are sent.
pub fn init_tracing() -> Option<TraceExport> {
    let filter = tracing_subscriber::EnvFilter::try_from_env("CONCLAVE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let logs = tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_filter(filter);
    let export = match TraceExport::from_env() {
        Ok(export) => export,
        Err(message) => {
            eprintln!("warning: traces are not exported: {message}");
            None
        }
    };
    let spans = export.as_ref().map(|e| e.layer());
    let _ = tracing_subscriber::registry().with(logs).with(spans).try_init();
    export
}
