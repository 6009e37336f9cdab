//! What the engine tells an operator: counters, gauges and histograms through the
//! `metrics` facade, and spans through `tracing` named after the OpenTelemetry GenAI
//! semantic conventions (`invoke_workflow` per run → `invoke_agent` per agent node →
//! `chat` per provider call).
//!
//! The engine only records. Which recorder or subscriber receives (a Prometheus
//! handle, an OTLP exporter, nothing) is the binary's choice; with none installed
//! every call here costs next to nothing. Prompt and response text go into spans only
//! when the run asks for it (`EngineConfig::capture_message_content`).

use conclave_core::{AgentReply, AgentRequest, Message, ProviderError, StopReason};
use conclave_shared::{RunStatus, Usage};
use metrics::{Unit, counter, describe_counter, describe_gauge, describe_histogram, gauge, histogram};
use serde_json::{Value, json};
use std::time::Duration;
use tracing::Span;
use tracing::field::Empty;

/// The names of the engine's metrics, for recorders and for tests.
pub mod names {
    /// Runs started, by `conclave`.
    pub const RUNS_STARTED: &str = "conclave_runs_started_total";
    /// Runs finished, by `conclave` and `status`.
    pub const RUNS_FINISHED: &str = "conclave_runs_finished_total";
    /// Runs in progress, by `conclave`.
    pub const RUNS_IN_PROGRESS: &str = "conclave_runs_in_progress";
    /// Provider calls, by `provider`, `model` and `outcome` (`ok` or the error class).
    pub const PROVIDER_CALLS: &str = "conclave_provider_calls_total";
    /// How long provider calls took, in seconds, by `provider` and `model`.
    pub const PROVIDER_CALL_SECONDS: &str = "conclave_provider_call_duration_seconds";
    /// Provider calls retried, by `provider` and `class` (the error class).
    pub const PROVIDER_RETRIES: &str = "conclave_provider_retries_total";
    /// Tokens, by `provider`, `model` and `direction` (`input` or `output`).
    pub const TOKENS: &str = "conclave_tokens_total";
    /// Cost in millionths of a US dollar, by `provider` and `model`.
    pub const COST_MICRO_USD: &str = "conclave_cost_micro_usd_total";
    /// Run events written to the store.
    pub const EVENTS_WRITTEN: &str = "conclave_events_written_total";
    /// Store operations that failed, by `operation`.
    pub const STORE_ERRORS: &str = "conclave_store_errors_total";
}

/// Gives each engine metric its help text and unit; call once after installing a
/// recorder.
pub fn describe_metrics() {
    use names::*;
    describe_counter!(RUNS_STARTED, "Runs started, by conclave.");
    describe_counter!(RUNS_FINISHED, "Runs finished, by conclave and final status.");
    describe_gauge!(RUNS_IN_PROGRESS, "Runs started and not yet finished, by conclave.");
    describe_counter!(PROVIDER_CALLS, "Provider calls, by provider, model and outcome (ok or the error class).");
    describe_histogram!(PROVIDER_CALL_SECONDS, Unit::Seconds, "Provider call latency, by provider and model.");
    describe_counter!(PROVIDER_RETRIES, "Provider calls retried after a fault that may pass, by error class.");
    describe_counter!(TOKENS, "Tokens, by provider, model and direction (input or output).");
    describe_counter!(
        COST_MICRO_USD,
        "Cost of provider calls in millionths of a US dollar (divide by 1e6 for USD), by provider and model."
    );
    describe_counter!(EVENTS_WRITTEN, "Run events written to the store.");
    describe_counter!(STORE_ERRORS, "Store operations that failed, by operation.");
}

/// Counts one run from start to end. A run whose task stops without finishing (it
/// panicked) still leaves the runs in progress when this is dropped.
#[derive(Debug)]
pub(crate) struct RunMetrics {
    /// The conclave, until the run is counted out of the runs in progress.
    conclave: Option<String>,
}

impl RunMetrics {
    /// Counts a run of `conclave` as started and in progress.
    pub(crate) fn start(conclave: &str) -> RunMetrics {
        counter!(names::RUNS_STARTED, "conclave" => conclave.to_string()).increment(1);
        gauge!(names::RUNS_IN_PROGRESS, "conclave" => conclave.to_string()).increment(1.0);
        RunMetrics { conclave: Some(conclave.to_string()) }
    }

