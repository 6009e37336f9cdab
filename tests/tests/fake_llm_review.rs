//! The README's way to try a review without an LLM account: `conclave-fake-llm`
//! stands in for an OpenAI-compatible server and `conclave review --provider openai`
//! runs the whole pipeline against it.

use conclave_tests::git;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

const CLI: &str = env!("CARGO_BIN_EXE_conclave-testbed");
const FAKE: &str = env!("CARGO_BIN_EXE_conclave-fake-llm");

struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn review_runs_end_to_end_against_the_fake_llm() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).expect("mkdir");
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("lib.rs"), "pub fn one() -> i32 { 1 }\n").expect("write");
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "one"]);
    std::fs::write(repo.join("lib.rs"), "pub fn one() -> i32 { 1 }\npub fn two() -> i32 { 3 }\n").expect("write");

    let mut fake = Command::new(FAKE).args(["--port", "0"]).stderr(Stdio::piped()).spawn().expect("fake starts");
    let mut first = String::new();
    BufReader::new(fake.stderr.take().expect("stderr")).read_line(&mut first).expect("banner");
    let _guard = Killed(fake);
    let base = first.split_whitespace().find(|w| w.starts_with("http://")).expect("listening URL").to_string();

    let out = Command::new(CLI)
        .args(["review", &repo.display().to_string(), "--provider", "openai", "--format", "json"])
        .current_dir(dir.path())
        .env("CONCLAVE_DB", dir.path().join("runs.db"))
        .env("OPENAI_BASE_URL", &base)
        .env("OPENAI_API_KEY", "not-a-real-key")
        .output()
        .expect("review runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let envelope: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    assert_eq!(envelope["status"], "succeeded");
    assert_eq!(envelope["model"], "gpt-4.1-mini", "--provider without --model uses the provider's default");
    let findings = envelope["result"]["json"]["findings"].as_array().expect("findings");
    assert!(findings.iter().all(|f| f["file"] == "lib.rs"), "findings cite the changed file: {findings:?}");
    let mismatches = envelope["review"]["count_mismatches"].as_array().expect("mismatches");
    assert!(!mismatches.is_empty(), "the fake's zero counts disagree with its one finding, and the engine says so");
}
