//! Every HTTP provider against a fake server on a loopback socket that speaks the
//! vendor's real streaming wire format, through the real engine: success, retries
//! with validation feedback, exhausted attempts, refusals, truncated streams, rate
//! limits, server errors, authentication failures, and tool calls. Request bodies are
//! snapshot-tested.

use async_trait::async_trait;
use conclave_catalog::{CatalogContext, CheckedConclave, check_conclave};
use conclave_core::{
    BUILTIN_TOOLS, Provider, ProviderRegistry, RetryPolicy, RunStore, ToolCall, ToolOutcome, ToolRunner, ToolSpec,
};
use conclave_doubles::MemoryStore;
use conclave_engine::{Engine, EngineConfig, RunOptions, RunOutcome};
use conclave_providers::anthropic::AnthropicProvider;
use conclave_providers::ollama::OllamaProvider;
use conclave_providers::openai::OpenAiProvider;
use conclave_schema::SchemaCatalog;
use conclave_shared::{
    AgentConfig, Conclave, Edge, EventKind, Node, NodeKind, OpenAiApi, RunEvent, RunStatus, Settings,
};
use conclave_testkit::wire::{Vendor, status};
use conclave_testkit::{FakeServer, Recorded, Reply};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

pub(crate) const KEY: &str = "sk-test-0123456789abcdef";

pub(crate) fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "verdict": {"type": "string", "enum": ["approve", "reject"]},
            "line": {"type": "integer", "minimum": 1},
            "note": {"type": "string"}
        },
        "required": ["verdict", "line"]
    })
}

/// A valid answer as each vendor's model would give it (OpenAI strict mode makes the
/// optional `note` required and nullable, so its models send `null`).
fn valid(vendor: Vendor) -> String {
    match vendor {
        Vendor::OpenAiChat | Vendor::OpenAiResponses => r#"{"verdict":"approve","line":3,"note":null}"#.into(),
        _ => r#"{"verdict":"approve","line":3}"#.into(),
    }
}

const INVALID: &str = r#"{"verdict":"approve","line":0}"#;

#[derive(Debug)]
pub(crate) struct FakeTools;

#[async_trait]
impl ToolRunner for FakeTools {
    fn specs(&self, ids: &[String]) -> Result<Vec<ToolSpec>, String> {
        ids.iter()
            .map(|id| match id.as_str() {
                "read_file" => Ok(ToolSpec {
                    name: "read_file".into(),
                    description: "Read a file of the repository.".into(),
                    parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"], "additionalProperties": false}),
                }),
                other => Err(other.to_string()),
            })
            .collect()
    }
    async fn run(&self, call: &ToolCall) -> ToolOutcome {
        ToolOutcome::ok(format!("contents of {}", call.arguments["path"].as_str().unwrap_or("?")))
    }
}

pub(crate) fn provider_for(vendor: Vendor, base: &str) -> Arc<dyn Provider> {
    let env: HashMap<&str, String> = vendor.env(base, KEY).into_iter().collect();
    let lookup = |k: &str| env.get(k).cloned();
    match vendor {
        Vendor::Anthropic => Arc::new(AnthropicProvider::from_env(&lookup)),
        Vendor::OpenAiChat | Vendor::OpenAiResponses => Arc::new(OpenAiProvider::from_env(&lookup)),
        Vendor::Ollama => Arc::new(OllamaProvider::from_env(&lookup)),
    }
}

pub(crate) fn conclave(vendor: Vendor, tools: bool) -> Conclave {
    let mut agent = AgentConfig::new(vendor.provider());
    agent.model = "test-model".into();
    agent.system_prompt = "Review the change.".into();
    agent.output_schema = Some(schema());
    agent.output_retries = Some(2);
    agent.max_tokens = Some(1024);
    if vendor == Vendor::OpenAiResponses {
        agent.api = Some(OpenAiApi::Responses);
    }
    if tools {
        agent.tools = vec!["read_file".into()];
    }
    let node = |id: &str, kind, agent| Node { agent, ..Node::new(id, kind) };
    Conclave {
        version: 1,
        id: "single".into(),
        name: "Single".into(),
        description: String::new(),
        settings: Settings::default(),
        nodes: vec![
            node("input", NodeKind::Trigger, None),
            node("reviewer", NodeKind::Agent, Some(agent)),
            node("out", NodeKind::Output, None),
        ],
        edges: vec![
            Edge { from: "input".into(), to: "reviewer".into(), case: None },
            Edge { from: "reviewer".into(), to: "out".into(), case: None },
        ],
    }
}

