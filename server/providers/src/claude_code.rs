//! The Claude Code CLI as a provider: `claude -p --output-format stream-json --verbose
//! --json-schema <schema>`, with the prompt on standard input. Stream events become
//! run events as they arrive; the final `result` event's `structured_output` is the
//! answer. The subprocess gets a scrubbed environment and is killed if the node is
//! cancelled or times out.

use async_trait::async_trait;
use conclave_shared::Usage;
use serde_json::Value;
use std::path::PathBuf;
use std::process::Stdio;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

use conclave_core::StreamSink;
use conclave_core::{AgentReply, AgentRequest, Capabilities, Message, Provider, ProviderError, StopReason};
use conclave_shared::LowerTarget;

/// Variables passed through to the CLI; everything else (other vendors' keys, cloud
/// credentials, tokens) is withheld.
const PASSED_VARIABLES: &[&str] = &["PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TERM", "TMPDIR", "TZ"];
const PASSED_PREFIXES: &[&str] = &["LC_", "XDG_", "ANTHROPIC_", "CLAUDE_"];

/// The Claude Code provider.
#[derive(Debug, Clone)]
pub struct ClaudeCodeProvider {
    binary: PathBuf,
}

impl ClaudeCodeProvider {
    /// Configured from `CONCLAVE_CLAUDE_BIN` (default `claude` on `PATH`).
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> ClaudeCodeProvider {
        ClaudeCodeProvider { binary: PathBuf::from(env("CONCLAVE_CLAUDE_BIN").unwrap_or_else(|| "claude".into())) }
    }

    fn resolved_binary(&self) -> Option<PathBuf> {
        if self.binary.components().count() > 1 {
            return self.binary.is_file().then(|| self.binary.clone());
        }
        let path = std::env::var_os("PATH")?;
        std::env::split_paths(&path).map(|dir| dir.join(&self.binary)).find(|p| p.is_file())
    }

    /// The arguments for `request` (public for tests that pin the invocation).
    pub fn arguments(request: &AgentRequest) -> Vec<String> {
        let mut args: Vec<String> = ["-p", "--output-format", "stream-json", "--verbose"].map(String::from).to_vec();
        if !request.model.is_empty() {
            args.extend(["--model".into(), request.model.clone()]);
        }
        if !request.system_prompt.is_empty() {
            args.extend(["--append-system-prompt".into(), request.system_prompt.clone()]);
        }
        if let Some(spec) = &request.output_schema {
            args.extend(["--json-schema".into(), spec.schema.to_string()]);
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

#[async_trait]
impl Provider for ClaudeCodeProvider {
    fn name(&self) -> &str {
        "claude-code"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities { native_schema: Some(LowerTarget::ClaudeCode), tools: false }
    }

    fn default_model(&self) -> &str {
        "sonnet"
    }

    fn check_config(&self) -> Result<(), ProviderError> {
        match self.resolved_binary() {
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
            .resolved_binary()
            .ok_or_else(|| self.check_config().err().unwrap_or(ProviderError::Transport("no binary".into())))?;
        let mut command = tokio::process::Command::new(binary);
        command
            .args(Self::arguments(request))
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for (key, value) in std::env::vars_os() {
            let name = key.to_string_lossy();
            if PASSED_VARIABLES.contains(&name.as_ref()) || PASSED_PREFIXES.iter().any(|p| name.starts_with(p)) {
                command.env(&key, value);
            }
        }
        let mut child =
            command.spawn().map_err(|e| ProviderError::Transport(format!("cannot start the Claude Code CLI: {e}")))?;
        if let Some(mut stdin) = child.stdin.take() {
            stdin
                .write_all(prompt(request).as_bytes())
                .await
                .map_err(|e| ProviderError::Transport(format!("cannot write the prompt: {e}")))?;
        }
        let stdout = child.stdout.take().ok_or_else(|| ProviderError::Transport("no stdout from the CLI".into()))?;
        let mut stderr = child.stderr.take();
        let mut lines = BufReader::new(stdout).lines();
        let mut result: Option<Value> = None;
        while let Some(line) =
            lines.next_line().await.map_err(|e| ProviderError::Transport(format!("reading the CLI's output: {e}")))?
        {
            if line.trim().is_empty() {
                continue;
            }
            let event: Value = serde_json::from_str(&line).map_err(|e| {
                ProviderError::Malformed(format!("the CLI printed a line that is not JSON ({e}): {line}"))
            })?;
            match event["type"].as_str() {
                Some("assistant") => {
                    for block in event.pointer("/message/content").and_then(Value::as_array).into_iter().flatten() {
                        match block["type"].as_str() {
                            Some("text") => stream.text(block["text"].as_str().unwrap_or_default()).await,
                            Some("tool_use") => {
                                stream
                                    .tool_call(block["name"].as_str().unwrap_or_default(), block["input"].clone())
                                    .await;
                            }
                            _ => {}
                        }
                    }
                }
                Some("result") => {
                    result = Some(event);
                    break;
                }
                _ => {}
            }
        }
        let status = child.wait().await.map_err(|e| ProviderError::Transport(format!("waiting for the CLI: {e}")))?;
        let Some(result) = result else {
            let mut err = String::new();
            if let Some(s) = stderr.as_mut() {
                let _ = s.read_to_string(&mut err).await;
            }
            let tail: String = err.trim().chars().rev().take(500).collect::<Vec<_>>().into_iter().rev().collect();
            return Err(ProviderError::Truncated(format!(
                "the CLI exited ({status}) without a `result` event: {tail}"
            )));
        };
        read_result(&result)
    }
}

fn read_result(result: &Value) -> Result<AgentReply, ProviderError> {
    let usage = Usage {
        input_tokens: result.pointer("/usage/input_tokens").and_then(Value::as_u64).unwrap_or(0),
        output_tokens: result.pointer("/usage/output_tokens").and_then(Value::as_u64).unwrap_or(0),
        cost_usd: result.get("total_cost_usd").and_then(Value::as_f64),
    };
    let text = result.get("result").and_then(Value::as_str).unwrap_or_default().to_string();
    let subtype = result["subtype"].as_str().unwrap_or("success");
    match subtype {
        "success" if result["is_error"].as_bool() != Some(true) => {
            let json = result.get("structured_output").filter(|v| !v.is_null()).cloned();
            Ok(AgentReply { text, json, tool_calls: Vec::new(), usage, stop: StopReason::EndTurn })
        }
        "error_max_structured_output_retries" => Err(ProviderError::SchemaExhausted(format!(
            "Claude Code gave up after its own structured-output retries (`{subtype}`)"
        ))),
        "error_max_turns" => {
            Err(ProviderError::Truncated(format!("Claude Code ran out of turns (`{subtype}`); raise max_turns")))
        }
        other => Err(ProviderError::Server { status: 500, message: format!("Claude Code failed (`{other}`): {text}") }),
    }
}