    /// Counts the run as finished with `status` and no longer in progress, and marks
    /// the current (workflow) span failed unless the run succeeded. Called before
    /// `run_finished` is published, so whoever saw that event scrapes the new counts.
    pub(crate) fn finished(mut self, status: RunStatus) {
        let Some(conclave) = self.conclave.take() else { return };
        counter!(names::RUNS_FINISHED, "conclave" => conclave.clone(), "status" => status.as_str()).increment(1);
        gauge!(names::RUNS_IN_PROGRESS, "conclave" => conclave).decrement(1.0);
        if status != RunStatus::Succeeded {
            fail_span(&Span::current(), status.as_str());
        }
    }
}

impl Drop for RunMetrics {
    fn drop(&mut self) {
        if let Some(conclave) = self.conclave.take() {
            gauge!(names::RUNS_IN_PROGRESS, "conclave" => conclave).decrement(1.0);
        }
    }
}

/// Counts one provider call that answered, with its tokens and cost.
fn call_answered(provider: &str, model: &str, usage: &Usage, elapsed: Duration) {
    let (p, m) = (provider.to_string(), model.to_string());
    counter!(names::PROVIDER_CALLS, "provider" => p.clone(), "model" => m.clone(), "outcome" => "ok").increment(1);
    histogram!(names::PROVIDER_CALL_SECONDS, "provider" => p.clone(), "model" => m.clone()).record(elapsed);
    let tokens = |direction: &'static str, n: u64| {
        counter!(names::TOKENS, "provider" => p.clone(), "model" => m.clone(), "direction" => direction).increment(n);
    };
    tokens("input", usage.input_tokens);
    tokens("output", usage.output_tokens);
    if let Some(cost) = usage.cost_usd.filter(|c| c.is_finite() && *c > 0.0) {
        counter!(names::COST_MICRO_USD, "provider" => p, "model" => m).increment((cost * 1e6).round() as u64);
    }
}

/// Counts one provider call that failed.
fn call_failed(provider: &str, model: &str, error: &ProviderError, elapsed: Duration) {
    let (p, m) = (provider.to_string(), model.to_string());
    counter!(names::PROVIDER_CALLS, "provider" => p.clone(), "model" => m.clone(), "outcome" => error.class())
        .increment(1);
    histogram!(names::PROVIDER_CALL_SECONDS, "provider" => p, "model" => m).record(elapsed);
}

/// Counts a retry of a provider call after `error`.
pub(crate) fn provider_retried(provider: &str, error: &ProviderError) {
    counter!(names::PROVIDER_RETRIES, "provider" => provider.to_string(), "class" => error.class()).increment(1);
}

/// Counts an event written to the store.
pub(crate) fn events_written(count: usize) {
    counter!(names::EVENTS_WRITTEN).increment(count as u64);
}

/// Counts a store operation that failed.
pub(crate) fn store_failed(operation: &'static str) {
    counter!(names::STORE_ERRORS, "operation" => operation).increment(1);
}

/// An INFO span of GenAI operation `$operation` named `$operation {$subject}`, with
/// the fields every such span has (the status and error type [`fail_span`] records)
/// and the operation's own.
macro_rules! genai_span {
    ($operation:literal, $subject:expr, $kind:literal, $($fields:tt)*) => {
        tracing::info_span!(
            $operation,
            otel.name = %format_args!("{} {}", $operation, $subject),
            otel.kind = $kind,
            otel.status_code = Empty,
            otel.status_description = Empty,
            "error.type" = Empty,
            gen_ai.operation.name = $operation,
            $($fields)*
        )
    };
}

/// The span of one run: `invoke_workflow {conclave id}`.
pub(crate) fn workflow_span(conclave_id: &str, run_id: &str) -> Span {
    genai_span!(
        "invoke_workflow",
        conclave_id,
        "internal",
        gen_ai.workflow.name = conclave_id,
        gen_ai.conversation.id = run_id,
    )
}

/// The span of one agent node: `invoke_agent {node id}`.
pub(crate) fn agent_span(node_id: &str, label: &str, provider: &str, model: &str) -> Span {
    genai_span!(
        "invoke_agent",
        node_id,
        "internal",
        gen_ai.agent.id = node_id,
        gen_ai.agent.name = label,
        gen_ai.provider.name = provider,
        gen_ai.request.model = model,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
    )
}

