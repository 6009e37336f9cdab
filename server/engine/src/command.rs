//! How a command node runs its program: no shell (argv as given), in the run's
//! repository or workspace, in the sandbox `command_sandbox.rs` sets up (its
//! environment a few named variables only, so no provider key or token reaches it;
//! its `HOME` and `TMPDIR` a scratch directory), stdin closed, stdout and stderr each
//! read up to a cap (the rest is drained and counted, so the program never blocks on
//! a full pipe) and redacted of the secrets the engine knows, and a timeout that
//! kills the program's whole process group, as dropping the node (a cancelled run)
//! does too. What it printed, how it exited and what confined it is the
//! `command_exited` event; stdout, parsed as the node says, is its output.

use conclave_core::Redactor;
use conclave_shared::{CommandConfig, CommandParse, EventKind, NodeOutput, Usage};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde_json::Value;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::bus::EventBus;
use crate::command_sandbox::{self, Reach};
use crate::node_error::NodeError;

/// A command node ready to run.
#[derive(Debug)]
pub struct CommandPlan {
    /// Its configuration.
    pub config: CommandConfig,
    /// The validator of its output schema, for `json` output with one.
    pub validator: Option<Arc<jsonschema::Validator>>,
    /// Where it runs.
    pub workdir: PathBuf,
    /// The workspace, which it may read too.
    pub workspace: Option<PathBuf>,
    /// Whether it may run unconfined where the kernel cannot confine it.
    pub allow_unsandboxed: bool,
    /// Redacts what it prints before it becomes an event or an output.
    pub redactor: Option<Arc<Redactor>>,
}

/// What a program printed to one stream, up to the cap.
struct Captured {
    kept: Vec<u8>,
    cut: u64,
}

/// Kills the program's process group when dropped, unless it was reaped: a timeout, a
/// cancelled run, or an aborted node stops every process the program started.
struct GroupGuard {
    pgid: Option<Pid>,
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(pgid) = self.pgid {
            // The group may be gone already; nothing is left to stop then.
            let _ = killpg(pgid, Signal::SIGKILL);
        }
    }
}

/// Runs the command of node `node_id`, records how it ended, and parses its output.
pub async fn run(plan: &CommandPlan, node_id: &str, bus: &EventBus) -> Result<(NodeOutput, Usage), NodeError> {
    let config = &plan.config;
    let program = config.program().to_string();
    let mut command = tokio::process::Command::new(&program);
    let reach = Reach {
        workdir: plan.workdir.clone(),
        workspace: plan.workspace.clone(),
        allow_unsandboxed: plan.allow_unsandboxed,
    };
    let sandbox = command_sandbox::prepare(config, node_id, reach).await?.apply(&mut command, config);
    command
        .args(&config.argv[1..])
        .current_dir(&plan.workdir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let started = Instant::now();
    let mut child = command.spawn().map_err(|e| {
        NodeError::Command(format!(
            "could not start `{program}` in {}: {e}; check that the program is installed and on PATH",
            plan.workdir.display()
        ))
    })?;
    let mut guard = GroupGuard { pgid: child.id().and_then(|id| i32::try_from(id).ok()).map(Pid::from_raw) };
    let cap = config.output_cap();
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(NodeError::Internal("the command's output pipes were not opened".into()));
    };
    let limit = Duration::from_secs(config.timeout());
    let work = async { tokio::join!(capture(stdout, cap), capture(stderr, cap), child.wait()) };
    let (out, err, status) = match tokio::time::timeout(limit, work).await {
        Ok(done) => done,
        // Dropping the guard kills the group; the reads and the wait were dropped.
        Err(_) => {
            drop(guard);
            return Err(NodeError::CommandTimeout { program, limit });
        }
    };
    guard.pgid = None;
    let status = status.map_err(|e| NodeError::Command(format!("could not wait for `{program}`: {e}")))?;
    let (out, err) = (out.map_err(read_error(&program))?, err.map_err(read_error(&program))?);
    let record = sandbox.record.clone();
    sandbox.end().await;
    let redact = |bytes: &[u8]| {
        let text = String::from_utf8_lossy(bytes);
        plan.redactor.as_ref().map_or_else(|| text.to_string(), |r| r.redact(&text))
    };
    let (stdout, stderr) = (redact(&out.kept), redact(&err.kept));
    bus.emit(EventKind::CommandExited {
        node_id: node_id.to_string(),
        argv: config.argv.clone(),
        exit_code: status.code(),
        stdout: stdout.clone(),
        stderr: stderr.clone(),
        stdout_cut_bytes: out.cut,
        stderr_cut_bytes: err.cut,
        duration_ms: started.elapsed().as_millis() as u64,
        sandbox: Some(record),
    })
    .await;
    match status.code() {
        Some(code) if config.exit_ok(code) => {}
        Some(code) => {
            return Err(NodeError::Command(format!(
                "`{program}` exited with code {code}{}; if that code means success for it, list it in `ok_exit_codes`",
                last_line(&stderr)
            )));
        }
        None => return Err(NodeError::Command(format!("`{program}` was killed by a signal{}", last_line(&stderr)))),
    }
    let output = parse(plan, node_id, &stdout, out.cut)?;
    Ok((output, Usage::default()))
}

