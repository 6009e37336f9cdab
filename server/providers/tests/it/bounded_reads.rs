//! What a provider reads is bounded: an error body that goes on far past any real
//! one (the fake server floods it), and a Claude Code CLI that prints an endless line
//! or never stops printing, each end the call with an error saying the output was
//! cut, after reading a bounded part of it.

use conclave_core::ProviderRegistry;
use conclave_providers::claude_code::ClaudeCodeProvider;
use conclave_providers::cli_output::OutputLimits;
use conclave_shared::{ErrorKind, RunStatus};
use conclave_testkit::wire::Vendor;
use conclave_testkit::{FLOOD_CEILING, FakeServer, Reply};
use std::path::Path;
use std::sync::Arc;

use crate::providers_http::{Ran, conclave, failure, run_on, run_with};

/// How an endless error body starts.
const START: &str = "upstream said: ";

/// The note a cut error body ends with.
const CUT: &str = "(the error body went on past 64 KiB; the rest was not read)";

/// The part of the body a message quotes: its first 2,000 characters.
fn quoted() -> String {
    format!("{START}{}", "x".repeat(2000 - START.len()))
}

/// The start of a failure, so a test that fails on a 64 MiB message prints little.
fn start_of(ran: &Ran) -> String {
    failure(ran).chars().take(4000).collect()
}

fn flood(status: u16, content_type: &'static str, start: &str) -> Reply {
    Reply::Flood { status, content_type, start: start.to_string() }
}

/// Checks that the run failed with `expected` and that the server sent a small part
/// of its flood: the client stopped reading long before the body's end.
fn assert_cut(ran: &Ran, server: &FakeServer, expected: &str) {
    assert_eq!(ran.outcome.status, RunStatus::Failed);
    assert_eq!(start_of(ran), expected);
    assert_eq!(ran.requests.len(), 1, "a refused request is not sent again");
    let sent = server.flooded();
    assert!(sent < FLOOD_CEILING / 2, "the client read on: the server sent {sent} of {FLOOD_CEILING} bytes");
}

#[tokio::test]
async fn an_endless_error_body_is_cut_at_64_kib_and_the_call_returns() {
    let server = FakeServer::start(vec![flood(400, "application/json", START)]).await;
    let ran = run_on(&server, Vendor::Anthropic, false).await;
    let expected = format!("node `reviewer` failed: request rejected by the provider: HTTP 400: {} {CUT}", quoted());
    assert_cut(&ran, &server, &expected);
}

#[tokio::test]
async fn an_openai_compatible_server_s_endless_error_body_is_cut_too() {
    let server = FakeServer::start(vec![flood(400, "application/json", START)]).await;
    let ran = run_on(&server, Vendor::OpenAiChat, false).await;
    let expected = format!(
        "node `reviewer` failed: request rejected by the provider: the OpenAI-compatible server at {}/v1 (model \
         `test-model`): HTTP 400: {} {CUT}",
        server.base,
        quoted()
    );
    assert_cut(&ran, &server, &expected);
}

#[tokio::test]
async fn an_endless_html_page_instead_of_an_answer_is_cut_too() {
    let page = "<html><head><title>Sign in</title></head><body>";
    let server = FakeServer::start(vec![flood(200, "text/html", page)]).await;
    let ran = run_on(&server, Vendor::OpenAiChat, false).await;
    let expected = format!(
        "node `reviewer` failed: request rejected by the provider: the OpenAI-compatible server at {0}/v1 (model \
         `test-model`) answered HTTP 200 with an HTML page titled \"Sign in\", not the OpenAI API: a proxy, gateway \
         or login page is in the way, or OPENAI_BASE_URL points at a web page rather than the API (it usually ends \
         in /v1) {CUT}",
        server.base
    );
    assert_cut(&ran, &server, &expected);
}

/// Small caps, so the tests read little: 64 KiB a line, 1 MiB in all.
const LIMITS: OutputLimits = OutputLimits { line: 64 << 10, total: 1 << 20 };

/// Runs a Claude Code agent whose CLI is the shell script `body`.
async fn run_cli(dir: &Path, body: &str) -> Ran {
    let script = dir.join("claude");
    std::fs::write(&script, format!("#!/bin/sh\n{body}\n")).expect("write the fake CLI");
    let mode = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::set_permissions(&script, mode).expect("make it executable");
    let bin = script.display().to_string();
    let provider = ClaudeCodeProvider::from_env(&|name| (name == "CONCLAVE_CLAUDE_BIN").then(|| bin.clone()));
    let mut providers = ProviderRegistry::default();
    providers.register(Arc::new(provider.with_output_limits(LIMITS)));
    let mut file = conclave(Vendor::Anthropic, false);
    if let Some(agent) = file.nodes.iter_mut().find_map(|n| n.agent.as_mut()) {
        agent.provider = "claude-code".into();
    }
    run_with(providers, file, false, Vec::new).await
}

#[tokio::test]
async fn a_cli_line_past_the_cap_fails_the_call_without_reading_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    // One line of 64 MiB, a thousand times the cap, with no newline in sight.
    let ran = run_cli(dir.path(), "head -c 67108864 /dev/zero").await;
    assert_eq!(ran.outcome.status, RunStatus::Failed);
    assert_eq!(ran.outcome.error_kind, Some(ErrorKind::Provider));
    assert_eq!(
        start_of(&ran),
        "node `reviewer` failed: malformed response from the provider: the Claude Code CLI printed a line longer \
         than 65536 bytes; the rest of its output was not read"
    );
}

#[tokio::test]
async fn cli_output_past_the_cap_fails_the_call_without_reading_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    // 64 MiB of short, well-formed events that never reach a `result`.
    let ran = run_cli(dir.path(), r#"yes '{"type":"system","subtype":"status"}' | head -c 67108864"#).await;
    assert_eq!(ran.outcome.status, RunStatus::Failed);
    assert_eq!(
        start_of(&ran),
        "node `reviewer` failed: malformed response from the provider: the Claude Code CLI printed more than \
         1048576 bytes in all; the rest of its output was not read"
    );
}
