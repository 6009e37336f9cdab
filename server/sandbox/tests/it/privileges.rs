//! Privileges: no capability survives (as root, a file only its owner could read
//! without `CAP_DAC_OVERRIDE` stays closed; `chown` fails), no device node is made,
//! and the privileged system calls are refused.

use crate::{available, bash, scratch};

#[test]
fn root_keeps_no_capability() {
    if !available() || !conclave_sandbox::probe().root {
        eprintln!("skipped: needs root");
        return;
    }
    let scratch = scratch();
    let ran = bash(&scratch, "echo secret > locked && chmod 000 locked && cat locked; chown 65534 locked");
    assert!(!ran.stdout().contains("secret"), "root read a mode-000 file: capabilities survived");
    assert!(ran.stderr().contains("cat: locked: Permission denied"), "{}", ran.stderr());
    assert!(ran.stderr().contains("Operation not permitted"), "chown needs CAP_CHOWN: {}", ran.stderr());
    assert!(ran.record.layers.contains(&conclave_shared::SandboxLayer::CapabilitiesDropped));
}

#[test]
fn no_device_node_is_made_even_in_the_scratch_directory() {
    if !available() {
        return;
    }
    let scratch = scratch();
    let ran = bash(&scratch, "mknod disk b 8 0; mknod mem c 1 1; mkfifo fifo && echo fifo-made");
    assert!(!scratch.path().join("disk").exists() && !scratch.path().join("mem").exists());
    assert!(ran.stdout().contains("fifo-made"), "a fifo is no device: {}", ran.stderr());
}

#[test]
fn ptrace_and_other_privileged_calls_are_refused() {
    if !available() {
        return;
    }
    let scratch = scratch();
    // PTRACE_TRACEME (0) succeeds for any process that is not already traced; keyctl
    // and perf_event_open answer EPERM, never ENOSYS or success.
    let script = "import ctypes, os\n\
        libc = ctypes.CDLL(None, use_errno=True)\n\
        for name, nr, args in [('ptrace', 101, (0, 0, 0, 0)), ('keyctl', 250, (0, 0, 0, 0)), ('bpf', 321, (0, 0, 0))]:\n    \
        r = libc.syscall(nr, *args)\n    print(name, r, ctypes.get_errno())\n";
    let ran = bash(&scratch, &format!("/usr/bin/python3 -c \"{script}\""));
    if std::env::consts::ARCH != "x86_64" {
        return;
    }
    for name in ["ptrace", "keyctl", "bpf"] {
        assert!(ran.stdout().contains(&format!("{name} -1 1\n")), "{name}: {} {}", ran.stdout(), ran.stderr());
    }
}
