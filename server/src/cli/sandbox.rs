//! `conclave sandbox check`: what confines commands on this machine (Landlock ABI,
//! seccomp, capabilities, the process limit, the default limits) and a self-test
//! whose probe tries to get out; exit 0 when confinement works. The probe is this
//! binary's hidden `conclave sandbox probe`. Also `--allow-unsandboxed`
//! ([`Sandboxing`]), one definition for `run`, `review`, `eval`, `worker`, `serve`,
//! `approve` and `analyzers`.

use clap::{Args, Subcommand};
use conclave_engine::EngineConfig;
use conclave_sandbox::policy::{
    DEFAULT_CPU_SECS, DEFAULT_FILE_SIZE_MB, DEFAULT_MEMORY_MB, DEFAULT_OPEN_FILES, DEFAULT_PROCESSES,
};
use conclave_sandbox::probe::{ABI_SCOPES, ABI_TCP};
use conclave_sandbox::selftest::{self, SelfTest};
use conclave_sandbox::{Probe, layer_names, probe};

use super::exit;

/// Whether commands may run unconfined where the kernel cannot confine them.
#[derive(Debug, Clone, Default, Args)]
pub struct Sandboxing {
    /// Run command nodes and analyzer lanes unconfined where the kernel cannot
    /// confine them (no Landlock or no seccomp), as each command's event records.
    /// Without it such a command fails, and a review with a base skips its analyzer
    /// lanes; `conclave sandbox check` says what this machine offers.
    #[arg(long)]
    pub allow_unsandboxed: bool,
}

impl Sandboxing {
    /// Sets the engine's setting from the flag.
    pub fn apply(&self, config: &mut EngineConfig) {
        config.allow_unsandboxed = self.allow_unsandboxed;
    }
}

/// `conclave sandbox` subcommands.
#[derive(Debug, Subcommand)]
pub enum SandboxCommand {
    /// Print which layers confine commands here and run a self-test; exit 0 when
    /// confinement works, 1 (saying why) when it does not.
    Check,
    /// The self-test's probe: tries each attempt and prints what happened.
    #[command(hide = true)]
    Probe {
        /// Attempts, as the self-test writes them (`read=PATH`, `tcp=ADDR`, …).
        attempts: Vec<String>,
    },
}

/// Runs a `conclave sandbox` subcommand; returns the exit code. Blocking: call it on
/// a blocking thread.
pub fn run(command: SandboxCommand) -> u8 {
    match command {
        SandboxCommand::Probe { attempts } => {
            u8::try_from(conclave_sandbox::attempts::probe_main(&attempts)).unwrap_or(exit::OTHER)
        }
        SandboxCommand::Check => check(),
    }
}

fn check() -> u8 {
    let probe = probe();
    print_probe(probe);
    if let Err(unavailable) = probe.can_confine() {
        eprintln!(
            "error: {unavailable}: commands would run unconfined. Command nodes fail and a review with a base skips its analyzer lanes, unless --allow-unsandboxed is given"
        );
        return exit::OTHER;
    }
    let program = match std::env::current_exe() {
        Ok(program) => program,
        Err(e) => {
            eprintln!("error: cannot find this program's file for the self-test's probe: {e}");
            return exit::OTHER;
        }
    };
    match selftest::run(&program, &["sandbox", "probe"]) {
        Ok(test) => report(&test),
        Err(e) => {
            eprintln!("error: {e}");
            exit::OTHER
        }
    }
}

fn print_probe(probe: &Probe) {
    let landlock = match probe.landlock_abi {
        0 => format!("none: {}", probe.landlock_missing.as_deref().unwrap_or("unavailable")),
        abi if abi >= ABI_SCOPES => format!("ABI {abi} (files, TCP, signal and abstract-socket scopes)"),
        abi if abi >= ABI_TCP => format!("ABI {abi} (files and TCP; no scopes)"),
        abi => format!("ABI {abi} (files only)"),
    };
    println!("Landlock: {landlock}");
    println!("seccomp: {}", probe.seccomp_missing.as_deref().unwrap_or("available"));
    let who = match (probe.root, probe.capabilities) {
        (true, _) => "root: each command drops every capability",
        (false, true) => "an ordinary user holding capabilities: each command drops them",
        (false, false) => "an ordinary user",
    };
    println!("Conclave runs as {who}");
    let processes = match (&probe.pids_cgroup, &probe.pids_cgroup_missing) {
        (Some(dir), _) => format!("bounded by a pids cgroup of each command's own, under {}", dir.display()),
        (None, Some(why)) => format!("not bounded ({why})"),
        (None, None) => "bounded by RLIMIT_NPROC".to_string(),
    };
    println!("processes: {processes}");
    let abi = probe.landlock_abi;
    println!("layers of a command without network: {}", layer_names(&probe.layers(abi, false)));
    for gap in probe.gaps(abi) {
        println!("not enforced here: {gap}");
    }
    println!(
        "default limits: CPU {DEFAULT_CPU_SECS} s and memory {DEFAULT_MEMORY_MB} MiB per process, files up to {DEFAULT_FILE_SIZE_MB} MiB, {DEFAULT_OPEN_FILES} open files, {DEFAULT_PROCESSES} processes"
    );
}

fn report(test: &SelfTest) -> u8 {
    println!("self-test (a probe started in the sandbox tries to get out):");
    for check in &test.checks {
        let verdict = if check.denied { "denied " } else { "ALLOWED" };
        println!("  {verdict}  {}: {}", check.name, check.detail);
    }
    println!("the probe ran under: {}", test.record.summary());
    if test.passed() {
        println!("result: commands are confined here");
        return exit::OK;
    }
    let escaped: Vec<&str> = test.checks.iter().filter(|c| !c.denied).map(|c| c.name.as_str()).collect();
    eprintln!("error: the sandbox did not stop the probe: {}", escaped.join("; "));
    exit::OTHER
}
