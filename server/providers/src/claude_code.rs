//! The Claude Code CLI as a provider: `claude -p --output-format stream-json --verbose
//! --json-schema <schema>`, with the prompt on standard input, in the repository under
//! review, with its read-only tools only (`--tools Read,Grep,Glob`) and the agent's
//! turn limit. Stream events become run events as they arrive; the final `result`
//! event's `structured_output` is the answer, and a result marked `is_error` is an
//! error whatever its subtype (not being logged in is a configuration error). The
//! subprocess gets a scrubbed environment, its standard error is drained while it
//! runs, its output is read within [`OutputLimits`] (it is killed past them), and it
//! is killed if the node is cancelled or times out.

use async_trait::async_trait;
use conclave_shared::Usage;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::cli_output::{BoundedLines, OutputLimits};
use crate::dialect::Dialect;
use conclave_core::StreamSink;
use conclave_core::{AgentReply, AgentRequest, Capabilities, Message, Provider, ProviderError, StopReason};

/// Variables passed through to the CLI; everything else (other vendors' keys, cloud
/// credentials, tokens) is withheld.
const PASSED_VARIABLES: &[&str] = &["PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TERM", "TMPDIR", "TZ"];
const PASSED_PREFIXES: &[&str] = &["LC_", "XDG_", "ANTHROPIC_", "CLAUDE_"];

/// The CLI's own tools an agent may use: reading and searching, never writing,
/// running commands or fetching.
const READ_ONLY_TOOLS: &str = "Read,Grep,Glob";

/// How much of the CLI's standard error is kept for messages.
const STDERR_KEPT: usize = 64 * 1024;

/// The Claude Code provider.
#[derive(Debug, Clone)]
pub struct ClaudeCodeProvider {
    binary: PathBuf,
    /// `binary` found on disk (or on `PATH`) when the provider was built, so that
    /// checking the configuration asks the file system nothing.
    resolved: Option<PathBuf>,
    limits: OutputLimits,
}

impl ClaudeCodeProvider {
    /// Configured from `CONCLAVE_CLAUDE_BIN` (default `claude` on `PATH`), looked up
    /// now: a CLI installed later is found when the provider is built again (the next
    /// `conclave` command, or a restart of `conclave serve`).
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> ClaudeCodeProvider {
        let binary = PathBuf::from(env("CONCLAVE_CLAUDE_BIN").unwrap_or_else(|| "claude".into()));
        let resolved = resolve_binary(&binary);
        ClaudeCodeProvider { binary, resolved, limits: OutputLimits::default() }
    }

    /// The same provider reading at most `limits` of the CLI's output.
    pub fn with_output_limits(self, limits: OutputLimits) -> ClaudeCodeProvider {
        ClaudeCodeProvider { limits, ..self }
    }

    /// The arguments for `request` (public for tests that pin the invocation).
    pub fn arguments(request: &AgentRequest) -> Vec<String> {
        let mut args: Vec<String> = ["-p", "--output-format", "stream-json", "--verbose", "--tools", READ_ONLY_TOOLS]
            .map(String::from)
            .to_vec();
        args.extend(["--max-turns".into(), request.max_turns.max(1).to_string()]);
        if !request.model.is_empty() {
            args.extend(["--model".into(), request.model.clone()]);
        }
        let system = request.system_text();
        if !system.is_empty() {
            args.extend(["--append-system-prompt".into(), system]);
        }
        if let Some(spec) = &request.output_schema
            && let Some(argv) = Dialect::ClaudeCode.schema_part(&spec.name, &spec.schema)["argv"].as_array()
        {
            args.extend(argv.iter().filter_map(Value::as_str).map(String::from));
        }
        args
    }
}

/// The conversation as one prompt: the CLI keeps its own session per call.
fn prompt(request: &AgentRequest) -> String {
    let mut parts = Vec::new();
    for message in &request.messages {
        match message {
            Message::User(text) => parts.push(text.clone()),
            Message::Assistant { text, .. } => parts.push(format!("(Your previous answer was:)\n{text}")),
            Message::ToolResult { name, content, .. } => parts.push(format!("(Result of {name}:)\n{content}")),
        }
    }
    parts.join("\n\n")
}

