//! OpenAI-compatible servers that take a schema in different dialects, faked on a
//! loopback socket the way each kind of server answers: what each dialect puts on
//! the wire, `auto` stepping down the whole chain once per rejection and the store
//! remembering where it ended, a rejected dialect never retried as a passing fault,
//! and the errors for unknown models, proxy pages and servers that do not stream;
//! and each built-in provider lowering a schema as its dialects say.

use conclave_core::{ProviderRegistry, RetryPolicy, RunStore};
use conclave_doubles::MemoryStore;
use conclave_engine::{Engine, EngineConfig, RunOptions};
use conclave_providers::dialect::{Dialect, native_target};
use conclave_providers::openai::OpenAiProvider;
use conclave_shared::{DialectSetting, EventKind, OutputDialect, RunStatus};
use conclave_testkit::wire::{Vendor, status};
use conclave_testkit::{FakeServer, Reply};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

use crate::providers_http::{KEY, Ran, checked, conclave, failure};

const ANSWER: &str = r#"{"verdict":"approve","line":3}"#;

/// What llama-cpp-python's server says to a nested `json_schema` (HTTP 500).
const PYDANTIC: &str = "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), \
                        'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}";

fn format_type(body: &Value) -> Option<&str> {
    body.pointer("/response_format/type").and_then(Value::as_str)
}

fn answer() -> Reply {
    Vendor::OpenAiChat.answer(ANSWER)
}

/// Like llama-cpp-python's server: no nested `json_schema`, anything else answered.
fn like_llama_cpp_python(body: &Value) -> Reply {
    match format_type(body) {
        Some("json_schema") => {
            status(500, vec![], json!({"error": {"message": PYDANTIC, "type": "internal_server_error"}}))
        }
        _ => answer(),
    }
}

/// A server that takes no `response_format` at all, refusing each form its own way.
fn takes_no_format(body: &Value) -> Reply {
    let with_schema = body.pointer("/response_format/schema").is_some();
    match (format_type(body), with_schema) {
        (Some("json_schema"), _) => status(
            422,
            vec![],
            json!({"detail": [{"loc": ["body", "response_format", "type"], "msg": "Input should be 'text'", "type": "literal_error"}]}),
        ),
        (Some("json_object"), true) => status(
            400,
            vec![],
            json!({"error": {"message": "Unrecognized request argument supplied: response_format.schema", "type": "invalid_request_error"}}),
        ),
        (Some(_), _) => {
            status(500, vec![], json!({"error": {"message": "response_format is not supported by this model"}}))
        }
        (None, _) => answer(),
    }
}

/// A server whose every answer is an error about the request, not the schema.
fn rejects_the_request(_: &Value) -> Reply {
    let message = "1 validation error:\n  {'type': 'less_than_equal', 'loc': ('body', 'max_completion_tokens'), 'msg': 'Input should be less than or equal to 512'}";
    status(500, vec![], json!({"error": {"message": message, "type": "internal_server_error"}}))
}

impl Ran {
    fn error(&self) -> String {
        failure(self)
    }

    fn formats(&self) -> Vec<Value> {
        self.requests.iter().map(|r| r.body.get("response_format").cloned().unwrap_or(Value::Null)).collect()
    }

    fn downgrades(&self) -> Vec<(OutputDialect, OutputDialect)> {
        self.events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::DialectDowngraded { from, to, .. } => Some((*from, *to)),
                _ => None,
            })
            .collect()
    }

    fn started_with(&self) -> Option<OutputDialect> {
        self.events.iter().find_map(|e| match &e.kind {
            EventKind::SchemaLowered { dialect, .. } => *dialect,
            _ => None,
        })
    }

    fn retries(&self) -> usize {
        self.events.iter().filter(|e| matches!(e.kind, EventKind::ProviderRetry { .. })).count()
    }
}

/// Runs the one-reviewer conclave against `server` (the agent on `setting`, the
/// provider with `env_dialect` as OPENAI_OUTPUT_DIALECT) and returns what happened
/// since the server's earlier requests.
async fn run(
    server: &FakeServer,
    store: &Arc<dyn RunStore>,
    setting: Option<DialectSetting>,
    env_dialect: Option<&str>,
) -> Ran {
    let before = server.requests().len();
    let base = format!("{}/v1", server.base);
    let lookup = |name: &str| match name {
        "OPENAI_BASE_URL" => Some(base.clone()),
        "OPENAI_API_KEY" => Some(KEY.to_string()),
        "OPENAI_OUTPUT_DIALECT" => env_dialect.map(str::to_string),
        _ => None,
    };
    let mut providers = ProviderRegistry::default();
    providers.register(Arc::new(OpenAiProvider::from_env(&lookup)));
    let config = EngineConfig {
        retry: RetryPolicy { max_retries: 3, base: Duration::from_millis(10), cap: Duration::from_secs(1) },
        ..EngineConfig::default()
    };
    let engine = Engine::new(providers, store.clone(), config);
    let mut file = conclave(Vendor::OpenAiChat, false);
    if let Some(agent) = file.nodes.iter_mut().find_map(|n| n.agent.as_mut()) {
        agent.dialect = setting;
    }
    let handle =
        engine.start(checked(file), json!({"diff": "+fn main() {}"}), RunOptions::default()).await.expect("starts");
    let outcome = handle.wait().await;
    let events = store.events(&outcome.run_id, 0).await.expect("events");
    Ran { outcome, events, requests: server.requests().split_off(before) }
}

