//! Files: nothing outside the granted paths is read, nothing outside the scratch
//! directory is written, `/etc`'s secrets and `/proc`'s process entries are closed.

use crate::{available, bash, run_in, scratch};
use conclave_sandbox::Policy;

#[test]
fn a_planted_file_outside_the_sandbox_cannot_be_read_and_a_granted_one_can() {
    if !available() {
        return;
    }
    let outside = tempfile::tempdir().expect("a directory");
    std::fs::write(outside.path().join("planted"), "canary-planted").expect("planted");
    let scratch = scratch();
    let script = format!("cat {}/planted", outside.path().display());
    let denied = bash(&scratch, &script);
    assert!(!denied.ok() && !denied.stdout().contains("canary"), "{} {}", denied.stdout(), denied.stderr());
    assert!(denied.stderr().contains("Permission denied"), "{}", denied.stderr());
    let mut policy = Policy::new(scratch.path().to_path_buf());
    policy.read.push(outside.path().to_path_buf());
    let granted = run_in(&policy, scratch.path(), &["bash", "-c", &script]);
    assert!(granted.ok() && granted.stdout().contains("canary-planted"), "{}", granted.stderr());
}

#[test]
fn only_the_scratch_directory_is_written() {
    if !available() {
        return;
    }
    let outside = tempfile::tempdir().expect("a directory");
    let scratch = scratch();
    let ran = bash(&scratch, &format!("echo x > {}/written", outside.path().display()));
    assert!(!ran.ok() && !outside.path().join("written").exists(), "{}", ran.stderr());
    let ran = bash(&scratch, "echo x > \"$HOME/in-home\" && mkdir \"$TMPDIR/d\" && echo y > \"$TMPDIR/d/f\"");
    assert!(ran.ok(), "{}", ran.stderr());
    assert!(scratch.path().join("in-home").exists() && scratch.path().join("d/f").exists());
}

#[test]
fn a_granted_read_path_stays_read_only() {
    if !available() {
        return;
    }
    let repository = tempfile::tempdir().expect("a directory");
    std::fs::create_dir_all(repository.path().join(".git/hooks")).expect("hooks");
    let scratch = scratch();
    let mut policy = Policy::new(scratch.path().to_path_buf());
    policy.read.push(repository.path().to_path_buf());
    let script = "echo evil > .git/hooks/pre-commit; echo evil > new-file; rm -f .git/HEAD; ls .git";
    let ran = run_in(&policy, repository.path(), &["bash", "-c", script]);
    assert!(ran.ok(), "listing the repository works: {}", ran.stderr());
    assert!(ran.stderr().matches("Permission denied").count() >= 2, "{}", ran.stderr());
    assert!(!repository.path().join(".git/hooks/pre-commit").exists());
    assert!(!repository.path().join("new-file").exists());
}

#[test]
fn etc_secrets_are_closed_and_the_rest_of_etc_is_open() {
    if !available() {
        return;
    }
    let scratch = scratch();
    let ran = bash(&scratch, "cat /etc/passwd > /dev/null && echo passwd-read; cat /etc/shadow");
    assert!(ran.stdout().contains("passwd-read"), "{}", ran.stderr());
    assert!(!ran.ok() && ran.stderr().contains("/etc/shadow: Permission denied"), "{}", ran.stderr());
}

#[test]
fn no_process_entry_of_proc_is_open_not_even_the_commands_own() {
    if !available() {
        return;
    }
    let scratch = scratch();
    let parent = std::process::id();
    let ran = bash(
        &scratch,
        &format!(
            "cat /proc/{parent}/cmdline; cat /proc/{parent}/environ; cat /proc/1/cmdline; ls /proc; cat /proc/cpuinfo > /dev/null && echo cpuinfo-read"
        ),
    );
    assert!(ran.stdout().contains("cpuinfo-read"), "{}", ran.stderr());
    assert_eq!(ran.stderr().matches("Permission denied").count(), 4, "{}", ran.stderr());
}

#[test]
fn the_home_directory_is_out_of_reach() {
    if !available() {
        return;
    }
    let Some(home) = conclave_sandbox::real_home() else { return };
    let scratch = scratch();
    let ran = bash(&scratch, &format!("ls {}; cat {}/.bashrc", home.display(), home.display()));
    assert!(!ran.ok() && ran.stderr().contains("Permission denied"), "{}", ran.stderr());
}
