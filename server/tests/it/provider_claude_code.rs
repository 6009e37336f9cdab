//! The `claude-code` provider through the real binary, with a fake `claude`
//! executable replaying recorded stream-json transcripts.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Output;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/claude")
}

fn write_conclave(dir: &Path) {
    let conclave = json!({
        "version": 1, "id": "cc", "name": "Claude Code",
        "nodes": [
            {"id": "input", "kind": "trigger", "label": "Input", "position": {"x": 0, "y": 0}},
            {"id": "reviewer", "kind": "agent", "label": "Reviewer", "position": {"x": 200, "y": 0}, "agent": {
                "provider": "claude-code", "model": "sonnet", "system_prompt": "Review the change.",
                "output_schema": {"type": "object", "properties": {"verdict": {"type": "string", "enum": ["approve", "reject"]}}, "required": ["verdict"]}
            }}
        ],
        "edges": [{"from": "input", "to": "reviewer"}]
    });
    std::fs::create_dir_all(dir.join("conclaves")).expect("mkdir");
    std::fs::write(dir.join("conclaves/cc.conclave.json"), serde_json::to_string_pretty(&conclave).expect("json"))
        .expect("write");
}

fn conclave(dir: &Path, args: &[&str], transcript: &str) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_conclave"))
        .args(args)
        .current_dir(dir)
        .env("CONCLAVE_DB", dir.join("runs.db"))
        .env("CONCLAVE_CLAUDE_BIN", fixtures().join("fake-claude"))
        .env("CLAUDE_FAKE_TRANSCRIPT", fixtures().join(transcript))
        .env("CLAUDE_FAKE_LOG", dir.join("claude"))
        .env("OPENAI_API_KEY", "sk-unrelated-secret")
        .env("AWS_SECRET_ACCESS_KEY", "aws-unrelated-secret")
        .env("ANTHROPIC_API_KEY", "sk-ant-for-claude")
        .output()
        .expect("conclave runs")
}

#[test]
fn a_successful_transcript_gives_the_structured_output_and_streams_events_live() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_conclave(dir.path());
    let out = conclave(dir.path(), &["run", "cc", "--input", "the diff"], "success.jsonl");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let result: Value = serde_json::from_slice(&out.stdout).expect("JSON result");
    assert_eq!(result, Value::Null, "no output node: the result is empty");

    let args = std::fs::read_to_string(dir.path().join("claude.args")).expect("args recorded");
    let args: Vec<&str> = args.lines().collect();
    assert_eq!(&args[..4], &["-p", "--output-format", "stream-json", "--verbose"]);
    let schema_at = args.iter().position(|a| *a == "--json-schema").expect("--json-schema passed");
    let schema: Value = serde_json::from_str(args[schema_at + 1]).expect("schema argument is JSON");
    assert_eq!(schema["properties"]["verdict"]["enum"], json!(["approve", "reject"]));
    assert!(args.windows(2).any(|w| w == ["--model", "sonnet"]), "{args:?}");
    assert!(args.windows(2).any(|w| w == ["--tools", "Read,Grep,Glob"]), "read-only tools only: {args:?}");
    assert!(args.windows(2).any(|w| w == ["--max-turns", "8"]), "the agent's turn limit: {args:?}");
    let schema_at = args.iter().position(|a| *a == "--json-schema").expect("a schema") + 1;
    assert!(!args[schema_at].contains("$schema"), "no draft 2020-12 metadata for the CLI's validator");
    // The run input leads the system prompt (it is the prefix every agent shares),
    // then the agent's own instructions; the prompt points at it.
    let system = std::fs::read_to_string(dir.path().join("claude.args")).expect("args recorded");
    assert!(system.contains("--append-system-prompt\n## Run input\n\nthe diff\n\nReview the change.\n"), "{system}");
    let stdin = std::fs::read_to_string(dir.path().join("claude.stdin")).expect("stdin recorded");
    assert!(
        stdin.starts_with("Do what your instructions say with the run input given above."),
        "the prompt points at the input: {stdin}"
    );

    let env = std::fs::read_to_string(dir.path().join("claude.env")).expect("env recorded");
    assert!(
        !env.contains("sk-unrelated-secret") && !env.contains("aws-unrelated-secret"),
        "unrelated secrets leaked:\n{env}"
    );
    assert!(env.contains("ANTHROPIC_API_KEY=sk-ant-for-claude"), "the CLI keeps its own key");
    assert!(env.lines().any(|l| l.starts_with("PATH=")));

    let show = std::process::Command::new(env!("CARGO_BIN_EXE_conclave"))
        .args(["runs", "list", "--json"])
        .current_dir(dir.path())
        .env("CONCLAVE_DB", dir.path().join("runs.db"))
        .output()
        .expect("runs list");
    let runs: Value = serde_json::from_slice(&show.stdout).expect("json");
    let id = runs[0]["id"].as_str().expect("run id").to_string();
    let show = std::process::Command::new(env!("CARGO_BIN_EXE_conclave"))
        .args(["runs", "show", "--json", &id])
        .current_dir(dir.path())
        .env("CONCLAVE_DB", dir.path().join("runs.db"))
        .output()
        .expect("runs show");
    let doc: Value = serde_json::from_slice(&show.stdout).expect("json");
    let events = doc["events"].as_array().expect("events");
    let at = |ty: &str| {
        let event = events.iter().find(|e| e["type"] == ty && e["node_id"] == "reviewer");
        event.and_then(|e| e["at_ms"].as_u64()).unwrap_or_else(|| panic!("no {ty} for the reviewer"))
    };
    let tool = events.iter().find(|e| e["type"] == "tool_call").expect("tool call forwarded");
    assert_eq!((tool["tool"].as_str(), &tool["arguments"]), (Some("Read"), &json!({"file_path": "src/lib.rs"})));
    assert!(at("node_completed") >= at("text_delta") + 500, "events are forwarded while the CLI runs, not at its end");
    let reviewer = doc["run"]["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .find(|n| n["node_id"] == "reviewer")
        .cloned()
        .expect("node");
    assert_eq!(reviewer["output"], json!({"format": "json", "value": {"verdict": "approve"}}));
    assert_eq!(reviewer["usage"], json!({"input_tokens": 321, "output_tokens": 45, "cost_usd": 0.0123}));
}

