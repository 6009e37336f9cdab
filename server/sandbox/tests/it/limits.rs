//! Limits: a 4 GiB allocation fails under the default memory limit, a fork bomb
//! (bounded in the test itself) stops at the process limit, CPU time and file size
//! are cut at theirs.

use crate::{available, bash, run_in, scratch};
use conclave_sandbox::Policy;
use conclave_shared::SandboxLimits;

#[test]
fn a_4_gib_allocation_fails_under_the_default_limit() {
    if !available() {
        return;
    }
    let scratch = scratch();
    let script =
        "try:\n    b = bytearray(4 << 30)\n    print('allocated')\nexcept MemoryError:\n    print('refused')\n";
    let ran = bash(&scratch, &format!("/usr/bin/python3 -c \"{script}\""));
    assert!(ran.stdout().contains("refused"), "{} {}", ran.stdout(), ran.stderr());
}

#[test]
fn a_fork_bomb_stops_at_the_process_limit() {
    if !available() {
        return;
    }
    let scratch = scratch();
    let mut policy = Policy::new(scratch.path().to_path_buf());
    policy.limits = conclave_sandbox::Limits::from_config(&SandboxLimits { processes: Some(16), ..Default::default() });
    // At most 64 forks, each child a sleeper, so a failing sandbox cannot take the
    // machine down; what is left is killed with the command's cgroup.
    let script = "import os, time\n\
        n = 0\n\
        for i in range(64):\n    \
        try:\n        pid = os.fork()\n    \
        except OSError as e:\n        print('refused', e.errno); break\n    \
        if pid == 0:\n        time.sleep(3); os._exit(0)\n    \
        n += 1\n\
        print('started', n)\n";
    let ran = run_in(&policy, scratch.path(), &["/usr/bin/python3", "-c", script]);
    let started: usize = ran
        .stdout()
        .lines()
        .find_map(|l| l.strip_prefix("started "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("{} {}", ran.stdout(), ran.stderr()));
    assert!(started < 16, "{started} sleepers started under a limit of 16: {}", ran.stderr());
    assert!(ran.stdout().contains("refused 11"), "fork answered EAGAIN: {}", ran.stdout());
}

#[test]
fn cpu_time_and_file_size_are_cut_at_their_limits() {
    if !available() {
        return;
    }
    let scratch = scratch();
    let mut policy = Policy::new(scratch.path().to_path_buf());
    policy.limits = conclave_sandbox::Limits::from_config(&SandboxLimits {
        cpu_secs: Some(1),
        file_size_mb: Some(1),
        ..Default::default()
    });
    let started = std::time::Instant::now();
    let ran = run_in(&policy, scratch.path(), &["bash", "-c", "while :; do :; done"]);
    assert!(!ran.ok() && started.elapsed().as_secs() < 10, "the busy loop was stopped by its CPU limit");
    let ran = run_in(&policy, scratch.path(), &["bash", "-c", "head -c 3000000 /dev/zero > big"]);
    assert!(!ran.ok(), "{}", ran.stderr());
    let size = std::fs::metadata(scratch.path().join("big")).map(|m| m.len()).unwrap_or(0);
    assert!(size <= 1 << 20, "{size} bytes written past a 1 MiB limit");
}

#[test]
fn the_record_says_which_process_limit_held() {
    if !available() {
        return;
    }
    let scratch = scratch();
    let ran = bash(&scratch, "true");
    let layers = &ran.record.layers;
    let probe = conclave_sandbox::probe();
    use conclave_shared::SandboxLayer::{ProcessCgroup, ProcessRlimit};
    match (probe.root, &probe.pids_cgroup) {
        (false, _) => assert!(layers.contains(&ProcessRlimit), "{layers:?}"),
        (true, Some(_)) => assert!(layers.contains(&ProcessCgroup), "{layers:?}"),
        (true, None) => assert!(ran.record.gaps.iter().any(|g| g.contains("process count")), "{:?}", ran.record),
    }
}
