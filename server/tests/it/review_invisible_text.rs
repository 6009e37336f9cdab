//! The `invisible-text` lane (Trojan Source, CVE-2021-42574): a base that already
//! holds a right-to-left override in one line, and a change that adds another in a
//! new line and a zero-width space in a third. `conclave scan invisible-text` reports
//! only what the change adds; a review runs it as a lane of the built-in conclave,
//! Anthropic faked over loopback, and reports the added override as a blocker whose
//! description shows it escaped, never raw.

use conclave_testkit::{FakeServer, git};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::review_e2e::{review, writer_routes};

/// In the base: an override inside a comment, already reviewed.
const OLD: &str = "// left as it was: \u{202E}txt.exe\n";
/// Added by the change: an access check that reads as `admin` and compiles otherwise.
const ADDED: &str = "if role != \"user\u{202E} \u{2066}// admin\u{2069} \u{2066}\" {\n";
/// Added by the change: an identifier with a zero-width space inside.
const HIDDEN: &str = "let is\u{200B}_admin = false;\n";

fn fixture(dir: &Path) -> PathBuf {
    let repo = dir.join("repo");
    std::fs::create_dir_all(repo.join("src")).expect("mkdir");
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("src/auth.rs"), format!("fn check() {{\n{OLD}}}\n")).expect("write");
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "auth"]);
    git(&repo, &["checkout", "-q", "-b", "feature"]);
    std::fs::write(repo.join("src/auth.rs"), format!("fn check() {{\n{OLD}{ADDED}{HIDDEN}}}\n")).expect("write");
    git(&repo, &["commit", "-q", "-am", "check the role"]);
    repo
}

#[test]
fn the_scan_reports_the_override_the_change_adds_and_not_the_one_in_the_base() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = fixture(dir.path());
    let out = Command::new(env!("CARGO_BIN_EXE_conclave"))
        .args(["scan", "invisible-text", "--base", "main", "src/auth.rs"])
        .current_dir(&repo)
        .output()
        .expect("conclave runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let log: Value = serde_json::from_slice(&out.stdout).expect("SARIF");
    let results = log["runs"][0]["results"].as_array().cloned().unwrap_or_default();
    let places: Vec<(String, u64, String)> = results
        .iter()
        .map(|r| {
            let region = &r["locations"][0]["physicalLocation"]["region"];
            (
                r["ruleId"].as_str().unwrap_or_default().to_string(),
                region["startLine"].as_u64().unwrap_or(0),
                r["level"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    assert_eq!(
        places,
        [
            ("bidi-control".to_string(), 3, "error".to_string()),
            ("invisible-character".to_string(), 4, "warning".to_string())
        ],
        "line 2's override was in the base: {log}"
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains('\u{202E}'), "the log shows the characters escaped");

    // Without a base, the working tree's own changes: none.
    let out = Command::new(env!("CARGO_BIN_EXE_conclave"))
        .args(["scan", "invisible-text"])
        .current_dir(&repo)
        .output()
        .expect("runs");
    let log: Value = serde_json::from_slice(&out.stdout).expect("SARIF");
    assert_eq!(log["runs"][0]["results"], json!([]), "a clean working tree adds nothing");
    let bad = Command::new(env!("CARGO_BIN_EXE_conclave"))
        .args(["scan", "invisible-text", "--base", "--upload-pack=evil"])
        .current_dir(&repo)
        .output()
        .expect("runs");
    assert_eq!(bad.status.code(), Some(2), "a base that looks like an option is refused");
}

#[tokio::test]
async fn a_review_runs_the_lane_and_reports_the_added_override_as_a_blocker() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = fixture(dir.path());
    let workdir = dir.path().join("work");
    std::fs::create_dir_all(&workdir).expect("mkdir");
    let server = FakeServer::start_routed(writer_routes(json!([]))).await;
    let args = [
        repo.display().to_string(),
        "--base".into(),
        "main".into(),
        "--format".into(),
        "json".into(),
        "--analyzers".into(),
        "invisible-text".into(),
        "--fail-on".into(),
        "blocker".into(),
    ];
    let out = review(&workdir, &server, args.to_vec()).await;
    assert_eq!(out.status.code(), Some(5), "the added override gates: {}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).expect("the JSON report");
    let lanes = report["review"]["analyzers"].as_array().cloned().unwrap_or_default();
    let lane = lanes.iter().find(|l| l["name"] == "invisible-text").expect("the lane is listed");
    assert_eq!(lane.get("off"), None, "it ran: {lane}");
    let findings = report["review"]["findings"].as_array().cloned().unwrap_or_default();
    let blocker = findings.iter().find(|f| f["severity"] == "blocker").expect("the override is a blocker");
    assert_eq!((blocker["file"].as_str(), blocker["line"].as_u64()), (Some("src/auth.rs"), Some(3)), "{blocker}");
    assert_eq!(blocker["raised_by"], "invisible-text");
    let description = blocker["description"].as_str().unwrap_or_default();
    assert!(description.contains("U+202E RIGHT-TO-LEFT OVERRIDE (`\\u202e`)"), "{description}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains('\u{202E}'), "no raw override in the report");
    assert!(findings.iter().all(|f| f["line"] != 2), "the base's own override is not raised: {findings:?}");
    // The reviewers were shown the diff as it is, hidden characters included.
    assert!(
        server.requests().iter().any(|r| r.body.to_string().contains('\u{202E}')),
        "the diff reached the reviewers raw"
    );
}
