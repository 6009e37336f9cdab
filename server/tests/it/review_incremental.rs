//! Incremental reviews end to end: the real binary reviews a pull request of three
//! commits and posts it on the fake GitHub, a fourth commit is pushed, and the next
//! `review --post` sends only that commit's diff to the agents (the fake LLM's
//! request log shows it), carries the earlier findings on untouched code forward as
//! `unchanged`, and says which commits it reviewed now and which earlier; after a
//! force-push it reviews the whole change again and says why. Also the figure the
//! issue asks for: tokens sent for a one-file push to a 40-file pull request,
//! against a full review of it.

use conclave_testkit::{CacheRules, FakeGitHub, FakeServer, git};
use serde_json::{Value, json};
use std::path::Path;

use crate::review_e2e::writer_routes;
use crate::review_post::{Fixture, TOKEN, bare_fixture as fixture, github_env, head, line_of, patches};

fn write(repo: &Path, path: &str, text: &str) {
    let path = repo.join(path);
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

fn commit(repo: &Path, message: &str) {
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", message]);
}

fn finding(repo: &Path, severity: &str, file: &str, evidence: &str, description: &str) -> Value {
    json!({"severity": severity, "file": file, "line": line_of(repo, file, evidence), "description": description,
           "raisedBy": "security", "evidence": evidence})
}

struct Reviewed {
    code: Option<i32>,
    stderr: String,
    report: Value,
    /// The request bodies the fake LLM received, as text.
    requests: Vec<String>,
    /// Prompt tokens of every call, as the vendor's cache counts them (caching off).
    prompt_tokens: u64,
}

/// `conclave review REPO --base main --format json ARGS` against a fake LLM whose
/// reviewers find nothing and whose Writer reports `items`, with `env`.
async fn review(fx: &Fixture, items: Value, args: &[&str], env: &[(String, String)]) -> Reviewed {
    let llm = FakeServer::start_routed(writer_routes(items)).await;
    let counter = llm.keep_prompt_cache(CacheRules::Anthropic);
    let report_path = fx.workdir.join("review.json");
    let _ = std::fs::remove_file(&report_path);
    let mut env = env.to_vec();
    env.push(("CONCLAVE_PROMPT_CACHE".into(), "off".into()));
    let (code, stderr) = crate::review_post::review(fx, &llm, args, &env).await;
    let report = std::fs::read_to_string(&report_path).ok().and_then(|t| serde_json::from_str(&t).ok());
    Reviewed {
        code,
        stderr,
        report: report.unwrap_or(Value::Null),
        requests: llm.requests().iter().map(|r| r.body.to_string()).collect(),
        prompt_tokens: counter.log().iter().map(|u| u.total).sum(),
    }
}

/// The reviewers' requests (the Writer's carries their findings, not the diff).
fn reviewer_requests(reviewed: &Reviewed) -> Vec<&String> {
    reviewed.requests.iter().filter(|r| !r.contains("You are the Writer")).collect()
}

/// The header of a file's part of the diff the agents read.
fn diff_of(file: &str) -> String {
    format!("--- {file} (modified)")
}

fn states(report: &Value) -> Vec<(String, String)> {
    let list = report["review"]["findings"].as_array().cloned().unwrap_or_default();
    let mut states: Vec<(String, String)> = list
        .iter()
        .map(|f| (f["file"].as_str().unwrap_or("").to_string(), f["baseline"].as_str().unwrap_or("").to_string()))
        .collect();
    states.sort();
    states
}

const AUTH: &str = "let token = header.split(' ').nth(1).unwrap();";
const DB: &str = "let query = format!(\"SELECT * FROM users WHERE name = '{name}'\");";
const HTTP: &str = "let body = response.text().await.unwrap_or_default();";
const HTTP_NEW: &str = "let retries = config.retries * 1000;";

fn source(body: &str) -> String {
    format!("//! A module.\n\nuse std::fmt;\n\npub fn run() {{\n    let a = 1;\n    {body}\n    let b = 2;\n}}\n")
}

#[tokio::test]
async fn a_push_of_one_commit_reviews_that_commit_and_carries_the_rest_then_a_force_push_reviews_all() {
    let fx = fixture();
    for file in ["src/auth.rs", "src/db/users.rs", "web/http.rs"] {
        write(&fx.repo, file, &source("let x = 0;"));
    }
    commit(&fx.repo, "start");
    git(&fx.repo, &["checkout", "-q", "-b", "feature"]);
    for (file, line, message) in
        [("src/auth.rs", AUTH, "read tokens"), ("src/db/users.rs", DB, "find users"), ("web/http.rs", HTTP, "fetch")]
    {
        write(&fx.repo, file, &source(line));
        commit(&fx.repo, message);
    }
    let github = FakeGitHub::start("acme/uploads", 5, TOKEN, 3).await;
    github.set_head(&head(&fx.repo), &patches(&fx.repo));
    let env = github_env(&fx, &github, 5);
    let earlier = json!([
        finding(&fx.repo, "major", "src/auth.rs", AUTH, "A header without a space panics."),
        finding(&fx.repo, "blocker", "src/db/users.rs", DB, "The name is formatted into SQL: injection."),
        finding(&fx.repo, "minor", "web/http.rs", HTTP, "A failed body read is silently empty."),
    ]);
    let first = review(&fx, earlier.clone(), &["--post", "github"], &env).await;
    assert_eq!(first.code, Some(0), "{}", first.stderr);
    assert!(
        first.stderr.contains("full review: no earlier review of the branch `feature` is stored"),
        "{}",
        first.stderr
    );
    for file in ["src/auth.rs", "src/db/users.rs", "web/http.rs"] {
        assert!(reviewer_requests(&first).iter().all(|r| r.contains(&diff_of(file))), "a full review sends {file}");
    }
    assert_eq!(first.report["review"]["scope"]["full"]["why"], "no earlier review of the branch `feature` is stored");
    let posted = github.comments().len();
    assert_eq!(posted, 3, "{:?}", github.comments());

    // A fourth commit adds code at the end of one file, far from its finding.
    let http = std::fs::read_to_string(fx.repo.join("web/http.rs")).expect("read");
    write(
        &fx.repo,
        "web/http.rs",
        &format!("{http}\npub fn retry(config: &Config) -> u64 {{\n    {HTTP_NEW}\n    retries\n}}\n"),
    );
    commit(&fx.repo, "retry");
    github.set_head(&head(&fx.repo), &patches(&fx.repo));
    let now = json!([finding(&fx.repo, "minor", "web/http.rs", HTTP_NEW, "Milliseconds overflow for large retries.")]);
    let before = github.requests().len();
    let second = review(&fx, now, &["--post", "github"], &env).await;
    assert_eq!(second.code, Some(0), "{}", second.stderr);
    assert!(second.stderr.contains("incremental review: 1 new commit(s) since"), "{}", second.stderr);
    let reviewers = reviewer_requests(&second);
    assert_eq!(reviewers.len(), 6, "three reviewers, two calls each");
    assert!(reviewers.iter().all(|r| r.contains(&diff_of("web/http.rs"))), "the pushed file's diff is sent");
    for file in ["src/auth.rs", "src/db/users.rs"] {
        assert!(second.requests.iter().all(|r| !r.contains(&diff_of(file))), "{file} was not touched: not sent");
    }
    assert!(reviewers.iter().all(|r| r.contains(HTTP_NEW)), "the new code is sent");
    assert_eq!(
        states(&second.report),
        [
            ("src/auth.rs".to_string(), "unchanged".to_string()),
            ("src/db/users.rs".into(), "unchanged".into()),
            ("web/http.rs".into(), "new".into()),
            ("web/http.rs".into(), "unchanged".into()),
        ],
        "the earlier findings are carried forward: {}",
        second.report["review"]["findings"]
    );
    let scope = &second.report["review"]["scope"]["incremental"];
    assert_eq!((scope["now"]["total"].as_u64(), scope["earlier"]["total"].as_u64()), (Some(1), Some(3)), "{scope}");
    assert_eq!(scope["now"]["listed"][0]["subject"], "retry");
    assert_eq!(second.report["review"]["gated_totals"]["blocker"], 1, "the carried blocker still gates");
    let writes: Vec<String> =
        github.requests()[before..].iter().filter(|r| r.writes()).map(|r| format!("{} {}", r.method, r.path)).collect();
    assert_eq!(writes, ["POST /repos/acme/uploads/pulls/5/reviews"], "one new comment; nothing marked fixed");
    let review_body = github.reviews().last().map(|r| r["body"].to_string()).unwrap_or_default();
    assert!(review_body.contains("1 commit(s) reviewed now"), "the summary says what was reviewed: {review_body}");

    force_push_reviews_in_full(&fx, &github, &env, earlier).await;
}

/// History is rewritten (the reviewed commit is gone from the branch): the next
/// posting reviews the whole change and says why.
async fn force_push_reviews_in_full(fx: &Fixture, github: &FakeGitHub, env: &[(String, String)], earlier: Value) {
    git(&fx.repo, &["reset", "-q", "--hard", "HEAD~2"]);
    write(&fx.repo, "web/http.rs", &source(HTTP.replace("unwrap_or_default()", "expect(\"a body\")").as_str()));
    commit(&fx.repo, "fetch, strictly");
    github.set_head(&head(&fx.repo), &patches(&fx.repo));
    let third = review(fx, earlier, &["--post", "github"], env).await;
    assert_eq!(third.code, Some(0), "{}", third.stderr);
    assert!(
        third.stderr.contains("full review: the last reviewed commit")
            && third.stderr.contains("is no longer in the branch's history"),
        "{}",
        third.stderr
    );
    assert!(reviewer_requests(&third).iter().all(|r| r.contains(&diff_of("src/auth.rs"))), "the whole change again");
    assert!(third.report["review"]["scope"]["full"]["why"].as_str().is_some_and(|w| w.contains("force-push")));
}

#[tokio::test]
async fn since_auto_without_a_stored_review_or_with_nothing_new_reviews_in_full_and_says_why() {
    let fx = fixture();
    write(&fx.repo, "a.rs", &source("let x = 0;"));
    commit(&fx.repo, "start");
    git(&fx.repo, &["checkout", "-q", "-b", "feature"]);
    write(&fx.repo, "a.rs", &source(AUTH));
    commit(&fx.repo, "read tokens");
    let items = json!([finding(&fx.repo, "major", "a.rs", AUTH, "A header without a space panics.")]);
    let first = review(&fx, items.clone(), &["--since", "auto"], &[]).await;
    assert_eq!(first.code, Some(0), "{}", first.stderr);
    assert!(
        first.stderr.contains("full review: no earlier review of the branch `feature` is stored"),
        "{}",
        first.stderr
    );
    let again = review(&fx, items.clone(), &["--since", "auto"], &[]).await;
    assert!(again.stderr.contains("full review: nothing is new since the last reviewed commit"), "{}", again.stderr);
    let bad = review(&fx, items, &["--since", "no-such-commit"], &[]).await;
    assert_eq!(bad.code, Some(2), "{}", bad.stderr);
    assert!(bad.stderr.contains("`no-such-commit` is not a commit in this repository"), "{}", bad.stderr);
    assert!(bad.requests.is_empty(), "nothing was reviewed");
    let conflict = review(&fx, json!([]), &["--since", "auto", "--full"], &[]).await;
    assert_eq!(conflict.code, Some(2), "--since and --full contradict each other: {}", conflict.stderr);
}

/// The figure: a 40-file pull request reviewed in full, then a push of one
/// commit touching one file reviewed incrementally; prompt tokens of every call of
/// the second review against a full review of the same head. Printed; at most 10%.
#[tokio::test]
async fn a_one_file_push_to_a_40_file_pull_request_sends_at_most_a_tenth_of_the_tokens() {
    let fx = fixture();
    let module = |i: usize, changed: bool| {
        let mut text = format!("//! Module {i}.\n\n");
        for f in 0..24 {
            let body = if changed { format!("value.checked_mul({f}).unwrap_or(0)") } else { format!("value * {f}") };
            text.push_str(&format!("/// Scales by {f}.\npub fn scale_{f}(value: u64) -> u64 {{\n    {body}\n}}\n\n"));
        }
        text
    };
    for i in 0..40 {
        write(&fx.repo, &format!("src/m{i:02}/mod.rs"), &module(i, false));
    }
    commit(&fx.repo, "start");
    git(&fx.repo, &["checkout", "-q", "-b", "feature"]);
    for i in 0..40 {
        write(&fx.repo, &format!("src/m{i:02}/mod.rs"), &module(i, true));
    }
    commit(&fx.repo, "checked arithmetic");
    let first = review(&fx, json!([]), &["--since", "auto"], &[]).await;
    assert_eq!(first.code, Some(0), "{}", first.stderr);
    write(&fx.repo, "src/m07/mod.rs", &module(7, true).replace("checked_mul(3)", "saturating_mul(3)"));
    commit(&fx.repo, "saturate");
    let incremental = review(&fx, json!([]), &["--since", "auto"], &[]).await;
    assert!(incremental.stderr.contains("incremental review: 1 new commit(s)"), "{}", incremental.stderr);
    let full = review(&fx, json!([]), &["--full"], &[]).await;
    assert_eq!((incremental.code, full.code), (Some(0), Some(0)), "{}{}", incremental.stderr, full.stderr);
    let ratio = incremental.prompt_tokens as f64 / full.prompt_tokens as f64;
    println!(
        "40-file pull request, 1-file push: {} prompt tokens incremental, {} full: {:.1}%",
        incremental.prompt_tokens,
        full.prompt_tokens,
        ratio * 100.0
    );
    assert!(ratio <= 0.10, "the incremental review sent {:.1}% of a full review's tokens", ratio * 100.0);
}
