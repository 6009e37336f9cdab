//! The journal-10 review through the caching fake: `conclave review` of the journal-10
//! change (an upload service whose new code joins a client's name onto the upload
//! root) with the default conclave, its security reviewer reading files for 5 tool
//! turns, against the fake Anthropic server keeping Anthropic's prompt cache by its
//! documented rules. Every reply's response begins after 0.3 s and ends after 2 s, as
//! a real model's does (it starts answering long before it is done). Reports the
//! review's wall time and its billed input (a cache read at 0.1 of an input token, a
//! write at 1.25), median and minimum of several reviews, and when each reviewer's
//! first call went (the followers' wait for the leader's cache write).
//!
//! Run with `cargo bench -p conclave-server --bench review_cache`.

use conclave_testkit::wire::Vendor;
use conclave_testkit::{CacheRules, CacheUsage, FakeServer, Reply, Route, git};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Reviews measured.
const RUNS: usize = 3;
/// When every reply's response begins, and when it ends.
const BEGIN_MS: u64 = 300;
const END_MS: u64 = 2000;
/// Tool turns of the security reviewer.
const TURNS: usize = 5;

const BEFORE: &str = include_str!("../../tests/fixtures/review/journal-10/before.rs");
const AFTER: &str = include_str!("../../tests/fixtures/review/journal-10/after.rs");

const TRAVERSAL: &str = "The client-supplied name is joined to the upload root without rejecting `..` or absolute \
                         paths: path traversal lets a client write anywhere.";

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let mut times = Vec::new();
    let mut billed = Vec::new();
    for _ in 0..RUNS {
        let (took, input, firsts) = runtime.block_on(review_once());
        println!("  {:.2} s, billed input {input:.0} tokens; first calls at {firsts}", took.as_secs_f64());
        times.push(took);
        billed.push(input);
    }
    times.sort();
    println!(
        "journal-10 review through the caching fake (responses begin at {BEGIN_MS} ms, end at {END_MS} ms; {RUNS} \
         reviews): wall time median {:.2} s, min {:.2} s; billed input {:.0} tokens",
        times[RUNS / 2].as_secs_f64(),
        times[0].as_secs_f64(),
        billed[0]
    );
}

/// One review: its wall time, billed input, and when each reviewer's first call
/// arrived at the fake, from the first.
async fn review_once() -> (Duration, f64, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = journal_repo(dir.path());
    let workdir = dir.path().join("work");
    std::fs::create_dir_all(&workdir).expect("mkdir");
    let server = FakeServer::start_routed(routes()).await;
    let cache = server.keep_prompt_cache(CacheRules::Anthropic);
    let base = server.base.clone();
    let started = Instant::now();
    let output = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_conclave"))
            .args(["review", &repo.display().to_string(), "--base", "main"])
            .current_dir(&workdir)
            .env("CONCLAVE_DB", workdir.join("runs.db"))
            .env("CONCLAVE_CONFIG_DIR", workdir.join("config"))
            .env("ANTHROPIC_BASE_URL", base)
            .env("ANTHROPIC_API_KEY", "sk-ant-bench")
            .env_remove("CONCLAVE_PROMPT_CACHE")
            .env_remove("CONCLAVE_PROVIDER_LIMITS")
            .output()
            .expect("conclave runs")
    })
    .await
    .expect("joined");
    let took = started.elapsed();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let log: Vec<CacheUsage> = cache.log();
    let requests = server.requests();
    let firsts: Vec<String> = ["security", "correctness", "conventions"]
        .iter()
        .filter_map(|lane| {
            let marker = format!("You are the {lane} reviewer");
            let first = requests.iter().find(|r| r.body.to_string().contains(&marker))?;
            Some(format!("{lane} +{:.2} s", first.at.duration_since(requests[0].at).as_secs_f64()))
        })
        .collect();
    (took, log.iter().map(|u| u.billed(0.1, 1.25)).sum(), firsts.join(", "))
}

/// The journal-10 repository: `feature` rewrites the upload service on `main`.
fn journal_repo(dir: &Path) -> PathBuf {
    let repo = dir.join("repo");
    std::fs::create_dir_all(repo.join("src")).expect("mkdir");
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("src/upload.rs"), BEFORE).expect("write");
    std::fs::write(repo.join("README.md"), "# Uploads\n\nStores what clients upload under one root.\n").expect("write");
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "upload service"]);
    git(&repo, &["checkout", "-q", "-b", "feature"]);
    std::fs::write(repo.join("src/upload.rs"), AFTER).expect("write");
    git(&repo, &["commit", "-q", "-am", "uploads keep the client's names"]);
    repo
}

fn findings(items: serde_json::Value, counts: [u64; 4]) -> String {
    json!({"findings": items, "counts": {"blocker": counts[0], "major": counts[1], "minor": counts[2], "nit": counts[3]}})
        .to_string()
}

/// The reviewers' scripts, every reply paced: security reads files for [`TURNS`]
/// tool turns, then answers; the Writer merges.
fn routes() -> Vec<Route> {
    let a = Vendor::Anthropic;
    let paced = |reply: Reply| Reply::Paced { begin_ms: BEGIN_MS, end_ms: END_MS, reply: Box::new(reply) };
    let blocker = |lane: &str| json!([{"severity": "blocker", "file": "src/upload.rs", "line": 48, "description": TRAVERSAL, "raisedBy": lane, "stance": "concern"}]);
    let mut out: Vec<Route> = ["security", "correctness", "conventions"]
        .iter()
        .enumerate()
        .map(|(i, lane)| {
            let mut replies = Vec::new();
            if i == 0 {
                for turn in 0..TURNS {
                    let file = ["src/upload.rs", "README.md"][turn % 2];
                    replies.push(a.tool_calls(&[(&format!("call_{turn}"), "read_file", json!({"path": file}))]));
                }
            }
            replies.push(a.answer("I have read what I needed."));
            replies.push(a.answer(&findings(blocker(lane), [1, 0, 0, 0])));
            Route { marker: format!("You are the {lane} reviewer"), replies: replies.into_iter().map(paced).collect() }
        })
        .collect();
    let merged = a.answer(&findings(blocker("security"), [1, 0, 0, 0]));
    out.push(Route { marker: "You are the Writer".into(), replies: vec![paced(merged)] });
    out
}
