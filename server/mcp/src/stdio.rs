//! A stdio MCP server: its command started once, in the command sandbox of a
//! command node (the scrubbed environment, its scratch directory as `HOME`, no
//! network unless its entry opens it, reads of the repository, the workspace, its
//! program and its `sandbox.read` paths), in its own process group, which is killed
//! when the server is stopped or dropped. The last lines of its stderr are kept to
//! say why it failed.

use async_trait::async_trait;
use conclave_core::{Redactor, ServerPlace, ToolOutcome, ToolServer, ToolServerError};
use conclave_engine::command_sandbox::{self, Reach, Sandbox};
use conclave_shared::mcp::McpToolInfo;
use conclave_shared::{CommandConfig, McpServerConfig};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde_json::Value;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStderr};

use crate::session::{CallFailure, START_TIMEOUT, Session};

/// How much of a server's stderr is kept, in lines.
const STDERR_LINES: usize = 20;

/// A started stdio server.
#[derive(Debug)]
pub struct StdioServer {
    name: String,
    session: Session,
    process: Process,
}

/// A server's process: its group, its stderr's last lines and its sandbox.
#[derive(Debug)]
struct Process {
    child: tokio::sync::Mutex<Child>,
    pgid: Option<Pid>,
    stderr: Arc<Mutex<Vec<String>>>,
    sandbox: Mutex<Option<Sandbox>>,
}

/// Starts the server `name` as `config` says, in `place`, and lists its tools.
pub async fn start(name: &str, config: &McpServerConfig, place: &ServerPlace) -> Result<StdioServer, ToolServerError> {
    let refuse = |reason: String| ToolServerError::Start { server: name.to_string(), reason };
    let command_config = command_config(config).map_err(refuse)?;
    let program = command_config.program().to_string();
    let workdir = place
        .workdir
        .clone()
        .or_else(|| place.workspace.clone())
        .ok_or_else(|| refuse("there is neither a repository nor a workspace to run it in".into()))?;
    let reach = Reach {
        workdir: workdir.clone(),
        workspace: place.workspace.clone(),
        allow_unsandboxed: place.allow_unsandboxed,
    };
    let label = if place.label.is_empty() { format!("mcp-{name}") } else { format!("mcp-{name}-{}", place.label) };
    let prepared = command_sandbox::prepare(&command_config, &label, reach).await.map_err(|e| refuse(e.to_string()))?;
    let mut command = tokio::process::Command::new(&program);
    let sandbox = prepared.apply(&mut command, &command_config);
    command
        .args(&config.command[1..])
        .current_dir(&workdir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = command.spawn().map_err(|e| {
        refuse(format!(
            "`{program}` did not start in {}: {e}; check that it is installed and on PATH",
            workdir.display()
        ))
    })?;
    let pgid = child.id().and_then(|id| i32::try_from(id).ok()).map(Pid::from_raw);
    let stderr = Arc::new(Mutex::new(Vec::new()));
    if let Some(pipe) = child.stderr.take() {
        tokio::spawn(keep_stderr(pipe, stderr.clone(), place.redactor.clone()));
    }
    let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
        return Err(refuse("its pipes were not opened".into()));
    };
    let process = Process { child: tokio::sync::Mutex::new(child), pgid, stderr, sandbox: Mutex::new(Some(sandbox)) };
    match Session::open(name, (stdout, stdin), START_TIMEOUT).await {
        Ok(session) => Ok(StdioServer { name: name.to_string(), session, process }),
        Err(reason) => {
            let ended = process.ended().await;
            process.kill();
            Err(refuse(format!("{reason}{ended}")))
        }
    }
}

/// The command node a server's command runs as, for the sandbox.
fn command_config(config: &McpServerConfig) -> Result<CommandConfig, String> {
    let value = serde_json::json!({"argv": config.command, "sandbox": config.sandbox});
    serde_json::from_value(value).map_err(|e| format!("its entry does not read as a command: {e}"))
}

/// Keeps the last [`STDERR_LINES`] lines the server writes to stderr, redacted.
async fn keep_stderr(pipe: ChildStderr, kept: Arc<Mutex<Vec<String>>>, redactor: Option<Arc<Redactor>>) {
    let mut lines = BufReader::new(pipe).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let line = redactor.as_ref().map_or_else(|| line.clone(), |r| r.redact(&line));
        let mut kept = kept.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.len() == STDERR_LINES {
            kept.remove(0);
        }
        kept.push(line);
    }
}

impl Process {
    /// How the process ended, when it did (`; it exited with status 1; its stderr
    /// said: …`), waiting a moment for it and its last words; empty while it runs.
    async fn ended(&self) -> String {
        let status = {
            let mut child = self.child.lock().await;
            match tokio::time::timeout(std::time::Duration::from_millis(500), child.wait()).await {
                Ok(Ok(status)) => Some(status),
                _ => None,
            }
        };
        let Some(status) = status else { return String::new() };
        // The stderr reader may still hold the last line.
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        let last = self.last_stderr_line();
        let said = match last {
            Some(line) => format!("; its stderr said: {line}"),
            None => "; it wrote nothing to stderr".into(),
        };
        format!("; it exited with {status}{said}")
    }

    /// The last non-empty line of the server's stderr.
    fn last_stderr_line(&self) -> Option<String> {
        let kept = self.stderr.lock().unwrap_or_else(PoisonError::into_inner);
        kept.iter().rev().find(|l| !l.trim().is_empty()).cloned()
    }

    /// Kills the process group and ends the sandbox.
    fn kill(&self) {
        if let Some(pgid) = self.pgid {
            // The group may be gone already; nothing is left to stop then.
            let _ = killpg(pgid, Signal::SIGKILL);
        }
        let sandbox = self.sandbox.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(sandbox) = sandbox {
            tokio::spawn(sandbox.end());
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            let _ = killpg(pgid, Signal::SIGKILL);
        }
    }
}

#[async_trait]
impl ToolServer for StdioServer {
    fn tools(&self) -> &[McpToolInfo] {
        &self.session.tools
    }

    async fn call(&self, tool: &str, arguments: &Value) -> Result<ToolOutcome, ToolServerError> {
        match self.session.call(tool, arguments).await {
            Ok(outcome) => Ok(outcome),
            Err(CallFailure::Gone(why)) => {
                let ended = self.process.ended().await;
                Err(ToolServerError::Died { server: self.name.clone(), reason: format!("{why}{ended}") })
            }
        }
    }

    async fn stop(&self) {
        self.session.close().await;
        self.process.kill();
    }
}
