//! A whole review against an OpenAI-compatible fake server that answers every schema
//! with a minimal valid instance: the pipeline runs end to end on the real binary,
//! findings cite the changed file, and the engine catches the fake's zero counts.

use conclave_testkit::answers::chat_completion_answer;
use conclave_testkit::{FakeServer, git};
use std::process::Command;

const CLI: &str = env!("CARGO_BIN_EXE_conclave-testbed");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn review_runs_end_to_end_against_an_answering_fake_server() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).expect("mkdir");
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("lib.rs"), "pub fn one() -> i32 { 1 }\n").expect("write");
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "one"]);
    std::fs::write(repo.join("lib.rs"), "pub fn one() -> i32 { 1 }\npub fn two() -> i32 { 3 }\n").expect("write");

    let server = FakeServer::start_responding(chat_completion_answer).await;
    let base = format!("{}/v1", server.base);
    let workdir = dir.path().to_path_buf();
    let out = tokio::task::spawn_blocking(move || {
        Command::new(CLI)
            .args(["review", &repo.display().to_string(), "--provider", "openai", "--format", "json"])
            .current_dir(&workdir)
            .env("CONCLAVE_DB", workdir.join("runs.db"))
            .env("OPENAI_BASE_URL", base)
            .env("OPENAI_API_KEY", "not-a-real-key")
            .output()
            .expect("review runs")
    })
    .await
    .expect("joined");
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

#[test]
fn made_up_answers_satisfy_their_schema() {
    let schema = serde_json::json!({
        "type": "object",
        "properties": {
            "findings": {"type": "array", "items": {"$ref": "#/$defs/f"}},
            "note": {"type": ["string", "null"]},
            "counts": {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}, "required": ["n"], "additionalProperties": false}
        },
        "required": ["findings", "note", "counts"],
        "additionalProperties": false,
        "$defs": {"f": {"type": "object", "properties": {"file": {"type": "string", "enum": ["src/a.rs"]}, "line": {"type": "integer"}}, "required": ["file", "line"], "additionalProperties": false}}
    });
    let value = conclave_testkit::answers::example(&schema, &schema, "", 0);
    assert_eq!(
        value,
        serde_json::json!({"findings": [{"file": "src/a.rs", "line": 1}], "note": "example", "counts": {"n": 0}})
    );
}

/// Runs `conclave review REPO ARGS --provider openai --format json` against a fake
/// server that answers every schema; returns the exit code, the report and stderr.
async fn review_json(repo: &std::path::Path, args: &[&str]) -> (Option<i32>, serde_json::Value, String) {
    let server = FakeServer::start_responding(chat_completion_answer).await;
    let base = format!("{}/v1", server.base);
    let (repo, args): (std::path::PathBuf, Vec<String>) =
        (repo.to_path_buf(), args.iter().map(|a| a.to_string()).collect());
    let out = tokio::task::spawn_blocking(move || {
        let workdir = repo.parent().expect("parent").to_path_buf();
        Command::new(CLI)
            .arg("review")
            .arg(&repo)
            .args(&args)
            .args(["--provider", "openai", "--format", "json"])
            .current_dir(&workdir)
            .env("CONCLAVE_DB", workdir.join("runs.db"))
            .env("OPENAI_BASE_URL", base)
            .env("OPENAI_API_KEY", "not-a-real-key")
            .output()
            .expect("review runs")
    })
    .await
    .expect("joined");
    let report = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (out.status.code(), report, String::from_utf8_lossy(&out.stderr).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quoted_unicode_and_spaced_paths_are_reviewed_exactly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(repo.join("docs")).expect("mkdir");
    git(&repo, &["init", "-q", "-b", "main"]);
    let names = ["docs/User Guide.md", "ünïcode.txt", "tab\there.txt", "quote\"d.txt"];
    for name in names {
        std::fs::write(repo.join(name), "one\n").expect("write");
    }
    std::fs::write(repo.join("body.txt"), "-- a\n").expect("write");
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "one"]);
    git(&repo, &["checkout", "-q", "-b", "feature"]);
    for name in names {
        std::fs::write(repo.join(name), "one\ntwo\n").expect("write");
    }
    // Body lines that look like file headers stay body lines.
    std::fs::write(repo.join("body.txt"), "-- a\n--- b\n+++ c\n").expect("write");
    git(&repo, &["commit", "-q", "-am", "two"]);

    let (code, report, stderr) = review_json(&repo, &["--base", "main"]).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(report["status"], "succeeded", "{report}");
    assert!(stderr.contains("reviewing 5 file(s)"), "{stderr}");
    let cited: Vec<&str> = report["result"]["json"]["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter_map(|f| f["file"].as_str())
        .collect();
    assert!(!cited.is_empty() && cited.iter().all(|f| ["body.txt", "docs/User Guide.md", "quote\"d.txt", "tab\there.txt", "ünïcode.txt"].contains(f)), "{cited:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hunk_over_the_cap_is_left_out_and_says_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).expect("mkdir");
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("small.rs"), "fn a() {}\n").expect("write");
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "one"]);
    std::fs::write(repo.join("small.rs"), "fn a() {}\nfn b() {}\n").expect("write");
    std::fs::write(repo.join("generated.json"), "[1,2,3]\n".repeat(20_000)).expect("write");

    let (code, report, stderr) = review_json(&repo, &["--max-diff-bytes", "4096"]).await;
    assert_eq!(code, Some(0), "{stderr}");
    // The one hunk of the generated file is larger than a part: only it is left out.
    assert_eq!(
        report["review"]["parts"]["left_out"],
        serde_json::json!([{"path": "generated.json", "lines": [1, 20000], "diff_bytes": 340020}])
    );
    assert_eq!(report["review"]["omitted"], serde_json::json!([]));
    assert_eq!(report["review"]["degraded"], true, "a hunk not reviewed makes the review degraded");
    assert!(stderr.contains("reviewing 2 file(s)"), "{stderr}");

    let (code, _, stderr) = review_json(&repo, &["--max-diff-bytes", "10"]).await;
    assert_eq!(code, Some(2), "nothing fits: the review refuses: {stderr}");
    assert!(stderr.contains("the change is too large to review"), "{stderr}");
    assert!(stderr.contains("review a smaller change or raise the cap (--max-diff-bytes)"), "{stderr}");
}
