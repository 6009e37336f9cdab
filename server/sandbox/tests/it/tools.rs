//! The tools analyzer lanes run work inside the default sandbox: git reads a
//! repository (read-only), python3 starts, and a probe of what a tool reads in
//! `/proc` and `/etc` passes.

use crate::{available, run_in, scratch};
use conclave_sandbox::Policy;
use std::process::Command;

#[test]
fn git_reads_a_read_only_repository() {
    if !available() {
        return;
    }
    let repository = tempfile::tempdir().expect("a directory");
    let git = |args: &[&str]| {
        let status = Command::new("git").args(args).current_dir(repository.path()).output().expect("git runs");
        assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
    };
    git(&["init", "-q", "-b", "main"]);
    std::fs::write(repository.path().join("a.txt"), "one\n").expect("written");
    git(&["add", "."]);
    git(&["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one"]);
    std::fs::write(repository.path().join("a.txt"), "one \ntwo\n").expect("written");
    let scratch = scratch();
    let mut policy = Policy::new(scratch.path().to_path_buf());
    policy.read.push(repository.path().to_path_buf());
    let ran = run_in(&policy, repository.path(), &["git", "diff", "--check", "HEAD"]);
    assert_eq!(ran.output.status.code(), Some(2), "{} {}", ran.stdout(), ran.stderr());
    assert!(ran.stdout().contains("a.txt:1: trailing whitespace"), "{}", ran.stdout());
    let ran = run_in(&policy, repository.path(), &["git", "log", "--oneline"]);
    assert!(ran.ok() && ran.stdout().contains("one"), "{}", ran.stderr());
}

#[test]
fn python3_starts_and_runs() {
    if !available() {
        return;
    }
    let scratch = scratch();
    let policy = Policy::new(scratch.path().to_path_buf());
    let ran = run_in(
        &policy,
        scratch.path(),
        &[
            "/usr/bin/python3",
            "-c",
            "import json, os, tempfile; print(json.dumps(os.cpu_count() > 0)); tempfile.mkstemp()",
        ],
    );
    assert!(ran.ok() && ran.stdout().contains("true"), "{}", ran.stderr());
}