#[test]
fn exhausted_structured_output_retries_exit_4() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_conclave(dir.path());
    let out = conclave(dir.path(), &["run", "cc"], "max-structured-output-retries.jsonl");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(stderr.contains("error_max_structured_output_retries"), "{stderr}");
}

#[test]
fn a_missing_cli_is_a_configuration_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_conclave(dir.path());
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_conclave"))
        .args(["run", "cc"])
        .current_dir(dir.path())
        .env("CONCLAVE_DB", dir.path().join("runs.db"))
        .env("CONCLAVE_CLAUDE_BIN", dir.path().join("no-such-claude"))
        .output()
        .expect("conclave runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("CONCLAVE_CLAUDE_BIN"), "{stderr}");
}

/// The real Claude Code CLI, installed from npm by `scripts/fetch-claude.sh`.
fn real_claude() -> PathBuf {
    conclave_testkit::cached_tool("claude-code/node_modules/.bin/claude", "scripts/fetch-claude.sh")
}

#[test]
fn the_real_cli_accepts_the_findings_schema_and_a_missing_login_is_exit_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let conclave = json!({
        "version": 1, "id": "cc", "name": "Claude Code",
        "nodes": [
            {"id": "input", "kind": "trigger", "label": "Input", "position": {"x": 0, "y": 0}},
            {"id": "reviewer", "kind": "agent", "label": "Reviewer", "position": {"x": 200, "y": 0}, "agent": {
                "provider": "claude-code", "model": "sonnet", "system_prompt": "Review the change.",
                "output_schema_ref": "review.findings.v1"
            }}
        ],
        "edges": [{"from": "input", "to": "reviewer"}]
    });
    std::fs::create_dir_all(dir.path().join("conclaves")).expect("mkdir");
    std::fs::write(dir.path().join("conclaves/cc.conclave.json"), conclave.to_string()).expect("write");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).expect("mkdir");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_conclave"))
        .args(["run", "cc", "--input", "the diff"])
        .current_dir(dir.path())
        .env("CONCLAVE_DB", dir.path().join("runs.db"))
        .env("CONCLAVE_CLAUDE_BIN", real_claude())
        // A home with no login, and no key: the CLI cannot sign in.
        .env("HOME", &home)
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("XDG_CONFIG_HOME")
        .output()
        .expect("conclave runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("is not a valid JSON Schema"), "the CLI refused the schema: {stderr}");
    assert!(stderr.contains("the Claude Code CLI cannot sign in"), "{stderr}");
    assert_eq!(out.status.code(), Some(2), "not logged in is a configuration error: {stderr}");
    assert!(!stderr.contains("provider_retry") && !stderr.contains("retry 1"), "it is not retried: {stderr}");
}
