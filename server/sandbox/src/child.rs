//! The code that runs in the child between `fork` and `exec` (through
//! `CommandExt::pre_exec`), the one module of the workspace that allows unsafe code.
//!
//! Conclave is multi-threaded, so after `fork` the child may only make
//! async-signal-safe calls: another thread may have held the allocator's lock at the
//! moment of the fork. Everything is therefore prepared in the parent ([`ChildPlan`]:
//! open file descriptors, the limits as numbers, the compiled seccomp program), and
//! the child makes raw system calls only, in this order: join the command's cgroup
//! (`write`), set the limits (`setrlimit`), `prctl(PR_SET_NO_NEW_PRIVS)`, drop every
//! capability (`prctl` and `capset`), restrict itself with the Landlock ruleset
//! (`landlock_restrict_self`), and install the seccomp filter (`seccomp`). No call
//! here allocates, locks or touches memory shared with other threads; each is a
//! single system call, which POSIX and Linux make async-signal-safe. An error is
//! the system call's `errno`, which `std` reports from `spawn`.

#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::Command;

/// Everything the child needs, prepared by the parent.
#[derive(Debug)]
pub struct ChildPlan {
    /// `cgroup.procs` of the command's cgroup, opened for writing.
    pub cgroup_procs: Option<OwnedFd>,
    /// Limits to set: resource and value (soft and hard alike).
    pub limits: Vec<(LimitResource, u64)>,
    /// Whether to drop every capability (Conclave holds some).
    pub drop_capabilities: bool,
    /// Whether the bounding set can be emptied too (Conclave holds `CAP_SETPCAP`).
    pub drop_bounding: bool,
    /// The highest capability number this kernel knows.
    pub last_capability: libc::c_int,
    /// The Landlock ruleset to restrict the child with.
    pub landlock: Option<OwnedFd>,
    /// The seccomp program to install.
    pub seccomp: Option<seccompiler::BpfProgram>,
}

/// A resource of `setrlimit`, in the type this C library takes.
#[cfg(target_env = "gnu")]
pub type LimitResource = libc::__rlimit_resource_t;
/// A resource of `setrlimit`, in the type this C library takes.
#[cfg(not(target_env = "gnu"))]
pub type LimitResource = libc::c_int;

/// Makes `command`'s child confine itself as `plan` says before it runs the program.
pub fn install(command: &mut Command, plan: ChildPlan) {
    // SAFETY: the closure runs in the forked child before exec. It only reads `plan`
    // (owned by the closure, prepared in the parent, never changed) and makes the raw
    // system calls listed in this module's header, each async-signal-safe; it does
    // not allocate, lock, or use any state other threads could have left inconsistent.
    unsafe {
        command.pre_exec(move || enter(&plan));
    }
}

/// Applies `plan` to the calling process; called only in the forked child.
fn enter(plan: &ChildPlan) -> io::Result<()> {
    if let Some(procs) = &plan.cgroup_procs {
        // SAFETY: write(2) of a static one-byte buffer to an open descriptor; `0` moves
        // the writing process into the cgroup.
        check(unsafe { libc::write(procs.as_raw_fd(), b"0".as_ptr().cast(), 1) } as libc::c_long)?;
    }
    for (resource, value) in &plan.limits {
        let limit = libc::rlimit { rlim_cur: *value as libc::rlim_t, rlim_max: *value as libc::rlim_t };
        // SAFETY: setrlimit(2) with a pointer to a limit on this stack frame.
        check(unsafe { libc::setrlimit(*resource, &limit) }.into())?;
    }
    // SAFETY: prctl(2) with integer arguments only.
    check(unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) }.into())?;
    if plan.drop_capabilities {
        drop_capabilities(plan.drop_bounding, plan.last_capability)?;
    }
    if let Some(ruleset) = &plan.landlock {
        // SAFETY: landlock_restrict_self(2) with an open ruleset descriptor and no flags.
        check(unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0) })?;
    }
    if let Some(program) = &plan.seccomp {
        let fprog = libc::sock_fprog {
            len: u16::try_from(program.len()).map_err(|_| io::Error::from_raw_os_error(libc::E2BIG))?,
            filter: program.as_ptr().cast_mut().cast(),
        };
        // SAFETY: seccomp(2) reads the program the parent compiled (seccompiler's
        // `sock_filter` has the kernel's layout) through a pointer on this stack frame.
        check(unsafe {
            libc::syscall(libc::SYS_seccomp, libc::SECCOMP_SET_MODE_FILTER, 0, &fprog as *const libc::sock_fprog)
        })?;
    }
    Ok(())
}

/// Header and data of capset(2), version 3 (two 32-bit words per set).
#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

const CAPABILITY_VERSION_3: u32 = 0x2008_0522;
/// `SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
/// SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED`: root gains nothing at exec.
const SECURE_BITS: libc::c_ulong = 0b10_1111;

/// Drops every capability so that exec does not grant them again: the secure bits
/// that make root an ordinary user at exec and the bounding set (when
/// `bounding`), the ambient set, then effective, permitted and inheritable.
fn drop_capabilities(bounding: bool, last: libc::c_int) -> io::Result<()> {
    if bounding {
        // SAFETY: prctl(2) with integer arguments only.
        check(unsafe { libc::prctl(libc::PR_SET_SECUREBITS, SECURE_BITS, 0, 0, 0) }.into())?;
        for capability in 0..=last {
            // SAFETY: prctl(2) with integer arguments only.
            check(unsafe { libc::prctl(libc::PR_CAPBSET_DROP, capability as libc::c_ulong, 0, 0, 0) }.into())?;
        }
    }
    // SAFETY: prctl(2) with integer arguments only. Kernels before 4.3 have no ambient
    // set and answer EINVAL, which leaves nothing to clear.
    let ambient =
        unsafe { libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong, 0, 0, 0) };
    if ambient != 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL) {
        return Err(io::Error::last_os_error());
    }
    let header = CapHeader { version: CAPABILITY_VERSION_3, pid: 0 };
    let data = [CapData { effective: 0, permitted: 0, inheritable: 0 }; 2];
    // SAFETY: capset(2) reads the header and two data words on this stack frame.
    check(unsafe { libc::syscall(libc::SYS_capset, &header as *const CapHeader, data.as_ptr()) })
}

/// A system call's result as `io::Result`: negative is the `errno`.
fn check(result: libc::c_long) -> io::Result<()> {
    if result < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
}