fn memory() -> Arc<dyn RunStore> {
    Arc::new(MemoryStore::new())
}

/// Runs one agent on `setting` (or the provider-wide `env`) against a server that takes
/// anything, and returns its one request's body and system prompt, checking that the
/// run succeeded and started with `expected`.
async fn one_request(setting: Option<DialectSetting>, env: Option<&str>, expected: OutputDialect) -> (Value, String) {
    let server = FakeServer::start(vec![answer()]).await;
    let ran = run(&server, &memory(), setting, env).await;
    assert_eq!(ran.outcome.status, RunStatus::Succeeded, "{expected}: {}", ran.error());
    assert_eq!(ran.requests.len(), 1, "{expected}");
    assert_eq!(ran.started_with(), Some(expected));
    let body = ran.requests[0].body.clone();
    let system = body.pointer("/messages/0/content").and_then(Value::as_str).unwrap_or_default().to_string();
    (body, system)
}

/// Whether the prompt contract (the schema rendered as text) is in a system prompt.
fn has_contract(system: &str) -> bool {
    system.contains("\"verdict\"")
}

#[tokio::test]
async fn json_schema_sends_the_strict_lowering_nested() {
    let (body, system) = one_request(Some(DialectSetting::JsonSchema), None, OutputDialect::JsonSchema).await;
    assert_eq!(body["response_format"]["type"], "json_schema");
    assert_eq!(body["response_format"]["json_schema"]["strict"], true);
    // The strict lowering: every property required, the optional one nullable.
    assert_eq!(body["response_format"]["json_schema"]["schema"]["required"], json!(["verdict", "line", "note"]));
    assert!(!has_contract(&system), "{system}");
}

#[tokio::test]
async fn json_object_schema_sends_the_grammar_lowering_inside_json_object() {
    let (body, system) =
        one_request(Some(DialectSetting::JsonObjectSchema), None, OutputDialect::JsonObjectSchema).await;
    assert_eq!(body["response_format"]["type"], "json_object");
    // Lowered for a grammar: the author's optional property stays optional.
    let schema = &body["response_format"]["schema"];
    assert_eq!(schema["required"], json!(["verdict", "line"]), "{schema}");
    assert_eq!(schema["properties"]["note"]["type"], "string", "{schema}");
    assert!(!has_contract(&system), "{system}");
}

#[tokio::test]
async fn json_object_sends_json_mode_and_the_contract_in_the_prompt() {
    let (body, system) = one_request(Some(DialectSetting::JsonObject), None, OutputDialect::JsonObject).await;
    assert_eq!(body["response_format"], json!({"type": "json_object"}));
    assert!(has_contract(&system), "the contract is in the prompt: {system}");
    // The provider-wide setting applies when the agent sets none.
    let (body, _) = one_request(None, Some("json_object"), OutputDialect::JsonObject).await;
    assert_eq!(body["response_format"], json!({"type": "json_object"}));
}

#[tokio::test]
async fn prompt_sends_no_response_format_and_the_contract_in_the_prompt() {
    let (body, system) = one_request(Some(DialectSetting::Prompt), None, OutputDialect::Prompt).await;
    assert!(body.get("response_format").is_none(), "{body}");
    assert!(has_contract(&system), "the contract is in the prompt: {system}");
}

#[tokio::test]
async fn auto_walks_the_whole_chain_once_and_the_store_remembers_where_it_ended() {
    let server = FakeServer::start_responding(takes_no_format).await;
    let store = memory();
    let first = run(&server, &store, None, None).await;
    assert_eq!(first.outcome.status, RunStatus::Succeeded, "{}", first.error());
    assert_eq!(first.started_with(), Some(OutputDialect::JsonSchema));
    let formats = first.formats();
    let types: Vec<Option<&str>> = formats.iter().map(|f| f["type"].as_str()).collect();
    assert_eq!(types, vec![Some("json_schema"), Some("json_object"), Some("json_object"), None]);
    assert!(formats[1].get("schema").is_some() && formats[2].get("schema").is_none());
    assert_eq!(
        first.downgrades(),
        vec![
            (OutputDialect::JsonSchema, OutputDialect::JsonObjectSchema),
            (OutputDialect::JsonObjectSchema, OutputDialect::JsonObject),
            (OutputDialect::JsonObject, OutputDialect::Prompt),
        ]
    );
    assert_eq!(first.retries(), 0, "a rejected dialect is stepped down from, not retried");
    let note = first.events.iter().find_map(|e| match &e.kind {
        EventKind::DialectDowngraded { note, .. } => Some(note.message.clone()),
        _ => None,
    });
    let note = note.expect("a lowering note");
    assert!(note.contains(&server.base) && note.contains("json_schema") && note.contains("Input should be"), "{note}");
    // The next run against the same server starts where this one ended.
    let second = run(&server, &store, None, None).await;
    assert_eq!(second.outcome.status, RunStatus::Succeeded, "{}", second.error());
    assert_eq!(second.started_with(), Some(OutputDialect::Prompt));
    assert_eq!(second.requests.len(), 1, "no rejected first call");
    assert_eq!(second.formats(), vec![Value::Null]);
    assert!(second.downgrades().is_empty());
}

