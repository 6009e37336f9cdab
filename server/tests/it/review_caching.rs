//! Prompt caching, end to end: the default review of the journal-10 scenario (a
//! change to an upload service whose new code joins a client's name onto the upload
//! root) through the fake Anthropic server keeping Anthropic's prompt cache by its
//! documented rules, with the security reviewer reading files for 5 tool turns,
//! against the same review with caching off. Billed input counts a cache read as 0.1
//! of an input token and a cache write as 1.25.

use conclave_testkit::wire::Vendor;
use conclave_testkit::{CacheRules, CacheUsage, FakeServer, Reply, Route, git};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::review_e2e::{TRAVERSAL, findings};

/// A cache read, in input tokens.
const READ: f64 = 0.1;
/// A cache write, in input tokens.
const WRITE: f64 = 1.25;

/// The upload service before the change.
const BEFORE: &str = include_str!("../../../tests/fixtures/review/journal-10/before.rs");
/// The upload service after it: the new `save_upload` joins the client's name onto
/// the root (line 48).
const AFTER: &str = include_str!("../../../tests/fixtures/review/journal-10/after.rs");

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

/// The reviewers' scripts: security reads files for `turns` tool turns, then
/// answers; every first reply takes a moment, so reviewers that start together are
/// in flight together.
fn routes(reviewers: &[&str], turns: usize) -> Vec<Route> {
    let a = Vendor::Anthropic;
    let slow = |reply: Reply| Reply::After { millis: 150, reply: Box::new(reply) };
    let answer = |lane: &str| {
        let finding = json!([{"severity": "blocker", "file": "src/upload.rs", "line": 48, "description": TRAVERSAL, "raisedBy": lane, "stance": "concern"}]);
        a.answer(&findings(finding, [1, 0, 0, 0]))
    };
    let mut out: Vec<Route> = reviewers
        .iter()
        .enumerate()
        .map(|(i, lane)| {
            let mut replies = Vec::new();
            if i == 0 {
                for turn in 0..turns {
                    let file = ["src/upload.rs", "README.md"][turn % 2];
                    replies.push(a.tool_calls(&[(&format!("call_{turn}"), "read_file", json!({"path": file}))]));
                }
            }
            replies.push(a.answer("I have read what I needed."));
            replies.push(answer(lane));
            replies[0] = slow(replies[0].clone());
            Route { marker: format!("You are the {lane} reviewer"), replies }
        })
        .collect();
    let merged = json!([{"severity": "blocker", "file": "src/upload.rs", "line": 48, "description": TRAVERSAL, "raisedBy": "security", "stance": "concern"}]);
    out.push(Route { marker: "You are the Writer".into(), replies: vec![a.answer(&findings(merged, [1, 0, 0, 0]))] });
    out
}

/// Reviews the journal-10 change through a fresh caching fake; returns the cache's
/// log of every request, the requests, and the review's output.
async fn reviewed(
    conclave: Option<&Path>,
    reviewers: &[&str],
    turns: usize,
    cache: bool,
) -> (Vec<CacheUsage>, Vec<Value>, Output) {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = journal_repo(dir.path());
    let workdir = dir.path().join("work");
    std::fs::create_dir_all(&workdir).expect("mkdir");
    let server = FakeServer::start_routed(routes(reviewers, turns)).await;
    let prompt_cache = server.keep_prompt_cache(CacheRules::Anthropic);
    let mut args = vec![repo.display().to_string(), "--base".into(), "main".into()];
    if let Some(conclave) = conclave {
        args.extend(["--conclave".into(), conclave.display().to_string()]);
    }
    let base = server.base.clone();
    let output = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_conclave"))
            .arg("review")
            .args(&args)
            .current_dir(&workdir)
            .env("CONCLAVE_DB", workdir.join("runs.db"))
            .env("CONCLAVE_CONFIG_DIR", workdir.join("config"))
            .env("ANTHROPIC_BASE_URL", base)
            .env("ANTHROPIC_API_KEY", "sk-ant-test")
            .env("CONCLAVE_PROMPT_CACHE", if cache { "auto" } else { "off" })
            .output()
            .expect("conclave runs")
    })
    .await
    .expect("joined");
    let bodies = server.requests().into_iter().map(|r| r.body).collect();
    (prompt_cache.log(), bodies, output)
}

fn billed(log: &[CacheUsage]) -> f64 {
    log.iter().map(|u| u.billed(READ, WRITE)).sum()
}

/// The text of a request's system blocks, joined.
fn system_text(body: &Value) -> String {
    match &body["system"] {
        Value::Array(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).collect::<Vec<_>>().join("\n"),
        Value::String(text) => text.clone(),
        _ => String::new(),
    }
}

