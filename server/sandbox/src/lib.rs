//! The sandbox every command Conclave starts runs in, on Linux: the one place that
//! knows how to confine a child process.
//!
//! [`confine`] ([`prepare`], blocking, then [`Prepared::apply`]) prepares, in the
//! parent, everything a [`Policy`] asks for (a Landlock
//! ruleset of files, TCP and scopes in `files.rs`, a seccomp filter in `seccomp.rs`,
//! limits, a `pids` cgroup in `cgroup.rs`, the capability drop) and hands it to
//! `child.rs`, which applies it between `fork` and `exec` with raw system calls. It
//! returns a [`Confinement`]: the [`SandboxRecord`] of the layers that held, and the
//! cgroup to clean up once the command ended. `probe.rs` asks the kernel once what it
//! offers ([`probe`]); `scratch.rs` makes a command's scratch directory; `selftest.rs`
//! is `conclave sandbox check`'s self-test with the probe's attempts
//! (`attempts.rs`). `ancestors.rs` names the processes a command may not signal on
//! kernels without Landlock's signal scope.
//!
//! `paths.rs` confines paths rather than processes: the repository root the review
//! tools and the symbol index read under (no `..`, no `.git/`, no ignored file, no
//! symlink leading out), so both read exactly the same files.
//!
//! **Invariant:** unsafe code lives in `child.rs` alone, and runs only raw system
//! calls prepared by the parent; a command is confined by every layer the kernel
//! offers or not started (callers decide whether to run it unconfined, never this
//! crate).

pub mod ancestors;
pub mod attempts;
pub mod cgroup;
mod child;
pub mod files;
pub mod paths;
pub mod policy;
pub mod probe;
pub mod scratch;
pub mod seccomp;
pub mod selftest;

use conclave_shared::{SandboxLayer, SandboxRecord};
use std::os::fd::OwnedFd;
use std::process::Command;

use crate::cgroup::CommandCgroup;
use crate::child::{ChildPlan, LimitResource};

pub use policy::{Limits, Policy, expand_home, real_home};
pub use probe::{Probe, Unavailable, probe};
pub use scratch::Scratch;

