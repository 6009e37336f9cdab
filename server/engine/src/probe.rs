//! Probing a provider: one tiny structured request, to learn which structured-output
//! dialect its server speaks before a review depends on it. For providers whose
//! servers differ (OpenAI-compatible ones) the dialects are tried in the order `auto`
//! walks them, and each rejection is reported; the others are asked once in their own
//! dialect, and a provider that enforces the schema itself (the embedded model) is not
//! asked at all: its dialect is known, and only its configuration and model file are
//! checked. A probe that gets no answer within [`PROBE_TIMEOUT`] reports that, so a
//! caller (an HTTP client with its own deadline) is never left waiting.
//! `conclave providers --probe` and the editor's provider list show it.

use conclave_core::{AgentRequest, DiscardSink, Message, Provider, ProviderError, SchemaSpec};
use conclave_schema::contract::extract_json;
use conclave_shared::api::{ProbeRejection, ProviderProbe};
use conclave_shared::{AgentConfig, OutputDialect};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The longest a probe of one provider may take: below the 10 s an HTTP client such as
/// schemathesis waits for an answer, and ample for a loaded server's 64-token reply.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(8);

/// Tokens the probe's answer may use: `{"ok": true}` with room to spare.
const PROBE_TOKENS: u32 = 64;

/// The probe's schema: small enough for any server, closed as strict modes require.
fn probe_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"ok": {"type": "boolean"}},
        "required": ["ok"],
        "additionalProperties": false
    })
}

/// Probes `provider` with `model` (default: its default model), within [`PROBE_TIMEOUT`].
pub async fn probe(provider: Arc<dyn Provider>, model: Option<&str>) -> ProviderProbe {
    probe_within(provider, model, PROBE_TIMEOUT).await
}

/// [`probe`], giving up after `limit`.
pub async fn probe_within(provider: Arc<dyn Provider>, model: Option<&str>, limit: Duration) -> ProviderProbe {
    let started = Instant::now();
    let model = model.filter(|m| !m.trim().is_empty()).unwrap_or(provider.default_model()).to_string();
    let server = provider.dialects();
    let mut report = ProviderProbe {
        provider: provider.name().to_string(),
        endpoint: server.as_ref().map(|s| s.endpoint.clone()),
        model: model.clone(),
        dialect: None,
        valid: false,
        rejected: Vec::new(),
        error: None,
        duration_ms: 0,
    };
    let checked = check(provider.clone(), model.clone()).await;
    if provider.enforces_schema_itself() {
        report.dialect = Some(native_dialect(provider.as_ref()));
        match checked {
            Ok(()) => report.valid = true,
            Err(e) => report.error = Some(e),
        }
    } else if let Err(e) = checked {
        report.error = Some(e);
    } else if tokio::time::timeout(limit, ask(provider.as_ref(), &model, server.is_some(), &mut report)).await.is_err()
    {
        report.error = Some(format!(
            "no answer within {}; a server still loading its model may answer later, so probe again",
            humanize(limit)
        ));
    }
    report.duration_ms = started.elapsed().as_millis() as u64;
    report
}

/// Whether the provider's configuration and `model` are usable, checked on a blocking
/// thread (checking a model may read its file). A provider that enforces the schema
/// itself needs nothing more: its dialect is known without a call.
async fn check(provider: Arc<dyn Provider>, model: String) -> Result<(), String> {
    let checking =
        tokio::task::spawn_blocking(move || provider.check_config().and_then(|()| provider.check_model(&model)));
    match checking.await {
        Ok(checked) => checked.map_err(|e| e.to_string()),
        Err(e) => Err(format!("checking the provider stopped: {e}")),
    }
}

/// The dialect of a provider whose servers all take a schema the same way.
fn native_dialect(provider: &dyn Provider) -> String {
    provider.capabilities().native_schema.map_or("prompt", |t| t.as_str()).to_string()
}

/// `d` as a person reads it: whole seconds, or milliseconds.
fn humanize(d: Duration) -> String {
    if d.as_millis().is_multiple_of(1000) { format!("{} s", d.as_secs()) } else { format!("{} ms", d.as_millis()) }
}

/// Asks in each dialect until one is accepted, filling `report`.
async fn ask(provider: &dyn Provider, model: &str, dialects: bool, report: &mut ProviderProbe) {
    let chain: Vec<Option<OutputDialect>> =
        if dialects { OutputDialect::CHAIN.into_iter().map(Some).collect() } else { vec![None] };
    for dialect in chain {
        match provider.call(&request(provider.name(), model, dialect), &DiscardSink).await {
            Ok(reply) => {
                report.dialect = Some(match dialect {
                    Some(d) => d.as_str().to_string(),
                    None => native_dialect(provider),
                });
                let answer = reply.json.map(Ok).unwrap_or_else(|| extract_json(&reply.text));
                report.valid = answer.is_ok_and(|v| v.get("ok").is_some_and(Value::is_boolean));
                return;
            }
            Err(ProviderError::DialectRejected { dialect, message, .. }) => {
                report.rejected.push(ProbeRejection { dialect: dialect.as_str().to_string(), message });
            }
            Err(e) => {
                report.error = Some(e.to_string());
                return;
            }
        }
    }
    report.error = Some("the server rejected every dialect, even a request without a schema".into());
}

/// The probe's request to `provider` in `dialect`: an agent with every setting at its
/// default.
fn request(provider: &str, model: &str, dialect: Option<OutputDialect>) -> AgentRequest {
    let in_prompt = dialect.is_none_or(OutputDialect::contract_in_prompt);
    let mut system = "You are checking that structured output works. Answer with a JSON object only.".to_string();
    if in_prompt {
        system.push_str(" It must be exactly {\"ok\": true}.");
    }
    AgentRequest {
        run_id: "probe".into(),
        node_id: "probe".into(),
        model: model.to_string(),
        shared_prefix: String::new(),
        system_prompt: system,
        input: Value::Null,
        messages: vec![Message::User("Reply with {\"ok\": true}.".into())],
        tools: Vec::new(),
        tool_calls_allowed: false,
        output_schema: Some(SchemaSpec { name: "probe".into(), schema: Arc::new(probe_schema()) }),
        max_tokens: PROBE_TOKENS,
        agent: Arc::new(AgentConfig { model: model.to_string(), ..AgentConfig::new(provider) }),
        dialect,
        attempt: 1,
        max_turns: 1,
        workdir: None,
    }
}
