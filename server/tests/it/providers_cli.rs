//! The real `conclave` binary against fake vendor servers on loopback: exit codes for
//! exhausted structured-output attempts and missing keys, and proof that keys never
//! reach stored runs, errors or log lines.

use conclave_shared::{AgentConfig, Conclave, Edge, Node, NodeKind, OpenAiApi, Settings};
use conclave_testkit::FakeServer;
use conclave_testkit::wire::{Vendor, status};
use serde_json::json;
use std::path::Path;
use std::process::Output;

const KEY: &str = "sk-test-SECRET-9f8e7d6c5b4a";
const INVALID: &str = r#"{"verdict":"maybe"}"#;

fn write_conclave(dir: &Path, vendor: Vendor) {
    let mut agent = AgentConfig::new(vendor.provider());
    agent.model = "test-model".into();
    agent.output_schema = Some(json!({
        "type": "object",
        "properties": {"verdict": {"type": "string", "enum": ["approve", "reject"]}},
        "required": ["verdict"]
    }));
    if vendor == Vendor::OpenAiResponses {
        agent.api = Some(OpenAiApi::Responses);
    }
    let node = |id: &str, kind, agent| Node { agent, ..Node::new(id, kind) };
    let conclave = Conclave {
        version: 1,
        id: "single".into(),
        name: "Single".into(),
        description: String::new(),
        settings: Settings::default(),
        nodes: vec![node("input", NodeKind::Trigger, None), node("reviewer", NodeKind::Agent, Some(agent))],
        edges: vec![Edge { from: "input".into(), to: "reviewer".into(), case: None }],
    };
    std::fs::create_dir_all(dir.join("conclaves")).expect("mkdir");
    std::fs::write(dir.join("conclaves/single.conclave.json"), conclave.to_file_text()).expect("write");
}