/// `conclave` checked as the file `single.conclave.json` would be.
pub(crate) fn checked(conclave: Conclave) -> CheckedConclave {
    let context = CatalogContext {
        schemas: SchemaCatalog::with_roots(vec![]),
        providers: conclave_providers::BUILTIN_PROVIDERS.iter().map(|p| p.to_string()).collect(),
        tools: BUILTIN_TOOLS.iter().map(|t| t.to_string()).collect(),
        programs: None,
        catalog: None,
    };
    check_conclave("single.conclave.json", conclave, &context).expect("checks")
}

/// What one run did: its outcome, its stored events and the requests the server got.
pub(crate) struct Ran {
    pub(crate) outcome: RunOutcome,
    pub(crate) events: Vec<RunEvent>,
    pub(crate) requests: Vec<Recorded>,
}

async fn run(vendor: Vendor, script: Vec<Reply>, tools: bool) -> Ran {
    let server = FakeServer::start(script).await;
    run_on(&server, vendor, tools).await
}

/// Runs the one-reviewer conclave for `vendor` against `server`.
pub(crate) async fn run_on(server: &FakeServer, vendor: Vendor, tools: bool) -> Ran {
    let mut providers = ProviderRegistry::default();
    providers.register(provider_for(vendor, &server.base));
    run_with(providers, conclave(vendor, tools), tools, || server.requests()).await
}

/// Runs `file` with `providers`; `requests` reads what the fake server received.
pub(crate) async fn run_with(
    providers: ProviderRegistry,
    file: Conclave,
    tools: bool,
    requests: impl FnOnce() -> Vec<Recorded>,
) -> Ran {
    let store: Arc<dyn RunStore> = Arc::new(MemoryStore::new());
    let config = EngineConfig {
        retry: RetryPolicy { max_retries: 3, base: Duration::from_millis(10), cap: Duration::from_secs(2) },
        ..EngineConfig::default()
    };
    let engine = Engine::new(providers, store.clone(), config);
    let checked = checked(file);
    let options =
        RunOptions { tools: tools.then(|| Arc::new(FakeTools) as Arc<dyn ToolRunner>), ..RunOptions::default() };
    let handle = engine.start(checked, json!({"diff": "+fn main() {}"}), options).await.expect("run starts");
    let outcome = handle.wait().await;
    let events = store.events(&outcome.run_id, 0).await.expect("events");
    Ran { outcome, events, requests: requests() }
}

pub(crate) fn failure(ran: &Ran) -> String {
    ran.outcome.error.clone().unwrap_or_default()
}