fn read_error(program: &str) -> impl Fn(std::io::Error) -> NodeError + '_ {
    move |e| NodeError::Command(format!("could not read the output of `{program}`: {e}"))
}

/// `: <the last line of stderr>`, when there is one.
fn last_line(stderr: &str) -> String {
    stderr.lines().rev().find(|l| !l.trim().is_empty()).map(|l| format!(": {}", l.trim())).unwrap_or_default()
}

/// Reads a stream to its end, keeping the first `cap` bytes and counting the rest.
async fn capture(mut stream: impl AsyncRead + Unpin, cap: u64) -> std::io::Result<Captured> {
    let mut kept = Vec::new();
    let mut cut = 0u64;
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let n = stream.read(&mut buffer).await?;
        if n == 0 {
            return Ok(Captured { kept, cut });
        }
        let room = usize::try_from(cap.saturating_sub(kept.len() as u64)).unwrap_or(usize::MAX).min(n);
        kept.extend_from_slice(&buffer[..room]);
        cut += (n - room) as u64;
    }
}

/// The node's output from what the program printed.
fn parse(plan: &CommandPlan, node_id: &str, stdout: &str, cut: u64) -> Result<NodeOutput, NodeError> {
    let invalid = |errors: Vec<String>| NodeError::InvalidOutput { attempts: 1, errors, raw: stdout.to_string() };
    let cut_note = || match cut {
        0 => String::new(),
        n => format!(
            " (its output was cut after {} bytes, {n} more were dropped: raise `max_output_bytes`)",
            stdout.len()
        ),
    };
    // An analyzer lane's findings are graded by its severity map (or its tool's).
    let map = plan.config.analyzer.as_ref().and_then(|a| a.severity_for(plan.config.program()));
    match plan.config.parse {
        CommandParse::Text => Ok(NodeOutput::Text(stdout.to_string())),
        CommandParse::Json => {
            let value: Value = serde_json::from_str(stdout)
                .map_err(|e| invalid(vec![format!("stdout is not one JSON document: {e}{}", cut_note())]))?;
            if let Some(validator) = &plan.validator {
                let errors: Vec<String> =
                    validator.iter_errors(&value).map(|e| format!("{}: {e}", e.instance_path())).collect();
                if !errors.is_empty() {
                    return Err(invalid(errors));
                }
            }
            Ok(NodeOutput::Json(value))
        }
        CommandParse::Diagnostics => {
            Ok(relative_to(&plan.workdir, conclave_schema::diagnostics::findings(stdout, node_id, map.as_ref())))
        }
        CommandParse::Cargo => {
            Ok(relative_to(&plan.workdir, conclave_schema::cargo::findings(stdout, node_id, map.as_ref())))
        }
        CommandParse::Sarif => conclave_schema::sarif::findings(stdout, node_id, map.as_ref())
            .map(|findings| relative_to(&plan.workdir, findings))
            .map_err(|e| invalid(vec![format!("{e}{}", cut_note())])),
        CommandParse::Shellcheck => conclave_schema::shellcheck::findings(stdout, node_id, map.as_ref())
            .map(|findings| relative_to(&plan.workdir, findings))
            .map_err(|e| invalid(vec![format!("{e}{}", cut_note())])),
    }
}

/// Findings whose file is an absolute path inside `workdir` (ruff's SARIF names
/// files by `file://` URI) name it relative to `workdir`, as agents and the review
/// do; other paths are left as the tool wrote them.
fn relative_to(workdir: &std::path::Path, mut findings: Value) -> NodeOutput {
    if let Some(items) = findings.get_mut("findings").and_then(Value::as_array_mut) {
        for item in items {
            let Some(file) = item.get("file").and_then(Value::as_str) else { continue };
            if let Ok(relative) = std::path::Path::new(file).strip_prefix(workdir) {
                item["file"] = Value::String(relative.to_string_lossy().into_owned());
            }
        }
    }
    NodeOutput::Json(findings)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ruff check --output-format sarif a.py` (Ruff 0.17.5) in /tmp/fx names the file by
    /// its absolute `file://` URI.
    const RUFF: &str = include_str!("../../../tests/fixtures/analyzers/ruff.sarif");

    #[test]
    fn absolute_paths_inside_the_workdir_become_relative() {
        let findings = conclave_schema::sarif::findings(RUFF, "ruff", None).expect("a SARIF log");
        assert_eq!(findings["findings"][0]["file"], "/tmp/fx/a.py", "as ruff wrote it");
        let NodeOutput::Json(relative) = relative_to(std::path::Path::new("/tmp/fx"), findings.clone()) else {
            panic!("findings are JSON")
        };
        let files: Vec<&str> =
            relative["findings"].as_array().into_iter().flatten().filter_map(|f| f["file"].as_str()).collect();
        assert!(!files.is_empty() && files.iter().all(|f| *f == "a.py"), "{files:?}");
        let NodeOutput::Json(elsewhere) = relative_to(std::path::Path::new("/srv"), findings) else { panic!("JSON") };
        assert_eq!(elsewhere["findings"][0]["file"], "/tmp/fx/a.py", "a path outside the workdir is left alone");
    }
}