#[tokio::test]
async fn a_llama_cpp_python_style_rejection_steps_down_once_to_the_schema_in_json_object() {
    let server = FakeServer::start_responding(like_llama_cpp_python).await;
    let ran = run(&server, &memory(), None, None).await;
    assert_eq!(ran.outcome.status, RunStatus::Succeeded, "{}", ran.error());
    assert_eq!(ran.downgrades(), vec![(OutputDialect::JsonSchema, OutputDialect::JsonObjectSchema)]);
    assert_eq!(ran.requests.len(), 2);
    assert_eq!(ran.formats()[1]["type"], "json_object");
    assert!(ran.formats()[1]["schema"].is_object());
}

#[tokio::test]
async fn a_rejected_request_is_not_retried_as_if_it_could_pass() {
    // A fixed dialect the server rejects: one request, then a failure saying what to do.
    let server = FakeServer::start_responding(like_llama_cpp_python).await;
    let ran = run(&server, &memory(), Some(DialectSetting::JsonSchema), None).await;
    assert_eq!(ran.outcome.status, RunStatus::Failed);
    assert_eq!(ran.requests.len(), 1, "not retried 4 times");
    assert_eq!(ran.retries(), 0);
    let error = ran.error();
    assert!(
        error.contains("`json_schema`") && error.contains("OPENAI_OUTPUT_DIALECT") && error.contains(&server.base),
        "{error}"
    );
    // A request error the server reports as HTTP 500 is not retried either.
    let server = FakeServer::start_responding(rejects_the_request).await;
    let ran = run(&server, &memory(), Some(DialectSetting::Prompt), None).await;
    assert_eq!(ran.outcome.status, RunStatus::Failed);
    assert_eq!(ran.requests.len(), 1, "not retried 4 times");
    assert!(
        ran.error().contains("says the request is invalid") && ran.error().contains("test-model"),
        "{}",
        ran.error()
    );
    // A plain server fault still is: 1 try and 3 retries.
    let crash = status(500, vec![], json!({"error": {"message": "CUDA out of memory"}}));
    let server = FakeServer::start(vec![crash.clone(), crash.clone(), crash.clone(), crash]).await;
    let ran = run(&server, &memory(), None, None).await;
    assert_eq!((ran.requests.len(), ran.retries()), (4, 3));
}

#[tokio::test]
async fn unknown_models_and_proxy_pages_name_the_server_the_model_and_what_to_try() {
    let missing = status(
        404,
        vec![],
        json!({"error": {"message": "The model `test-model` does not exist", "code": "model_not_found"}}),
    );
    let page = Reply::Stream {
        content_type: "text/html; charset=utf-8",
        chunks: vec![
            "<!doctype html><html><head><title>Sign in to the proxy</title></head><body></body></html>".into(),
        ],
    };
    for (reply, expected) in [(missing, "/models"), (page, "Sign in to the proxy")] {
        let server = FakeServer::start(vec![reply]).await;
        let ran = run(&server, &memory(), None, None).await;
        assert_eq!(ran.outcome.status, RunStatus::Failed);
        assert_eq!(ran.requests.len(), 1, "not retried");
        let error = ran.error();
        assert!(error.contains(&server.base) && error.contains("test-model") && error.contains(expected), "{error}");
        assert!(!error.contains("cut off"), "{error}");
    }
}

#[tokio::test]
async fn a_server_that_does_not_stream_is_read_whole() {
    let whole = json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "test-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": ANSWER}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 8, "total_tokens": 20}
    });
    let server = FakeServer::start(vec![status(200, vec![], whole)]).await;
    let ran = run(&server, &memory(), None, None).await;
    assert_eq!(ran.outcome.status, RunStatus::Succeeded, "{}", ran.error());
    assert_eq!(ran.outcome.outputs["reviewer"].to_input_value(), json!({"verdict": "approve", "line": 3}));
}

#[test]
fn each_built_in_provider_lowers_as_its_dialects_say() {
    let registry = conclave_providers::builtin_with_env(&|_| None, &[]);
    for dialect in Dialect::ALL {
        let Some(provider) = registry.get(dialect.provider()) else {
            assert!(cfg!(not(feature = "local")) && dialect == Dialect::Local, "{} is not built in", dialect.name());
            continue;
        };
        assert_eq!(provider.capabilities().native_schema, Some(dialect.target()), "{}", dialect.name());
        assert_eq!(native_target(dialect.provider()), Some(dialect.target()), "{}", dialect.name());
    }
    for name in conclave_providers::BUILTIN_PROVIDERS {
        assert!(Dialect::ALL.iter().any(|d| d.provider() == *name), "{name} has no dialect");
    }
    assert_eq!(native_target("fake"), None, "a name that is not built in has no lowering of its own");
}
