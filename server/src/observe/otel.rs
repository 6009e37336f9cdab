//! Traces over OTLP/HTTP: when `OTEL_EXPORTER_OTLP_ENDPOINT` is set, the engine's
//! spans (`invoke_workflow` → `invoke_agent` → `chat`) go to that collector as
//! protobuf, batched on the exporter's own thread. The standard variables apply
//! (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_EXPORTER_OTLP_HEADERS`,
//! `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`); prompts and answers are only
//! captured with `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`, which
//! `workspace::engine_config` reads.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Subscriber;
use tracing_subscriber::Layer;
use tracing_subscriber::registry::LookupSpan;

/// The variable that turns trace export on.
pub const ENDPOINT_VAR: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";

/// The variable that lets prompts and answers into the spans.
pub const CAPTURE_CONTENT_VAR: &str = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT";

/// Whether the environment asks for prompts and answers in the spans.
pub fn capture_content_from_env() -> bool {
    std::env::var(CAPTURE_CONTENT_VAR).is_ok_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// The trace exporter of this process; [`TraceExport::shutdown`] sends what is left.
#[derive(Debug)]
pub struct TraceExport {
    provider: SdkTracerProvider,
}

impl TraceExport {
    /// The exporter the environment asks for: `None` when neither
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` nor `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set or
    /// `OTEL_SDK_DISABLED` is `true`, an error when it cannot be built.
    pub fn from_env() -> Result<Option<TraceExport>, String> {
        let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.trim().is_empty());
        let disabled = std::env::var("OTEL_SDK_DISABLED").is_ok_and(|v| v.trim().eq_ignore_ascii_case("true"));
        if disabled || (!set(ENDPOINT_VAR) && !set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")) {
            return Ok(None);
        }
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .build()
            .map_err(|e| format!("{ENDPOINT_VAR}: {e}"))?;
        let mut resource = Resource::builder();
        if std::env::var("OTEL_SERVICE_NAME").is_err() {
            resource = resource.with_service_name("conclave");
        }
        let provider =
            SdkTracerProvider::builder().with_resource(resource.build()).with_batch_exporter(exporter).build();
        Ok(Some(TraceExport { provider }))
    }

    /// The `tracing` layer that turns the engine's spans into OpenTelemetry spans. It
    /// takes spans only (log lines stay on stderr: an error's message may quote what
    /// a model said) and only the engine's.
    pub fn layer<S>(&self) -> impl Layer<S> + use<S>
    where
        S: Subscriber + for<'a> LookupSpan<'a>,
    {
        let tracer = self.provider.tracer("conclave");
        tracing_opentelemetry::layer().with_tracer(tracer).with_filter(tracing_subscriber::filter::filter_fn(
            |metadata| metadata.is_span() && metadata.target().starts_with("conclave_engine"),
        ))
    }

    /// Sends the spans still buffered and stops the exporter.
    pub fn shutdown(self) {
        if let Err(e) = self.provider.shutdown() {
            eprintln!("warning: the last traces may not have been exported: {e}");
        }
    }
}
