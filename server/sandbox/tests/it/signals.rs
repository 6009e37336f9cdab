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
    let ran = bash(&scratch, &format!("kill -0 {} && echo parent-reached; kill -0 {grandparent} && echo grandparent-reached; kill -0 $$ && echo self-reached", std::process::id()));
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