async fn success(vendor: Vendor) {
    let ran = run(vendor, vec![vendor.answer(&valid(vendor))], false).await;
    assert_eq!(ran.outcome.status, RunStatus::Succeeded, "{}", failure(&ran));
    assert_eq!(ran.outcome.outputs["reviewer"].to_input_value(), json!({"verdict": "approve", "line": 3}));
    assert_eq!(ran.requests.len(), 1);
    let request = &ran.requests[0];
    assert_eq!(request.path, vendor.path());
    match vendor {
        Vendor::Anthropic => {
            assert_eq!(request.headers["x-api-key"], KEY);
            assert_eq!(request.headers["anthropic-version"], "2023-06-01");
        }
        Vendor::OpenAiChat | Vendor::OpenAiResponses => {
            assert_eq!(request.headers["authorization"], format!("Bearer {KEY}"))
        }
        Vendor::Ollama => assert!(request.headers.get("authorization").is_none()),
    }
    insta::assert_json_snapshot!(format!("{vendor:?}_request"), request.body);
    let streamed: String = ran
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::TextDelta { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(streamed, valid(vendor), "text deltas are forwarded as they stream");
    let usage = ran.events.iter().find_map(|e| match &e.kind {
        EventKind::NodeCompleted { node_id, usage, .. } if node_id == "reviewer" => Some(usage.clone()),
        _ => None,
    });
    let usage = usage.expect("reviewer completed");
    assert_eq!((usage.input_tokens, usage.output_tokens), (120, 42), "usage is read from the stream");
}

async fn retry_with_feedback(vendor: Vendor) {
    let ran = run(vendor, vec![vendor.answer(INVALID), vendor.answer(&valid(vendor))], false).await;
    assert_eq!(ran.outcome.status, RunStatus::Succeeded, "{}", failure(&ran));
    assert_eq!(ran.requests.len(), 2);
    let feedback = vendor.last_user_text(&ran.requests[1].body);
    assert!(
        feedback.contains("- /line: 0 is less than the minimum of 1"),
        "the retry carries the validation error: {feedback}"
    );
    let failed: Vec<u32> = ran
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::AttemptFailed { attempt, .. } => Some(*attempt),
            _ => None,
        })
        .collect();
    assert_eq!(failed, vec![1]);
}

async fn invalid_three_times(vendor: Vendor) {
    let ran = run(vendor, vec![vendor.answer(INVALID), vendor.answer(INVALID), vendor.answer(INVALID)], false).await;
    assert_eq!(ran.outcome.status, RunStatus::Failed);
    assert_eq!(ran.outcome.error_kind, Some(conclave_shared::ErrorKind::InvalidOutput));
    assert!(
        failure(&ran).contains("output still invalid after 3 attempt(s): /line: 0 is less than the minimum of 1"),
        "{}",
        failure(&ran)
    );
    assert_eq!(ran.requests.len(), 3);
}

async fn refusal(vendor: Vendor) {
    let Some(reply) = vendor.refusal("I can't review this.") else { return ollama_has_no_refusal(vendor).await };
    let ran = run(vendor, vec![reply], false).await;
    assert_eq!(ran.outcome.status, RunStatus::Failed);
    assert_eq!(ran.outcome.error_kind, Some(conclave_shared::ErrorKind::Provider));
    assert!(failure(&ran).contains("the model refused: I can't review this."), "{}", failure(&ran));
    assert_eq!(ran.requests.len(), 1, "a refusal is not retried");
}

/// Ollama's `/api/chat` has no refusal signal (its messages carry `content`,
/// `thinking` and `tool_calls`, its stops `done_reason` `stop`, `length`, `load` or
/// `unload`), so a model that declines in words gives an ordinary answer: it is
/// validated like any other, retried with the error fed back, and fails as invalid
/// output, never as a refusal.
async fn ollama_has_no_refusal(vendor: Vendor) {
    assert_eq!(vendor, Vendor::Ollama, "only Ollama lacks a refusal in its wire format");
    let declined = vendor.answer("I can't review this.");
    let ran = run(vendor, vec![declined.clone(), declined.clone(), declined], false).await;
    assert_eq!(ran.outcome.status, RunStatus::Failed);
    assert_eq!(ran.outcome.error_kind, Some(conclave_shared::ErrorKind::InvalidOutput));
    assert_eq!(
        failure(&ran),
        "node `reviewer` failed: output still invalid after 3 attempt(s): the answer contains no JSON object or array \
         (it starts: \"I can't review this.\")"
    );
    assert_eq!(ran.requests.len(), 3, "declining in words is an answer to retry, not a refusal to stop at");
    let feedback = vendor.last_user_text(&ran.requests[1].body);
    assert!(feedback.contains("the answer contains no JSON object or array"), "the retry says why: {feedback}");
}