/// Records how an agent node ended on its span: its tokens, or its failure's class.
pub(crate) fn agent_finished<T>(span: &Span, result: &Result<(T, Usage), crate::node_error::NodeError>) {
    match result {
        Ok((_, usage)) => {
            span.record("gen_ai.usage.input_tokens", usage.input_tokens);
            span.record("gen_ai.usage.output_tokens", usage.output_tokens);
        }
        Err(error) => fail_span(span, error.kind().as_str()),
    }
}

/// The span of one provider call: `chat {model}`, with the request's messages when
/// content capture is on.
pub(crate) fn chat_span(provider: &str, request: &AgentRequest, capture: bool) -> Span {
    let span = genai_span!(
        "chat",
        request.model,
        "client",
        gen_ai.provider.name = provider,
        gen_ai.request.model = request.model.as_str(),
        gen_ai.request.max_tokens = request.max_tokens,
        gen_ai.agent.id = request.node_id.as_str(),
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.system_instructions = Empty,
        gen_ai.input.messages = Empty,
        gen_ai.output.messages = Empty,
    );
    if capture && !span.is_disabled() {
        let system: Vec<Value> = [&request.shared_prefix, &request.system_prompt]
            .into_iter()
            .filter(|text| !text.is_empty())
            .map(|text| json!({"type": "text", "content": text}))
            .collect();
        let system = Value::Array(system);
        span.record("gen_ai.system_instructions", system.to_string().as_str());
        span.record("gen_ai.input.messages", input_messages(&request.messages).to_string().as_str());
    }
    span
}

/// Records one provider call's outcome on its span and in the metrics.
pub(crate) fn chat_finished(
    span: &Span,
    (provider, model): (&str, &str),
    result: Result<&AgentReply, &ProviderError>,
    elapsed: Duration,
    capture: bool,
) {
    match result {
        Ok(reply) => {
            call_answered(provider, model, &reply.usage, elapsed);
            span.record("gen_ai.usage.input_tokens", reply.usage.input_tokens);
            span.record("gen_ai.usage.output_tokens", reply.usage.output_tokens);
            if capture && !span.is_disabled() {
                span.record("gen_ai.output.messages", output_messages(reply).to_string().as_str());
            }
        }
        Err(error) => {
            call_failed(provider, model, error, elapsed);
            fail_span(span, error.class());
        }
    }
}

/// Marks a span failed with a low-cardinality class. The description names the class
/// only: an error's message may quote what the model said.
fn fail_span(span: &Span, class: &str) {
    span.record("otel.status_code", "ERROR");
    span.record("otel.status_description", class);
    span.record("error.type", class);
}

/// The conversation in the GenAI conventions' message shape.
fn input_messages(messages: &[Message]) -> Value {
    let message = |m: &Message| match m {
        Message::User(text) => json!({"role": "user", "parts": [{"type": "text", "content": text}]}),
        Message::Assistant { text, tool_calls } => {
            let mut parts = vec![json!({"type": "text", "content": text})];
            parts.extend(
                tool_calls
                    .iter()
                    .map(|c| json!({"type": "tool_call", "id": c.id, "name": c.name, "arguments": c.arguments})),
            );
            json!({"role": "assistant", "parts": parts})
        }
        Message::ToolResult { call_id, content, .. } => {
            json!({"role": "tool", "parts": [{"type": "tool_call_response", "id": call_id, "response": content}]})
        }
    };
    Value::Array(messages.iter().map(message).collect())
}

/// A reply in the GenAI conventions' message shape.
fn output_messages(reply: &AgentReply) -> Value {
    let mut parts = vec![json!({"type": "text", "content": reply.text})];
    parts.extend(
        reply
            .tool_calls
            .iter()
            .map(|c| json!({"type": "tool_call", "id": c.id, "name": c.name, "arguments": c.arguments})),
    );
    let finish_reason = match &reply.stop {
        StopReason::EndTurn => "stop",
        StopReason::ToolUse => "tool_call",
        StopReason::Other(reason) => reason.as_str(),
    };
    json!([{"role": "assistant", "parts": parts, "finish_reason": finish_reason}])
}
