//! The sandbox's tests: real processes started confined, one test per thing the
//! sandbox denies (files, network, signals and `/proc`, privileges, limits), and the
//! tools analyzer lanes run (git, python3, cargo) working inside it.

mod files;
mod limits;
mod network;
mod privileges;
mod signals;
mod tools;

use conclave_sandbox::{Policy, Scratch, confine, probe};
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// A confined run's outcome.
#[derive(Debug)]
pub struct Ran {
    pub output: Output,
    pub record: conclave_shared::SandboxRecord,
}

impl Ran {
    pub fn ok(&self) -> bool {
        self.output.status.success()
    }

    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.output.stdout).into_owned()
    }

    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }
}

/// Whether the sandbox can confine here; tests skip (saying so) when it cannot.
pub fn available() -> bool {
    match probe().can_confine() {
        Ok(()) => true,
        Err(why) => {
            eprintln!("skipped: {why}");
            false
        }
    }
}

/// Runs `argv` confined by `policy` in `dir`, its `HOME` and `TMPDIR` the scratch
/// directory, with only `PATH` besides.
pub fn run_in(policy: &Policy, dir: &Path, argv: &[&str]) -> Ran {
    let mut command = Command::new(argv[0]);
    command
        .args(&argv[1..])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &policy.scratch)
        .env("TMPDIR", &policy.scratch)
        .current_dir(dir)
        .stdin(Stdio::null());
    let confinement = confine(&mut command, policy).expect("the sandbox confines the command");
    let output = command.output().expect("the command starts");
    Ran { output, record: confinement.record.clone() }
}

/// Runs a `bash -c` script confined by the default policy around `scratch`.
pub fn bash(scratch: &Scratch, script: &str) -> Ran {
    let policy = Policy::new(scratch.path().to_path_buf());
    run_in(&policy, scratch.path(), &["bash", "-c", script])
}

pub fn scratch() -> Scratch {
    Scratch::create("test").expect("a scratch directory")
}