#[tokio::test]
async fn caching_bills_at_most_035_of_the_input_and_the_reviewers_share_their_prefix() {
    let lanes = ["security", "correctness", "conventions"];
    let (off, _, plain) = reviewed(None, &lanes, 5, false).await;
    assert!(plain.status.success(), "{}", String::from_utf8_lossy(&plain.stderr));
    let (on, bodies, cached) = reviewed(None, &lanes, 5, true).await;
    assert!(cached.status.success(), "{}", String::from_utf8_lossy(&cached.stderr));
    assert_eq!(off.len(), on.len(), "the same calls with caching on and off");
    assert!(off.iter().all(|u| u.read == 0 && u.written == 0), "with caching off nothing is marked");
    let ratio = billed(&on) / billed(&off);
    for (u, body) in on.iter().zip(&bodies) {
        let who =
            system_text(body).split("You are the ").nth(1).unwrap_or("?").split(' ').next().unwrap_or("?").to_string();
        println!("{who:>12}: {u:?}");
    }
    println!(
        "billed input: {:.0} tokens with caching, {:.0} without: ratio {ratio:.3} over {} calls",
        billed(&on),
        billed(&off),
        on.len()
    );
    assert!(ratio <= 0.35, "caching billed {ratio:.3} of the input, above 0.35");

    // The three reviewers' first requests are byte-identical up to the first mark:
    // the tools, then the shared system block.
    let firsts: Vec<&Value> = lanes
        .iter()
        .map(|lane| {
            let marker = format!("You are the {lane} reviewer");
            bodies.iter().find(|b| system_text(b).contains(&marker)).expect("the reviewer was called")
        })
        .collect();
    let prefix = |body: &Value| {
        assert_eq!(body["system"][0]["cache_control"], json!({"type": "ephemeral"}), "the shared block is marked");
        serde_json::to_string(&json!([body["tools"], body["system"][0]])).expect("serializes")
    };
    assert!(firsts.iter().all(|b| prefix(b) == prefix(firsts[0])), "the reviewers' prefixes differ");
    for body in &bodies {
        let marks = body.to_string().matches("\"cache_control\"").count();
        assert!(marks <= 4, "a request carries {marks} marks");
    }
    // Two of the reviewers read what the first one wrote.
    let reads = on.iter().filter(|u| u.read > 0).count();
    assert!(reads >= on.len() - 2, "only {reads} of {} calls read from the cache: {on:?}", on.len());

    let report = String::from_utf8_lossy(&cached.stdout);
    assert!(report.contains("| Cache reads | Cache writes |"), "{report}");
    assert!(report.contains("Saved by caching"), "{report}");
    let total = report.lines().find(|l| l.starts_with("| **total**")).expect("a total row");
    let saved = total.rsplit('|').nth(1).expect("a savings cell").trim();
    assert!(saved.starts_with('$') && !saved.starts_with("$-"), "caching saved money in total: {total}");
}

/// A conclave of `n` reviewers, each a copy of the default conclave's security
/// reviewer under its own lane, and its Writer.
fn panel(dir: &Path, n: usize) -> (PathBuf, Vec<String>) {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../conclaves/light-code-review.conclave.json"))
            .expect("the default conclave");
    let mut conclave: Value = serde_json::from_str(&text).expect("json");
    let nodes = conclave["nodes"].as_array().expect("nodes").clone();
    let security = nodes.iter().find(|n| n["id"] == "security").expect("security").clone();
    let mut kept: Vec<Value> = nodes.iter().filter(|n| n["kind"] != "agent" || n["id"] == "writer").cloned().collect();
    let mut lanes = Vec::new();
    for i in 0..n {
        let lane = format!("lane{i}");
        let mut node = security.clone();
        node["id"] = json!(lane);
        let prompt = node["agent"]["system_prompt"]
            .as_str()
            .unwrap_or_default()
            .replace("the security reviewer", &format!("the {lane} reviewer"));
        node["agent"]["system_prompt"] = json!(prompt);
        kept.push(node);
        lanes.push(lane);
    }
    let mut edges: Vec<Value> = conclave["edges"]
        .as_array()
        .expect("edges")
        .iter()
        .filter(|e| !["security", "correctness", "conventions"].iter().any(|l| e["from"] == *l || e["to"] == *l))
        .cloned()
        .collect();
    for lane in &lanes {
        edges.push(json!({"from": "change", "to": lane}));
        edges.push(json!({"from": lane, "to": "writer"}));
    }
    conclave["id"] = json!(format!("panel-{n}"));
    conclave["nodes"] = json!(kept);
    conclave["edges"] = json!(edges);
    let path = dir.join(format!("panel-{n}.conclave.json"));
    std::fs::write(&path, serde_json::to_string_pretty(&conclave).expect("json")).expect("write");
    (path, lanes)
}

/// The billed-input ratio for 1, 3 and 6 reviewers and 1 to 6 tool turns of the
/// first reviewer: the figures docs/providers.md reports. Each must be below 1 (caching
/// never costs more), and six turns must gain more from it than one.
#[tokio::test]
async fn billed_input_ratio_by_reviewers_and_tool_turns() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut table = String::from("| Reviewers | 1 turn | 2 | 3 | 4 | 5 | 6 |\n|---:|---:|---:|---:|---:|---:|---:|\n");
    for n in [1, 3, 6] {
        let (path, lanes) = panel(dir.path(), n);
        let lanes: Vec<&str> = lanes.iter().map(String::as_str).collect();
        let mut row = vec![n.to_string()];
        let mut ratios = Vec::new();
        for turns in 1..=6 {
            let (off, _, plain) = reviewed(Some(&path), &lanes, turns, false).await;
            assert!(plain.status.success(), "{}", String::from_utf8_lossy(&plain.stderr));
            let (on, _, cached) = reviewed(Some(&path), &lanes, turns, true).await;
            assert!(cached.status.success(), "{}", String::from_utf8_lossy(&cached.stderr));
            let ratio = billed(&on) / billed(&off);
            assert!(ratio < 1.0, "{n} reviewers, {turns} turns: caching billed {ratio:.3}");
            ratios.push(ratio);
            row.push(format!("{ratio:.3}"));
        }
        assert!(ratios[5] < ratios[0], "{n} reviewers: six turns gain less than one: {ratios:?}");
        table.push_str(&format!("| {} |\n", row.join(" | ")));
    }
    println!("billed input with caching / without:\n{table}");
}
