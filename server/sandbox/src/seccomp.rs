//! The seccomp filter of a command, built with `seccompiler` in the parent: every
//! system call is allowed except those answered `EPERM` here. Sockets: `socket()` in
//! every domain and io_uring (which opens sockets too), unless the node opens the
//! network (`socketpair` stays). Privileges: what a confined command never needs
//! ([`PRIVILEGED`]), and device nodes. Signals, on kernels without Landlock's signal
//! scope: `kill`, `tgkill`, `rt_sigqueueinfo`, `rt_tgsigqueueinfo` and `pidfd_open`
//! aimed at Conclave, its threads or an ancestor (or their process groups, or every
//! process), and `tkill` altogether. On x86-64 the x32 system call numbers are
//! refused too, so they cannot go around the filter.

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule, TargetArch,
};
use std::collections::BTreeMap;

/// The privileged system calls a confined command never needs: modules, kexec,
/// reboot, mounts, namespaces joined, swap, clocks, host names, bpf, perf, keyrings,
/// ptrace and other processes' memory, userfaultfd, accounting and quotas, and file
/// handles (which open files by number, around paths).
pub const PRIVILEGED: &[i64] = &[
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_reboot,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_mount_setattr,
    libc::SYS_setns,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_settimeofday,
    libc::SYS_clock_settime,
    libc::SYS_clock_adjtime,
    libc::SYS_adjtimex,
    libc::SYS_sethostname,
    libc::SYS_setdomainname,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_userfaultfd,
    libc::SYS_acct,
    libc::SYS_quotactl,
    libc::SYS_open_by_handle_at,
    libc::SYS_syslog,
    libc::SYS_vhangup,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_iopl,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_ioperm,
];

/// The system calls that open sockets.
const SOCKETS: &[i64] =
    &[libc::SYS_socket, libc::SYS_io_uring_setup, libc::SYS_io_uring_enter, libc::SYS_io_uring_register];

/// What the filter refuses besides the privileged calls.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Refusals {
    /// Refuse sockets (the network is closed).
    pub sockets: bool,
    /// Refuse signals to these targets (pids, and negative process groups), when the
    /// kernel cannot scope signals.
    pub signal_targets: Option<Vec<i32>>,
}

/// The filter's program for this architecture.
pub fn program(refusals: &Refusals) -> Result<BpfProgram, seccompiler::Error> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = PRIVILEGED.iter().map(|nr| (*nr, Vec::new())).collect();
    device_nodes(&mut rules)?;
    if refusals.sockets {
        rules.extend(SOCKETS.iter().map(|nr| (*nr, Vec::new())));
    }
    if let Some(targets) = &refusals.signal_targets {
        signals(&mut rules, targets)?;
    }
    let filter = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(libc::EPERM as u32), arch)?;
    let mut program: BpfProgram = filter.try_into()?;
    if cfg!(target_arch = "x86_64") {
        program.splice(0..0, refuse_x32());
    }
    Ok(program)
}

/// `mknod` and `mknodat` of a character or block device.
fn device_nodes(rules: &mut BTreeMap<i64, Vec<SeccompRule>>) -> Result<(), seccompiler::Error> {
    let device = |arg: u8, kind: libc::mode_t| {
        SeccompRule::new(vec![SeccompCondition::new(
            arg,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::MaskedEq(u64::from(libc::S_IFMT)),
            u64::from(kind),
        )?])
    };
    #[cfg(target_arch = "x86_64")]
    rules.insert(libc::SYS_mknod, vec![device(1, libc::S_IFCHR)?, device(1, libc::S_IFBLK)?]);
    rules.insert(libc::SYS_mknodat, vec![device(2, libc::S_IFCHR)?, device(2, libc::S_IFBLK)?]);
    Ok(())
}

/// Signals aimed at any of `targets` (first argument), and `tkill`, whose thread ids
/// cannot be told apart from Conclave's.
fn signals(rules: &mut BTreeMap<i64, Vec<SeccompRule>>, targets: &[i32]) -> Result<(), seccompiler::Error> {
    let aimed = |targets: &[i32]| -> Result<Vec<SeccompRule>, seccompiler::Error> {
        let rules: Result<Vec<SeccompRule>, seccompiler::BackendError> = targets
            .iter()
            .map(|pid| {
                let value = u64::from(*pid as u32);
                SeccompRule::new(vec![SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, value)?])
            })
            .collect();
        Ok(rules?)
    };
    for nr in [libc::SYS_kill, libc::SYS_tgkill, libc::SYS_rt_sigqueueinfo, libc::SYS_rt_tgsigqueueinfo] {
        rules.insert(nr, aimed(targets)?);
    }
    let pids: Vec<i32> = targets.iter().copied().filter(|p| *p > 0).collect();
    rules.insert(libc::SYS_pidfd_open, aimed(&pids)?);
    rules.insert(libc::SYS_tkill, Vec::new());
    Ok(())
}

/// On x86-64: system call numbers with the x32 bit set are refused before anything
/// else, so that `socket` and the others cannot be reached by their x32 numbers.
fn refuse_x32() -> Vec<seccompiler::sock_filter> {
    const X32_BIT: u32 = 0x4000_0000;
    let op = |code: u32| u16::try_from(code).unwrap_or(0);
    vec![
        // Load the system call number (offset 0 of `seccomp_data`).
        seccompiler::sock_filter { code: op(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS), jt: 0, jf: 0, k: 0 },
        // Below the x32 bit: go on to the filter; else return EPERM.
        seccompiler::sock_filter { code: op(libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K), jt: 0, jf: 1, k: X32_BIT },
        seccompiler::sock_filter {
            code: op(libc::BPF_RET | libc::BPF_K),
            jt: 0,
            jf: 0,
            k: libc::SECCOMP_RET_ERRNO | libc::EPERM as u32,
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_compiles_with_and_without_its_optional_parts() {
        let small = program(&Refusals::default()).expect("compiles");
        let full = program(&Refusals { sockets: true, signal_targets: Some(vec![1, 42, -42, -1]) }).expect("compiles");
        assert!(full.len() > small.len() && full.len() < 4096, "{} instructions", full.len());
    }
}