async fn truncated_stream(vendor: Vendor) {
    let ran = run(vendor, vec![vendor.truncated(&valid(vendor))], false).await;
    assert_eq!(ran.outcome.status, RunStatus::Failed);
    assert!(failure(&ran).contains("the answer was cut off"), "{}", failure(&ran));
}

async fn rate_limited_then_success(vendor: Vendor) {
    let limited = status(429, vec![("retry-after", "1".into())], json!({"error": {"message": "slow down"}}));
    let ran = run(vendor, vec![limited, vendor.answer(&valid(vendor))], false).await;
    assert_eq!(ran.outcome.status, RunStatus::Succeeded, "{}", failure(&ran));
    assert_eq!(ran.requests.len(), 2);
    let delays: Vec<u64> = ran
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ProviderRetry { delay_ms, .. } => Some(*delay_ms),
            _ => None,
        })
        .collect();
    assert_eq!(delays, vec![1000], "the retry waits as long as retry-after asked");
}

async fn server_error_then_success(vendor: Vendor) {
    let ran = run(
        vendor,
        vec![status(500, vec![], json!({"error": {"message": "boom"}})), vendor.answer(&valid(vendor))],
        false,
    )
    .await;
    assert_eq!(ran.outcome.status, RunStatus::Succeeded, "{}", failure(&ran));
    assert_eq!(ran.requests.len(), 2);
}

async fn unauthorized_is_not_retried(vendor: Vendor) {
    let ran = run(vendor, vec![status(401, vec![], json!({"error": {"message": "invalid api key"}}))], false).await;
    assert_eq!(ran.outcome.status, RunStatus::Failed);
    assert!(failure(&ran).contains("authentication failed: invalid api key"), "{}", failure(&ran));
    assert_eq!(ran.requests.len(), 1, "401 is not retried");
}

async fn tools_then_extraction(vendor: Vendor) {
    let script = vec![
        vendor.tool_calls(&[("call_1", "read_file", json!({"path": "src/lib.rs"}))]),
        vendor.answer("I have read the file; it looks fine."),
        vendor.answer(&valid(vendor)),
    ];
    let ran = run(vendor, script, true).await;
    assert_eq!(ran.outcome.status, RunStatus::Succeeded, "{}", failure(&ran));
    assert_eq!(ran.requests.len(), 3, "tool turn, final tool-phase turn, extraction turn");
    insta::assert_json_snapshot!(format!("{vendor:?}_tools_request"), ran.requests[0].body);
    let second = ran.requests[1].body.to_string();
    assert!(second.contains("contents of src/lib.rs"), "the tool result goes back to the model: {second}");
    insta::assert_json_snapshot!(format!("{vendor:?}_extraction_request"), ran.requests[2].body);
    let calls: Vec<&str> = ran
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolCall { tool, .. } => Some(tool.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(calls, vec!["read_file"]);
}

macro_rules! scenarios {
    ($($module:ident => $vendor:expr),* $(,)?) => {$(
        mod $module {
            use super::*;
            #[tokio::test] async fn success() { super::success($vendor).await }
            #[tokio::test] async fn retry_with_feedback() { super::retry_with_feedback($vendor).await }
            #[tokio::test] async fn invalid_three_times() { super::invalid_three_times($vendor).await }
            #[tokio::test] async fn refusal() { super::refusal($vendor).await }
            #[tokio::test] async fn truncated_stream() { super::truncated_stream($vendor).await }
            #[tokio::test] async fn rate_limited_then_success() { super::rate_limited_then_success($vendor).await }
            #[tokio::test] async fn server_error_then_success() { super::server_error_then_success($vendor).await }
            #[tokio::test] async fn unauthorized_is_not_retried() { super::unauthorized_is_not_retried($vendor).await }
            #[tokio::test] async fn tools_then_extraction() { super::tools_then_extraction($vendor).await }
        }
    )*};
}

scenarios! {
    anthropic => Vendor::Anthropic,
    openai_chat => Vendor::OpenAiChat,
    openai_responses => Vendor::OpenAiResponses,
    ollama => Vendor::Ollama,
}
