//! Probing a provider: one tiny structured request, to learn which structured-output
//! dialect its server speaks before a review depends on it. For providers whose
//! servers differ (OpenAI-compatible ones) the dialects are tried in the order `auto`
//! walks them, and each rejection is reported; the others are asked once in their own
//! dialect. `conclave providers --probe` and the editor's provider list show it.

use conclave_core::{AgentRequest, DiscardSink, Message, Provider, ProviderError, SchemaSpec};
use conclave_schema::contract::extract_json;
use conclave_shared::api::{ProbeRejection, ProviderProbe};
use conclave_shared::{AgentConfig, OutputDialect};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The longest a probe of one provider may take.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(120);

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

/// Probes `provider` with `model` (default: its default model).
pub async fn probe(provider: &dyn Provider, model: Option<&str>) -> ProviderProbe {
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
    let outcome = tokio::time::timeout(PROBE_TIMEOUT, ask(provider, &model, server.is_some(), &mut report)).await;
    if outcome.is_err() {
        report.error = Some(format!("no answer within {} s", PROBE_TIMEOUT.as_secs()));
    }
    report.duration_ms = started.elapsed().as_millis() as u64;
    report
}

/// Asks in each dialect until one is accepted, filling `report`.
async fn ask(provider: &dyn Provider, model: &str, dialects: bool, report: &mut ProviderProbe) {
    if let Err(e) = provider.check_config().and_then(|()| provider.check_model(model)) {
        report.error = Some(e.to_string());
        return;
    }
    let chain: Vec<Option<OutputDialect>> =
        if dialects { OutputDialect::CHAIN.into_iter().map(Some).collect() } else { vec![None] };
    for dialect in chain {
        match provider.call(&request(provider.name(), model, dialect), &DiscardSink).await {
            Ok(reply) => {
                report.dialect = Some(match dialect {
                    Some(d) => d.as_str().to_string(),
                    None => provider.capabilities().native_schema.map_or("prompt", |t| t.as_str()).to_string(),
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
        system_prompt: system,
        input: Value::Null,
        messages: vec![Message::User("Reply with {\"ok\": true}.".into())],
        tools: Vec::new(),
        output_schema: Some(SchemaSpec { name: "probe".into(), schema: Arc::new(probe_schema()) }),
        max_tokens: PROBE_TOKENS,
        agent: Arc::new(AgentConfig { model: model.to_string(), ..AgentConfig::new(provider) }),
        dialect,
        attempt: 1,
        max_turns: 1,
        workdir: None,
    }
}
