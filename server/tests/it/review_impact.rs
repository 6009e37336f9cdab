//! A review's impact end to end: a fixture repository whose change modifies a
//! function that another file and a test call, reviewed through the fake Anthropic
//! server. Every agent's prompt holds the impact, with the caller's and the test's
//! lines, in the system block all of them share (the one marked for the prompt
//! cache); a recorded review replays offline, so the replayed prompts are the same;
//! and the report says what the reviewers were given.

use conclave_testkit::{FakeServer, git};
use serde_json::Value;
use std::path::{Path, PathBuf};

use crate::record_replay::offline;
use crate::review_e2e::{VULNERABLE, review, routes};

const SAFE: &str = "//! Saving uploaded files.

use std::io;
use std::path::{Component, Path};

/// Saves `data` as `name` under `root`, refusing names that leave it.
pub fn save_upload(root: &Path, name: &str, data: &[u8]) -> io::Result<()> {
    let relative = Path::new(name);
    if relative.components().any(|c| !matches!(c, Component::Normal(_))) {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, \"bad name\"));
    }
    std::fs::write(root.join(relative), data)
}
";

/// The caller, unchanged by the change.
const API: &str = "//! The upload route.

use std::path::Path;

/// Stores a request's body under the name the client gave.
pub fn handle_upload(root: &Path, name: &str, body: &[u8]) -> u16 {
    match crate::upload::save_upload(root, name, body) {
        Ok(()) => 201,
        Err(_) => 400,
    }
}
";

/// A test that calls it, unchanged too.
const TEST: &str = "use uploads::upload::save_upload;

#[test]
fn a_plain_name_is_saved() {
    let dir = std::env::temp_dir();
    save_upload(&dir, \"a.txt\", b\"x\").unwrap();
}
";

/// A repository whose `feature` branch makes `save_upload` unsafe; `src/api.rs` and
/// `tests/uploads.rs` call it.
fn impact_repo(dir: &Path) -> PathBuf {
    let repo = dir.join("repo");
    for sub in ["src", "tests"] {
        std::fs::create_dir_all(repo.join(sub)).expect("mkdir");
    }
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("src/upload.rs"), SAFE).expect("write");
    std::fs::write(repo.join("src/api.rs"), API).expect("write");
    std::fs::write(repo.join("tests/uploads.rs"), TEST).expect("write");
    std::fs::write(repo.join("README.md"), "# Uploads\n").expect("write");
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "safe uploads"]);
    git(&repo, &["checkout", "-q", "-b", "feature"]);
    // Notes added at the end make the shared prefix long enough for the prompt cache.
    let notes: String =
        (1..=80).map(|n| format!("// Note {n}: uploads are stored as they arrive, one file each.\n")).collect();
    std::fs::write(repo.join("src/upload.rs"), format!("{VULNERABLE}{notes}")).expect("write");
    std::fs::write(repo.join("README.md"), "# Uploads\n\nSaves uploaded files.\n").expect("write");
    git(&repo, &["commit", "-q", "-am", "simplify uploads"]);
    repo
}

/// The shared system block of each agent request: the conclave's shared prompt and
/// the run input, the same for every agent.
fn shared_blocks(server: &FakeServer) -> Vec<Value> {
    server.requests().iter().map(|r| r.body["system"][0].clone()).collect()
}

#[tokio::test]
async fn every_reviewer_reads_the_callers_in_the_shared_prefix_and_a_replay_sends_the_same_prompts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = impact_repo(dir.path());
    let workdir = dir.path().join("work");
    std::fs::create_dir_all(&workdir).expect("mkdir");
    let server = FakeServer::start_routed(routes()).await;
    let recordings = workdir.join("recordings");
    let args = |out: &Path, mode: &str| -> Vec<String> {
        let list = [&repo.display().to_string(), "--base", "main", "--format", "json", "--output-file"];
        let mut args: Vec<String> = list.iter().map(|s| s.to_string()).collect();
        args.extend([out.display().to_string(), mode.to_string(), recordings.display().to_string()]);
        args
    };
    let recorded = workdir.join("recorded.json");
    let out = review(&workdir, &server, args(&recorded, "--record")).await;
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));

    let blocks = shared_blocks(&server);
    assert!(blocks.len() >= 4, "every agent was called: {}", blocks.len());
    let shared = blocks[0]["text"].as_str().expect("a text block").to_string();
    for needle in [
        "`impact`: {\"functions\":[{\"name\":\"save_upload\"",
        "\"change\":\"modified\"",
        "\"callers\":[{\"file\":\"src/api.rs\",\"line\":7,\"text\":\"match crate::upload::save_upload(root, name, body) {\"",
        "\"tests\":[{\"file\":\"tests/uploads.rs\",\"line\":6,",
        "\"in\":\"a_plain_name_is_saved\"",
    ] {
        assert!(shared.contains(needle), "the shared prefix lacks {needle}: {shared}");
    }
    assert!(blocks.iter().all(|b| b["text"] == blocks[0]["text"]), "every agent shares the same prefix");
    assert!(blocks.iter().all(|b| b["cache_control"]["type"] == "ephemeral"), "marked for the prompt cache");

    // The report says what the reviewers were given.
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&recorded).expect("report")).expect("json");
    let impact = &report["review"]["impact"];
    assert_eq!(impact["given"], serde_json::json!({"functions": 1, "callers": 1, "tests": 1}), "{impact}");
    assert_eq!(impact["found"], impact["given"], "nothing was cut");

    // The replay answers every call from the recordings: its prompts hash the same.
    let replayed = workdir.join("replayed.json");
    let out = offline(&workdir, "review", &args(&replayed, "--replay"));
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let again: Value = serde_json::from_str(&std::fs::read_to_string(&replayed).expect("report")).expect("json");
    assert_eq!(again["review"]["impact"], report["review"]["impact"]);
    let with_impact = std::fs::read_dir(&recordings)
        .expect("recordings")
        .flatten()
        .filter(|e| std::fs::read_to_string(e.path()).is_ok_and(|t| t.contains("handle_upload")))
        .count();
    assert_eq!(with_impact, server.requests().len(), "every recorded request holds the impact");
}