/// Why a command could not be confined.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The kernel offers too little to confine anything.
    #[error(transparent)]
    Unavailable(#[from] Unavailable),
    /// The Landlock ruleset could not be built.
    #[error("could not build the command's Landlock rules: {0}")]
    Landlock(#[from] landlock::RulesetError),
    /// The seccomp filter could not be built.
    #[error("could not build the command's seccomp filter: {0}")]
    Seccomp(#[from] seccompiler::Error),
}

/// A confined command's sandbox, kept until the command ended: what held, and the
/// cgroup whose leftover processes are killed when this is dropped.
#[derive(Debug)]
pub struct Confinement {
    /// The layers that hold for the command.
    pub record: SandboxRecord,
    cgroup: Option<CommandCgroup>,
}

/// Makes `command` confine its child as `policy` says, with every layer this kernel
/// offers; fails when the kernel cannot confine it ([`Probe::can_confine`]). The
/// caller sets the command's environment (its `HOME` and `TMPDIR` the scratch
/// directory) and keeps the [`Confinement`] until the command ended. Blocking (it
/// reads `/etc` and `/proc`, and may make a cgroup): async code calls [`prepare`] on
/// a blocking thread and [`Prepared::apply`] on its own.
pub fn confine(command: &mut Command, policy: &Policy) -> Result<Confinement, SandboxError> {
    Ok(prepare(policy)?.apply(command))
}

/// Everything a command's confinement needs, prepared in the parent, not yet given
/// to a command.
#[derive(Debug)]
pub struct Prepared {
    plan: ChildPlan,
    record: SandboxRecord,
    cgroup: Option<CommandCgroup>,
}

impl Prepared {
    /// What will confine the command.
    pub fn record(&self) -> &SandboxRecord {
        &self.record
    }

    /// Makes `command`'s child confine itself before it runs its program; does not block.
    pub fn apply(self, command: &mut Command) -> Confinement {
        child::install(command, self.plan);
        Confinement { record: self.record, cgroup: self.cgroup }
    }
}

/// Prepares what confines a command under `policy` (the Landlock ruleset, the
/// seccomp filter, the limits, the cgroup); fails when the kernel cannot confine.
/// Blocking: it reads `/etc` and `/proc`, and may make a cgroup.
pub fn prepare(policy: &Policy) -> Result<Prepared, SandboxError> {
    let probe = probe();
    probe.can_confine()?;
    let abi = policy.landlock_abi_at_most.map_or(probe.landlock_abi, |most| most.clamp(1, probe.landlock_abi));
    let landlock = files::ruleset(policy, abi)?
        .ok_or_else(|| Unavailable { reason: "the kernel refused to create a Landlock ruleset".into() })?;
    let signal_targets = (abi < probe::ABI_SCOPES).then(ancestors::signal_targets);
    let seccomp = seccomp::program(&seccomp::Refusals { sockets: !policy.network, signal_targets })?;
    let mut record = SandboxRecord {
        confined: true,
        layers: probe.layers(abi, policy.network),
        network: policy.network,
        gaps: probe.gaps(abi),
    };
    let (cgroup, cgroup_procs, nproc) = process_limit(probe, policy.limits.processes, &mut record);
    let plan = ChildPlan {
        cgroup_procs,
        limits: rlimits(&policy.limits, nproc),
        drop_capabilities: probe.capabilities,
        drop_bounding: holds_setpcap(),
        last_capability: last_capability(),
        landlock: Some(landlock),
        seccomp: Some(seccomp),
    };
    Ok(Prepared { plan, record, cgroup })
}

impl Confinement {
    /// Whether the command's processes are bounded by a cgroup of its own.
    pub fn has_cgroup(&self) -> bool {
        self.cgroup.is_some()
    }
}

/// Makes this process non-dumpable, as ssh-agent does: no core dump, and no process
/// of the same user may read its memory or environment through `/proc` or ptrace.
pub fn make_non_dumpable() -> std::io::Result<()> {
    nix::sys::prctl::set_dumpable(false).map_err(std::io::Error::from)
}

/// How the command's processes are bounded: a cgroup of its own as root (with its
/// `cgroup.procs` for the child), else `RLIMIT_NPROC` above the user's current count.
fn process_limit(
    probe: &Probe,
    processes: u64,
    record: &mut SandboxRecord,
) -> (Option<CommandCgroup>, Option<OwnedFd>, Option<u64>) {
    if !probe.root {
        return (None, None, Some(user_tasks().saturating_add(processes)));
    }
    let Some(root) = &probe.pids_cgroup else { return (None, None, None) };
    match CommandCgroup::create(root, processes) {
        Ok((cgroup, procs)) => (Some(cgroup), Some(procs.into()), None),
        Err(e) => {
            record.layers.retain(|l| *l != SandboxLayer::ProcessCgroup);
            record.gaps.push(format!("process count not bounded: cannot create a pids cgroup: {e}"));
            (None, None, None)
        }
    }
}

/// The limits to set in the child: CPU, data, file size, open files, no core dumps,
/// and `RLIMIT_NPROC` when it applies.
fn rlimits(limits: &Limits, nproc: Option<u64>) -> Vec<(LimitResource, u64)> {
    let mut set = vec![
        (libc::RLIMIT_CPU, limits.cpu_secs),
        (libc::RLIMIT_DATA, limits.memory_bytes),
        (libc::RLIMIT_FSIZE, limits.file_size_bytes),
        (libc::RLIMIT_NOFILE, limits.open_files),
        (libc::RLIMIT_CORE, 0),
    ];
    if let Some(nproc) = nproc {
        set.push((libc::RLIMIT_NPROC, nproc));
    }
    set
}

/// The tasks (processes and threads) of this process's real user, which
/// `RLIMIT_NPROC` counts against.
fn user_tasks() -> u64 {
    let uid = nix::unistd::getuid().as_raw().to_string();
    let entries = std::fs::read_dir("/proc").into_iter().flatten().flatten();
    entries
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit())))
        .filter_map(|e| std::fs::read_to_string(e.path().join("status")).ok())
        .filter(|status| {
            status.lines().any(|l| l.strip_prefix("Uid:").and_then(|v| v.split_whitespace().next()) == Some(&uid))
        })
        .map(|status| {
            let threads = status.lines().find_map(|l| l.strip_prefix("Threads:"));
            threads.and_then(|t| t.trim().parse::<u64>().ok()).unwrap_or(1)
        })
        .sum()
}

/// Whether this process may empty a child's bounding set (`CAP_SETPCAP` effective).
fn holds_setpcap() -> bool {
    const CAP_SETPCAP: u32 = 8;
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .is_some_and(|caps| caps & (1 << CAP_SETPCAP) != 0)
}

/// The highest capability number of this kernel.
fn last_capability() -> libc::c_int {
    std::fs::read_to_string("/proc/sys/kernel/cap_last_cap").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(40)
}

/// The layers a record lists, for messages: `landlock_files, seccomp_sockets, …`.
pub fn layer_names(layers: &[SandboxLayer]) -> String {
    layers.iter().map(|l| l.as_str()).collect::<Vec<_>>().join(", ")
}
