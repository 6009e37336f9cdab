//! OpenTelemetry traces from the real `conclave` binary: `conclave run` against a fake
//! OpenAI server with `OTEL_EXPORTER_OTLP_ENDPOINT` pointing at a fake OTLP/HTTP
//! collector on loopback. The collector decodes what it receives and the tests check
//! the three span levels, their GenAI attributes and parent links, error status on a
//! failed call, and that prompts and answers travel only when capture is asked for.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::http::header::CONTENT_TYPE;
use axum::routing::post;
use conclave_shared::{AgentConfig, Conclave, Edge, Node, NodeKind, Settings};
use conclave_testkit::wire::{Vendor, status};
use conclave_testkit::{FakeServer, Reply};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::trace::v1::{Span, span::SpanKind, status::StatusCode as SpanStatus};
use prost::Message;
use serde_json::json;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// What the run is asked, and what the model answers: neither may leave the machine
/// unless capture is on.
const PROMPT: &str = "prompt-marker-5e1f: is this change safe?";
const ANSWER: &str = "answer-marker-9c2d: it is safe";

/// A fake OTLP/HTTP collector: it keeps every export request's body.
struct Collector {
    base: String,
    bodies: Arc<Mutex<Vec<Bytes>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Collector {
    async fn start() -> Collector {
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let app = axum::Router::new().route("/v1/traces", post(receive)).with_state(bodies.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Collector { base, bodies, task }
    }

    /// Every span received, decoded.
    fn spans(&self) -> Vec<Span> {
        let bodies = self.bodies.lock().expect("lock").clone();
        bodies
            .iter()
            .flat_map(|body| {
                ExportTraceServiceRequest::decode(body.as_ref()).expect("an OTLP protobuf export").resource_spans
            })
            .flat_map(|r| r.scope_spans)
            .flat_map(|s| s.spans)
            .collect()
    }

    /// Everything received, as text, to search for leaked content.
    fn raw(&self) -> String {
        self.bodies.lock().expect("lock").iter().map(|b| String::from_utf8_lossy(b).into_owned()).collect()
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn receive(
    State(bodies): State<Arc<Mutex<Vec<Bytes>>>>,
    body: Bytes,
) -> (StatusCode, [(axum::http::HeaderName, &'static str); 1], Vec<u8>) {
    bodies.lock().expect("lock").push(body);
    // An empty message is a complete ExportTraceServiceResponse.
    (StatusCode::OK, [(CONTENT_TYPE, "application/x-protobuf")], Vec::new())
}

/// A workspace with conclave `traced`: the trigger, then agent `reviewer` on OpenAI.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut agent = AgentConfig::new("openai");
    agent.model = "test-model".into();
    let node = |id: &str, label: &str, kind, agent| Node { label: label.into(), agent, ..Node::new(id, kind) };
    let conclave = Conclave {
        version: 1,
        id: "traced".into(),
        name: "Traced".into(),
        description: String::new(),
        settings: Settings::default(),
        nodes: vec![
            node("input", "Input", NodeKind::Trigger, None),
            node("reviewer", "Reviewer", NodeKind::Agent, Some(agent)),
        ],
        edges: vec![Edge { from: "input".into(), to: "reviewer".into(), case: None }],
    };
    std::fs::create_dir_all(dir.path().join("conclaves")).expect("mkdir");
    std::fs::write(dir.path().join("conclaves/traced.conclave.json"), conclave.to_file_text()).expect("write");
    dir
}

/// `conclave run traced` with the OpenAI fake at `llm` and traces sent to `collector`.
async fn run_traced(dir: &Path, llm: &str, collector: &str, capture: bool) -> std::process::Output {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_conclave"));
    cmd.args(["run", "traced", "--input", PROMPT])
        .current_dir(dir)
        .env("CONCLAVE_DB", dir.join("runs.db"))
        .env("CONCLAVE_CONFIG_DIR", dir.join("config"))
        .env("CONCLAVE_PROVIDER_RETRIES", "0");
    for (name, _) in std::env::vars().filter(|(name, _)| name.starts_with("OTEL_")) {
        cmd.env_remove(name);
    }
    for var in ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OLLAMA_HOST"] {
        cmd.env_remove(var);
    }
    for (k, v) in Vendor::OpenAiChat.env(llm, "sk-test-traces") {
        cmd.env(k, v);
    }
    cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", collector);
    if capture {
        cmd.env("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true");
    }
    cmd.output().await.expect("conclave runs")
}

fn attribute(span: &Span, key: &str) -> Option<String> {
    let value = span.attributes.iter().find(|a| a.key == key)?.value.as_ref()?.value.as_ref()?;
    Some(match value {
        Any::StringValue(s) => s.clone(),
        Any::IntValue(n) => n.to_string(),
        Any::BoolValue(b) => b.to_string(),
        Any::DoubleValue(d) => d.to_string(),
        other => format!("{other:?}"),
    })
}

fn named<'a>(spans: &'a [Span], name: &str) -> &'a Span {
    let found: Vec<&Span> = spans.iter().filter(|s| s.name == name).collect();
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(found.len(), 1, "one span `{name}` among {names:?}");
    found[0]
}

fn is_error(span: &Span) -> bool {
    span.status.as_ref().is_some_and(|s| s.code == SpanStatus::Error as i32)
}

/// The workflow, agent and chat spans of one run, checked to be one trace of three
/// levels with the GenAI attributes every run has.
fn three_levels(spans: &[Span]) -> (&Span, &Span, &Span) {
    let workflow = named(spans, "invoke_workflow traced");
    let agent = named(spans, "invoke_agent reviewer");
    let chat = named(spans, "chat test-model");
    assert!(workflow.parent_span_id.is_empty(), "the run's span is the root");
    assert_eq!(agent.parent_span_id, workflow.span_id, "the agent runs in the run");
    assert_eq!(chat.parent_span_id, agent.span_id, "the call is the agent's");
    assert!([agent, chat].iter().all(|s| s.trace_id == workflow.trace_id));
    let a = |span, key| attribute(span, key);
    assert_eq!(a(workflow, "gen_ai.operation.name").as_deref(), Some("invoke_workflow"));
    assert_eq!(a(workflow, "gen_ai.workflow.name").as_deref(), Some("traced"));
    assert_eq!(a(agent, "gen_ai.operation.name").as_deref(), Some("invoke_agent"));
    assert_eq!(a(agent, "gen_ai.agent.id").as_deref(), Some("reviewer"));
    assert_eq!(a(agent, "gen_ai.agent.name").as_deref(), Some("Reviewer"));
    assert_eq!(a(chat, "gen_ai.operation.name").as_deref(), Some("chat"));
    for span in [agent, chat] {
        assert_eq!(a(span, "gen_ai.provider.name").as_deref(), Some("openai"), "{}", span.name);
        assert_eq!(a(span, "gen_ai.request.model").as_deref(), Some("test-model"), "{}", span.name);
    }
    assert_eq!(chat.kind, SpanKind::Client as i32);
    (workflow, agent, chat)
}

#[tokio::test]
async fn a_run_exports_workflow_agent_and_chat_spans_without_content_unless_asked() {
    let (quiet, captured, failing) = (workspace(), workspace(), workspace());
    let (quiet_llm, captured_llm) = (
        FakeServer::start(vec![Vendor::OpenAiChat.answer(ANSWER)]).await,
        FakeServer::start(vec![Vendor::OpenAiChat.answer(ANSWER)]).await,
    );
    let refusal: Reply = status(400, Vec::new(), json!({"error": {"message": "unsupported parameter"}}));
    let failing_llm = FakeServer::start(vec![refusal]).await;
    let (quiet_otel, captured_otel, failing_otel) =
        (Collector::start().await, Collector::start().await, Collector::start().await);
    let (quiet_out, captured_out, failing_out) = tokio::join!(
        run_traced(quiet.path(), &quiet_llm.base, &quiet_otel.base, false),
        run_traced(captured.path(), &captured_llm.base, &captured_otel.base, true),
        run_traced(failing.path(), &failing_llm.base, &failing_otel.base, false),
    );
    assert_eq!(quiet_out.status.code(), Some(0), "{}", String::from_utf8_lossy(&quiet_out.stderr));
    assert_eq!(captured_out.status.code(), Some(0), "{}", String::from_utf8_lossy(&captured_out.stderr));
    assert_eq!(failing_out.status.code(), Some(3), "{}", String::from_utf8_lossy(&failing_out.stderr));

    let spans = quiet_otel.spans();
    let (workflow, agent, chat) = three_levels(&spans);
    for span in [agent, chat] {
        assert_eq!(attribute(span, "gen_ai.usage.input_tokens").as_deref(), Some("120"), "{}", span.name);
        assert_eq!(attribute(span, "gen_ai.usage.output_tokens").as_deref(), Some("42"), "{}", span.name);
    }
    assert!(![workflow, agent, chat].into_iter().any(is_error));
    assert_eq!(attribute(chat, "gen_ai.input.messages"), None, "capture is off");
    let raw = quiet_otel.raw();
    assert!(
        !raw.contains("prompt-marker-5e1f") && !raw.contains("answer-marker-9c2d"),
        "content left with capture off"
    );

    let spans = captured_otel.spans();
    let (_, _, chat) = three_levels(&spans);
    // The run input is shared by every agent of the run: it leads the system
    // instructions, where providers cache it.
    let system = attribute(chat, "gen_ai.system_instructions").expect("the instructions are captured");
    assert!(system.contains(PROMPT), "{system}");
    assert!(attribute(chat, "gen_ai.input.messages").is_some(), "the messages are captured");
    let output = attribute(chat, "gen_ai.output.messages").expect("the answer is captured");
    assert!(output.contains(ANSWER), "{output}");

    let spans = failing_otel.spans();
    let (workflow, agent, chat) = three_levels(&spans);
    assert!([workflow, agent, chat].into_iter().all(is_error), "a failed call fails its agent and its run");
    assert_eq!(attribute(chat, "error.type").as_deref(), Some("bad_request"));
    assert_eq!(attribute(agent, "error.type").as_deref(), Some("provider"));
    assert_eq!(attribute(workflow, "error.type").as_deref(), Some("failed"));
    assert!(!failing_otel.raw().contains("unsupported parameter"), "an error's message may quote the model");
}

#[tokio::test]
async fn a_collector_that_cannot_be_reached_changes_nothing_about_the_run() {
    let dir = workspace();
    let llm = FakeServer::start(vec![Vendor::OpenAiChat.answer(ANSWER)]).await;
    // A port that was free a moment ago: nothing listens there.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind").local_addr().expect("addr");
    let started = std::time::Instant::now();
    let out = run_traced(dir.path(), &llm.base, &format!("http://{closed}"), false).await;
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(started.elapsed() < std::time::Duration::from_secs(20), "exit is not held up: {:?}", started.elapsed());
}