/// `binary` when it is a path to a file, else the first file of that name on `PATH`.
fn resolve_binary(binary: &Path) -> Option<PathBuf> {
    if binary.components().count() > 1 {
        return binary.is_file().then(|| binary.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(binary)).find(|p| p.is_file())
}

#[async_trait]
impl Provider for ClaudeCodeProvider {
    fn name(&self) -> &str {
        "claude-code"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities { native_schema: Some(Dialect::ClaudeCode.target()), tools: false, context_window: None }
    }

    fn default_model(&self) -> &str {
        "sonnet"
    }

    fn check_config(&self) -> Result<(), ProviderError> {
        match &self.resolved {
            Some(_) => Ok(()),
            None => Err(ProviderError::Config {
                provider: "claude-code".into(),
                message: format!(
                    "the Claude Code CLI `{}` was not found; install it or set CONCLAVE_CLAUDE_BIN to its path",
                    self.binary.display()
                ),
            }),
        }
    }

    async fn call(&self, request: &AgentRequest, stream: &dyn StreamSink) -> Result<AgentReply, ProviderError> {
        let binary = self
            .resolved
            .clone()
            .ok_or_else(|| self.check_config().err().unwrap_or(ProviderError::Transport("no binary".into())))?;
        let mut child = self.spawn(&binary, request)?;
        if let Some(mut stdin) = child.stdin.take() {
            stdin
                .write_all(prompt(request).as_bytes())
                .await
                .map_err(|e| ProviderError::Transport(format!("cannot write the prompt: {e}")))?;
        }
        // Drained while the CLI runs, so a chatty CLI never blocks on a full pipe.
        let stderr = child.stderr.take().map(|err| tokio::spawn(read_bounded(err)));
        let stdout = child.stdout.take().ok_or_else(|| ProviderError::Transport("no stdout from the CLI".into()))?;
        let read = read_events(BoundedLines::new("the Claude Code CLI", stdout, self.limits), stream).await;
        if read.is_err() {
            // Past a cap (or a line that is not JSON) nothing more is read: stop the CLI
            // rather than wait for output no one reads.
            let _ = child.start_kill();
        }
        let status = child.wait().await.map_err(|e| ProviderError::Transport(format!("waiting for the CLI: {e}")))?;
        let stderr = match stderr {
            Some(task) => task.await.unwrap_or_default(),
            None => String::new(),
        };
        let (result, auth_failed) = read?;
        let Some(result) = result else {
            let tail: String = stderr.trim().chars().rev().take(500).collect::<Vec<_>>().into_iter().rev().collect();
            return Err(ProviderError::Malformed(format!(
                "the CLI exited ({status}) without a `result` event: {tail}"
            )));
        };
        read_result(&result, auth_failed)
    }
}

impl ClaudeCodeProvider {
    fn spawn(&self, binary: &Path, request: &AgentRequest) -> Result<tokio::process::Child, ProviderError> {
        let mut command = tokio::process::Command::new(binary);
        command
            .args(Self::arguments(request))
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(dir) = &request.workdir {
            command.current_dir(dir);
        }
        for (key, value) in std::env::vars_os() {
            let name = key.to_string_lossy();
            if PASSED_VARIABLES.contains(&name.as_ref()) || PASSED_PREFIXES.iter().any(|p| name.starts_with(p)) {
                command.env(&key, value);
            }
        }
        command.spawn().map_err(|e| ProviderError::Transport(format!("cannot start the Claude Code CLI: {e}")))
    }
}

/// Reads the CLI's stream-json events, forwarding text and tool calls; returns the
/// `result` event and whether an assistant message reported a failed login.
async fn read_events(
    mut lines: BoundedLines<tokio::process::ChildStdout>,
    stream: &dyn StreamSink,
) -> Result<(Option<Value>, bool), ProviderError> {
    let mut auth_failed = false;
    while let Some(line) = lines.next_line().await? {
        if line.trim().is_empty() {
            continue;
        }
        let event: Value = serde_json::from_str(&line)
            .map_err(|e| ProviderError::Malformed(format!("the CLI printed a line that is not JSON ({e}): {line}")))?;
        match event["type"].as_str() {
            Some("assistant") => {
                auth_failed |= event["error"].as_str() == Some("authentication_failed");
                for block in event.pointer("/message/content").and_then(Value::as_array).into_iter().flatten() {
                    match block["type"].as_str() {
                        Some("text") => stream.text(block["text"].as_str().unwrap_or_default()).await,
                        Some("tool_use") => {
                            stream.tool_call(block["name"].as_str().unwrap_or_default(), block["input"].clone()).await;
                        }
                        _ => {}
                    }
                }
            }
            Some("result") => return Ok((Some(event), auth_failed)),
            _ => {}
        }
    }
    Ok((None, auth_failed))
}

/// The first [`STDERR_KEPT`] bytes of the CLI's standard error; the rest is read and
/// dropped.
async fn read_bounded(mut stderr: tokio::process::ChildStderr) -> String {
    let mut kept = Vec::new();
    let mut buffer = [0u8; 8192];
    while let Ok(n) = stderr.read(&mut buffer).await {
        if n == 0 {
            break;
        }
        let room = STDERR_KEPT.saturating_sub(kept.len());
        kept.extend_from_slice(&buffer[..n.min(room)]);
    }
    String::from_utf8_lossy(&kept).into_owned()
}

/// The answer in a `result` event, or the error it reports. A result marked
/// `is_error` is an error whatever its subtype.
fn read_result(result: &Value, auth_failed: bool) -> Result<AgentReply, ProviderError> {
    let tokens = |name: &str| result.pointer(&format!("/usage/{name}")).and_then(Value::as_u64).unwrap_or(0);
    let usage = Usage {
        cost_usd: result.get("total_cost_usd").and_then(Value::as_f64),
        cache_read_tokens: tokens("cache_read_input_tokens"),
        cache_write_tokens: tokens("cache_creation_input_tokens"),
        ..Usage::tokens(tokens("input_tokens"), tokens("output_tokens"))
    };
    let text = result.get("result").and_then(Value::as_str).unwrap_or_default().to_string();
    let subtype = result["subtype"].as_str().unwrap_or("success");
    let is_error = result["is_error"].as_bool() == Some(true) || subtype != "success";
    if !is_error {
        let json = result.get("structured_output").filter(|v| !v.is_null()).cloned();
        return Ok(AgentReply { text, json, tool_calls: Vec::new(), usage, stop: StopReason::EndTurn });
    }
    let lowered = text.to_lowercase();
    if auth_failed
        || lowered.contains("not logged in")
        || lowered.contains("invalid api key")
        || lowered.contains("/login")
    {
        return Err(ProviderError::Config {
            provider: "claude-code".into(),
            message: format!(
                "the Claude Code CLI cannot sign in ({}); run `claude` once and log in with /login, or set ANTHROPIC_API_KEY for it",
                text.trim()
            ),
        });
    }
    Err(match subtype {
        "error_max_structured_output_retries" => ProviderError::SchemaExhausted(format!(
            "Claude Code gave up after its own structured-output retries (`{subtype}`)"
        )),
        "error_max_turns" => {
            ProviderError::Truncated(format!("Claude Code ran out of turns (`{subtype}`); raise max_turns"))
        }
        // A fault inside the CLI's run may pass; retrying it can help.
        "error_during_execution" => {
            ProviderError::Server { status: 500, message: format!("Claude Code failed (`{subtype}`): {text}") }
        }
        _ if lowered.contains("rate limit") || lowered.contains("overloaded") => {
            ProviderError::RateLimited { retry_after: None }
        }
        // Anything else would fail the same way again, at the user's cost.
        other => ProviderError::BadRequest(format!(
            "Claude Code reported an error (`{other}`, {}): {text}",
            result["terminal_reason"].as_str().unwrap_or("no reason given")
        )),
    })
}
