//! Signals and ancestors: a command cannot signal the process that started it, nor
//! read its memory or environment.

use crate::{available, bash, scratch};

#[test]
fn kill_0_on_the_parent_and_its_parent_fails() {
    if !available() {
        return;
    }
    let scratch = scratch();
    let grandparent = nix::unistd::getppid();
    let ran = bash(
        &scratch,
        &format!(
            "kill -0 {} && echo parent-reached; kill -0 {grandparent} && echo grandparent-reached; kill -0 $$ && echo self-reached",
            std::process::id()
        ),
    );
    assert!(!ran.stdout().contains("parent-reached"), "{}", ran.stdout());
    assert!(ran.stdout().contains("self-reached"), "a command signals its own processes: {}", ran.stderr());
    assert!(ran.stderr().contains("Operation not permitted"), "{}", ran.stderr());
}

#[test]
fn the_parents_memory_and_environment_are_out_of_reach() {
    if !available() {
        return;
    }
    let scratch = scratch();
    let me = std::process::id();
    let ran = bash(&scratch, &format!("head -c 16 /proc/{me}/mem; cat /proc/{me}/environ; cat /proc/{me}/maps"));
    assert!(ran.stdout().is_empty(), "{}", ran.stdout());
    assert_eq!(ran.stderr().matches("Permission denied").count(), 3, "{}", ran.stderr());
}

#[test]
fn without_landlock_scopes_seccomp_refuses_signals_to_every_ancestor() {
    if !available() {
        return;
    }
    let scratch = scratch();
    let mut policy = conclave_sandbox::Policy::new(scratch.path().to_path_buf());
    // An ABI 5 kernel has file and TCP rules but no signal scope.
    policy.landlock_abi_at_most = Some(5);
    let me = std::process::id();
    let group = nix::unistd::getpgrp();
    let script = format!(
        "kill -0 {me} && echo parent-reached; kill -0 -{group} && echo group-reached; kill -0 -1 && echo all-reached; \
         kill -0 1 && echo init-reached; kill -0 $$ && echo self-reached"
    );
    let ran = crate::run_in(&policy, scratch.path(), &["bash", "-c", &script]);
    assert_eq!(ran.stdout().trim(), "self-reached", "{}", ran.stderr());
    assert!(ran.record.layers.contains(&conclave_shared::SandboxLayer::SeccompSignals), "{:?}", ran.record);
    assert!(!ran.record.layers.contains(&conclave_shared::SandboxLayer::LandlockScopes), "{:?}", ran.record);
}
