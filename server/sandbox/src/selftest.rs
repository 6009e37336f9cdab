//! The self-test of `conclave sandbox check`: plants a file outside the sandbox,
//! opens a TCP and a UDP listener on 127.0.0.1, starts the probe (`attempts.rs`)
//! confined by the default policy, and checks that every attempt failed, from the
//! probe's own words and from what the listeners and the planted directory show.

use conclave_shared::SandboxRecord;
use std::io::Read;
use std::net::{TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::attempts::Attempt;
use crate::{Policy, SandboxError, Scratch, confine};

/// One attempt and whether the sandbox stopped it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// What was tried.
    pub name: String,
    /// Whether it failed, as it must.
    pub denied: bool,
    /// The error it met, or what showed it got through.
    pub detail: String,
}

/// What the self-test found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelfTest {
    /// The layers the probe ran under.
    pub record: SandboxRecord,
    /// Each attempt.
    pub checks: Vec<Check>,
}

impl SelfTest {
    /// Whether every attempt was stopped.
    pub fn passed(&self) -> bool {
        !self.checks.is_empty() && self.checks.iter().all(|c| c.denied)
    }
}

/// Why the self-test could not run.
#[derive(Debug, thiserror::Error)]
pub enum SelfTestError {
    /// The sandbox could not confine the probe.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// Setting up the test or running the probe failed.
    #[error("the self-test could not {what}: {source}")]
    Io {
        /// What it was doing.
        what: &'static str,
        /// The error.
        source: std::io::Error,
    },
    /// The probe did not answer for every attempt.
    #[error("the probe did not report its attempts (exit {code:?}): {output}")]
    Probe {
        /// Its exit code.
        code: Option<i32>,
        /// What it printed.
        output: String,
    },
}

fn io(what: &'static str) -> impl FnOnce(std::io::Error) -> SelfTestError {
    move |source| SelfTestError::Io { what, source }
}

/// Runs the self-test with the probe `program` started with `args` before the
/// attempts (`conclave` and `["sandbox", "probe"]`).
pub fn run(program: &Path, args: &[&str]) -> Result<SelfTest, SelfTestError> {
    let planted = tempfile::Builder::new().prefix("conclave-selftest-").tempdir().map_err(io("plant a file"))?;
    let secret = planted.path().join("planted");
    std::fs::write(&secret, "planted outside the sandbox").map_err(io("plant a file"))?;
    let written = planted.path().join("written");
    let tcp = TcpListener::bind("127.0.0.1:0").map_err(io("open a TCP listener"))?;
    let udp = UdpSocket::bind("127.0.0.1:0").map_err(io("open a UDP listener"))?;
    let me = std::process::id() as i32;
    let attempts = vec![
        Attempt::Read(secret),
        Attempt::Write(written.clone()),
        Attempt::Tcp(tcp.local_addr().map_err(io("open a TCP listener"))?),
        Attempt::Udp(udp.local_addr().map_err(io("open a UDP listener"))?),
        Attempt::Signal(me),
        Attempt::Environ(me),
        Attempt::Cmdline(me),
    ];
    let scratch = Scratch::create("selftest").map_err(io("make a scratch directory"))?;
    let (record, output) = run_probe(program, args, &attempts, scratch.path())?;
    let mut checks = read_checks(&attempts, &output)?;
    tcp.set_nonblocking(true).map_err(io("read the TCP listener"))?;
    udp.set_nonblocking(true).map_err(io("read the UDP listener"))?;
    let mut evidence = |name: &str, got_through: bool, what: &str| {
        if let Some(check) = checks.iter_mut().find(|c| c.name == name).filter(|_| got_through) {
            check.denied = false;
            check.detail = what.to_string();
        }
    };
    evidence(attempts[1].name(), written.exists(), "the file outside the scratch directory was written");
    evidence(attempts[2].name(), tcp.accept().is_ok(), "the TCP listener accepted a connection");
    evidence(attempts[3].name(), udp.recv(&mut [0u8; 64]).is_ok(), "the UDP listener received a datagram");
    Ok(SelfTest { record, checks })
}

/// Starts the probe confined, with a scratch `HOME` and `TMPDIR`, and returns the
/// record and what it printed.
fn run_probe(
    program: &Path,
    args: &[&str],
    attempts: &[Attempt],
    scratch: &Path,
) -> Result<(SandboxRecord, String), SelfTestError> {
    let mut policy = Policy::new(scratch.to_path_buf());
    policy.read.push(program_file(program));
    let mut command = Command::new(program);
    command
        .args(args)
        .args(attempts.iter().map(Attempt::to_arg))
        .env_clear()
        .env("HOME", scratch)
        .env("TMPDIR", scratch)
        .current_dir(scratch)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let confinement = confine(&mut command, &policy)?;
    let mut child = command.spawn().map_err(io("start the probe"))?;
    let mut output = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        stdout.read_to_string(&mut output).map_err(io("read the probe's output"))?;
    }
    let mut errors = String::new();
    if let Some(mut stderr) = child.stderr.take() {
        stderr.read_to_string(&mut errors).map_err(io("read the probe's output"))?;
    }
    let status = child.wait().map_err(io("wait for the probe"))?;
    if !status.success() {
        return Err(SelfTestError::Probe { code: status.code(), output: format!("{output}{errors}") });
    }
    Ok((confinement.record.clone(), output))
}

/// The checks from the probe's lines, one per attempt.
fn read_checks(attempts: &[Attempt], output: &str) -> Result<Vec<Check>, SelfTestError> {
    attempts
        .iter()
        .map(|attempt| {
            let line = output.lines().find(|l| l.split('\t').nth(1) == Some(attempt.name()));
            let Some(line) = line else {
                return Err(SelfTestError::Probe { code: Some(0), output: output.to_string() });
            };
            let mut fields = line.split('\t');
            let verdict = fields.next().unwrap_or_default();
            let detail = fields.nth(1).unwrap_or("it succeeded").to_string();
            Ok(Check { name: attempt.name().to_string(), denied: verdict == "denied", detail })
        })
        .collect()
}

/// The program's file as the kernel runs it (links followed), for the read rules.
pub fn program_file(program: &Path) -> PathBuf {
    std::fs::canonicalize(program).unwrap_or_else(|_| program.to_path_buf())
}