async fn conclave_run(dir: &Path, env: &[(&str, String)]) -> Output {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_conclave"));
    cmd.args(["run", "single", "--input", "review this"])
        .current_dir(dir)
        .env("CONCLAVE_DB", dir.join("runs.db"))
        .env("CONCLAVE_CONFIG_DIR", dir.join("config"))
        .env("CONCLAVE_LOG", "trace")
        .env("CONCLAVE_PROVIDER_RETRIES", "1");
    for var in ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "OLLAMA_HOST"] {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().await.expect("conclave runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

const VENDORS: [Vendor; 4] = [Vendor::Anthropic, Vendor::OpenAiChat, Vendor::OpenAiResponses, Vendor::Ollama];

#[tokio::test]
async fn three_invalid_answers_exit_4_with_a_typed_failure() {
    for vendor in VENDORS {
        let dir = tempfile::tempdir().expect("tempdir");
        write_conclave(dir.path(), vendor);
        let server =
            FakeServer::start(vec![vendor.answer(INVALID), vendor.answer(INVALID), vendor.answer(INVALID)]).await;
        let out = conclave_run(dir.path(), &vendor.env(&server.base, KEY)).await;
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(4), "{vendor:?}: {stderr}");
        assert!(
            stderr.contains("output still invalid after 3 attempt(s): /verdict: \"maybe\" is not one of"),
            "{vendor:?}: {stderr}"
        );
        assert_eq!(server.requests().len(), 3, "{vendor:?}");
    }
}

#[tokio::test]
async fn a_missing_key_is_a_configuration_error_naming_the_variable() {
    for (vendor, variable) in [(Vendor::Anthropic, "ANTHROPIC_API_KEY"), (Vendor::OpenAiChat, "OPENAI_API_KEY")] {
        let dir = tempfile::tempdir().expect("tempdir");
        write_conclave(dir.path(), vendor);
        let out = conclave_run(dir.path(), &[]).await;
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{vendor:?}: {stderr}");
        assert!(stderr.contains(&format!("{variable} is not set")), "{vendor:?}: {stderr}");
        assert!(
            !dir.path().join("runs.db").exists()
                || text(&std::fs::read(dir.path().join("runs.db")).expect("db")).find("\"run_started\"").is_none()
        );
    }
}

#[tokio::test]
async fn keys_never_reach_stored_runs_errors_or_logs() {
    for vendor in [Vendor::Anthropic, Vendor::OpenAiChat, Vendor::OpenAiResponses] {
        let dir = tempfile::tempdir().expect("tempdir");
        write_conclave(dir.path(), vendor);
        let echo = json!({"error": {"message": format!("Incorrect API key provided: {KEY}")}});
        let scripts = vec![
            vec![status(401, vec![], echo.clone())],
            vec![status(500, vec![], echo.clone()), status(500, vec![], echo.clone())],
            vec![vendor.answer(INVALID), vendor.answer(INVALID), vendor.answer(r#"{"verdict":"approve"}"#)],
        ];
        let mut seen = String::new();
        for script in scripts {
            let server = FakeServer::start(script).await;
            let out = conclave_run(dir.path(), &vendor.env(&server.base, KEY)).await;
            seen.push_str(&text(&out.stdout));
            seen.push_str(&text(&out.stderr));
            let sent_key = server.requests().iter().any(|r| format!("{:?}", r.headers).contains(KEY));
            assert!(sent_key, "{vendor:?}: the key must reach the provider itself");
        }
        assert!(seen.contains("authentication failed"), "{vendor:?}: the runs really failed: {seen}");
        assert!(seen.contains("calling the provider"), "{vendor:?}: debug logs were captured: {seen}");
        assert!(
            seen.contains("provider call failed: authentication failed"),
            "{vendor:?}: error logs were captured: {seen}"
        );
        for file in ["runs.db", "runs.db-wal"] {
            if let Ok(bytes) = std::fs::read(dir.path().join(file)) {
                assert!(!text(&bytes).contains(KEY), "{vendor:?}: the key is in {file}");
            }
        }
        let show = std::process::Command::new(env!("CARGO_BIN_EXE_conclave"))
            .args(["runs", "list", "--json"])
            .current_dir(dir.path())
            .env("CONCLAVE_DB", dir.path().join("runs.db"))
            .output()
            .expect("runs list");
        seen.push_str(&text(&show.stdout));
        assert!(!seen.contains(KEY), "{vendor:?}: the key appeared in output or logs:\n{seen}");
        assert!(seen.contains("[redacted]"), "{vendor:?}: the echoed key was redacted, not just absent: {seen}");
    }
}

/// An OpenAI Chat Completions stream of these raw SSE chunks.
fn chat_stream(chunks: &[String]) -> conclave_testkit::Reply {
    conclave_testkit::Reply::Stream { content_type: "text/event-stream", chunks: chunks.to_vec() }
}

fn delta(text: &str) -> String {
    let chunk = json!({"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]});
    format!("data: {chunk}\n\n")
}

#[tokio::test]
async fn the_key_in_six_disguises_never_reaches_an_artifact() {
    let escaped: String = KEY.chars().map(|c| format!("\\u{:04x}", c as u32)).collect();
    let half_escaped: String = KEY
        .chars()
        .enumerate()
        .map(|(i, c)| if i % 3 == 0 { format!("\\u{:04X}", c as u32) } else { c.to_string() })
        .collect();
    let percent: String = KEY.chars().map(|c| format!("%{:02X}", c as u32)).collect();
    let (head, tail) = KEY.split_at(9);
    let scripts: Vec<(&str, Vec<conclave_testkit::Reply>)> = vec![
        (
            "echoed raw in an error body",
            vec![status(401, vec![], json!({"error": {"message": format!("Incorrect API key provided: {KEY}")}}))],
        ),
        (
            "JSON-escaped in an error body",
            vec![status(400, vec![], json!({"error": {"message": "see below"}, "detail": format!("key {escaped}")}))],
        ),
        (
            "split across two stream chunks",
            vec![chat_stream(&[
                delta(&format!("the key is {head}")),
                delta(&format!("{tail} ok")),
                "data: [DONE]\n\n".into(),
            ])],
        ),
        ("in a malformed stream chunk", vec![chat_stream(&[format!("data: {{not json {KEY}\n\n")])]),
        (
            "in a stream error chunk, partly escaped",
            vec![chat_stream(&[format!("data: {{\"error\": {{\"message\": \"leaked {half_escaped}\"}}}}\n\n")])],
        ),
        (
            "percent-encoded in an answer",
            vec![chat_stream(&[delta(&format!("url?key={percent}")), "data: [DONE]\n\n".into()])],
        ),
    ];
    let mut seen = String::new();
    let dir = tempfile::tempdir().expect("tempdir");
    write_conclave(dir.path(), Vendor::OpenAiChat);
    for (disguise, script) in scripts {
        let server = FakeServer::start(script.into_iter().cycle().take(6).collect()).await;
        let out = conclave_run(dir.path(), &Vendor::OpenAiChat.env(&server.base, KEY)).await;
        assert_ne!(out.status.code(), Some(0), "{disguise}: the run failed as scripted");
        seen.push_str(&text(&out.stdout));
        seen.push_str(&text(&out.stderr));
    }
    // The sixth disguise: a password in a provider URL, in a transport error.
    write_conclave(dir.path(), Vendor::Ollama);
    let out = conclave_run(dir.path(), &[("OLLAMA_HOST", "http://reviewer:hunter2-pass@127.0.0.1:9".into())]).await;
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    seen.push_str(&text(&out.stdout));
    seen.push_str(&text(&out.stderr));
    let runs = std::process::Command::new(env!("CARGO_BIN_EXE_conclave"))
        .args(["runs", "list", "--json", "--limit", "100"])
        .current_dir(dir.path())
        .env("CONCLAVE_DB", dir.path().join("runs.db"))
        .output()
        .expect("runs list");
    let list: serde_json::Value = serde_json::from_slice(&runs.stdout).expect("json");
    for run in list.as_array().expect("runs") {
        let show = std::process::Command::new(env!("CARGO_BIN_EXE_conclave"))
            .args(["runs", "show", "--json", run["id"].as_str().expect("id")])
            .current_dir(dir.path())
            .env("CONCLAVE_DB", dir.path().join("runs.db"))
            .output()
            .expect("runs show");
        seen.push_str(&text(&show.stdout));
    }
    for file in ["runs.db", "runs.db-wal"] {
        if let Ok(bytes) = std::fs::read(dir.path().join(file)) {
            seen.push_str(&text(&bytes));
        }
    }
    for secret in [KEY, &escaped, &half_escaped, &percent, "hunter2-pass", "9f8e7d6c5b4a"] {
        assert!(!seen.contains(secret), "`{secret}` reached an artifact");
    }
    assert!(seen.contains("[redacted]"), "the echoes were redacted, not lost");
    assert!(seen.contains("http://[redacted]@127.0.0.1:9"), "the URL is shown without its credentials");
}

/// Like llama-cpp-python's server: a nested `json_schema` is refused with HTTP 500,
/// the schema inside `json_object` is answered.
fn like_llama_cpp_python(body: &serde_json::Value) -> conclave_testkit::Reply {
    if body.pointer("/response_format/type").and_then(serde_json::Value::as_str) == Some("json_schema") {
        let message =
            "1 validation error: ('body', 'response_format', 'type'): Input should be 'text' or 'json_object'";
        return status(500, vec![], json!({"error": {"message": message, "type": "internal_server_error"}}));
    }
    conclave_testkit::answers::chat_completion_answer(body)
}

#[tokio::test]
async fn a_probe_remembers_the_dialect_so_the_next_run_sends_no_rejected_call() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_conclave(dir.path(), Vendor::OpenAiChat);
    let server = FakeServer::start_responding(like_llama_cpp_python).await;
    let env = [("OPENAI_BASE_URL", format!("{}/v1", server.base)), ("OPENAI_API_KEY", KEY.to_string())];
    let probe = tokio::process::Command::new(env!("CARGO_BIN_EXE_conclave"))
        .args(["providers", "--probe", "--provider", "openai"])
        .current_dir(dir.path())
        .env("CONCLAVE_DB", dir.path().join("runs.db"))
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .await
        .expect("probe runs");
    let said = text(&probe.stdout);
    assert_eq!(probe.status.code(), Some(0), "{said}{}", text(&probe.stderr));
    assert!(said.contains("dialect json_object_schema") && said.contains("rejected json_schema"), "{said}");
    assert!(said.contains("remembered: runs against") && !said.contains(KEY), "{said}");
    let probed = server.requests().len();
    assert_eq!(probed, 2, "one rejected dialect, one accepted");

    let out = conclave_run(dir.path(), &env).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let types: Vec<serde_json::Value> =
        server.requests()[probed..].iter().map(|r| r.body["response_format"]["type"].clone()).collect();
    assert_eq!(types, [json!("json_object")], "the run starts with what the probe found");
}
