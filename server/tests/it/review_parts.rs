//! Large changes reviewed in parts: `conclave review` on a change five times larger
//! than `--max-diff-bytes` splits it by directory and, for a file too large for a
//! part, by hunks; every specialist reviews every part (the fake's request log shows
//! each file's diff in some part's request), their findings are merged and compared
//! (a concern in one part and another specialist's approval of the same line in
//! another part contradict), and the Writer, which sees no diff, runs once. A hunk
//! larger than a part is left out and makes the review degraded; `--max-parts`
//! lists the files beyond it.

use conclave_testkit::git;
use conclave_testkit::wire::Vendor;
use conclave_testkit::{FakeServer, Reply};
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::review_e2e::{findings, review};

/// The cap on one part's diff.
const PART: usize = 4000;

/// `count` lines of Rust, each naming its file and number, about 40 bytes each.
fn lines(tag: &str, from: usize, count: usize, version: &str) -> String {
    (from..from + count).fold(String::new(), |mut out, n| {
        let _ = writeln!(out, "let {tag}_{n} = \"{version} value number {n}\";");
        out
    })
}

/// A repository whose `feature` branch changes files in three directories, and a
/// file `big/huge.rs` whose ten changed blocks together fill three parts (so it is
/// split by hunks); with `huge_hunk`, also `big/generated.rs`, one hunk larger than
/// a part.
fn repository(dir: &Path, huge_hunk: bool) -> PathBuf {
    let repo = dir.join("repo");
    for sub in ["alpha", "beta", "gamma", "big", ".conclave/rules"] {
        std::fs::create_dir_all(repo.join(sub)).expect("mkdir");
    }
    git(&repo, &["init", "-q", "-b", "main"]);
    let huge = |version: &str| {
        (0..10).fold(String::new(), |out, block| {
            out + &lines("kept", block * 40, 28, "old") + &lines("block", block * 40 + 28, 12, version)
        })
    };
    std::fs::write(repo.join("big/huge.rs"), huge("old")).expect("write");
    std::fs::write(repo.join("README.md"), "# Parts\n").expect("write");
    let rule = format!("---\npaths: [\"gamma/**\"]\n---\n{GAMMA_RULE}\n");
    std::fs::write(repo.join(".conclave/rules/gamma.md"), rule).expect("write");
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "base"]);
    git(&repo, &["checkout", "-q", "-b", "feature"]);
    std::fs::write(repo.join("big/huge.rs"), huge("new")).expect("write");
    for (path, tag) in [("alpha/auth.rs", "auth"), ("alpha/session.rs", "session"), ("beta/store.rs", "store")] {
        std::fs::write(repo.join(path), lines(tag, 1, 30, "new")).expect("write");
    }
    std::fs::write(repo.join("gamma/config.rs"), lines("config", 1, 30, "new")).expect("write");
    if huge_hunk {
        std::fs::write(repo.join("big/generated.rs"), lines("generated", 1, 150, "new")).expect("write");
    }
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "feature"]);
    repo
}

/// The built-in review conclave without tools, so each part of a specialist is one
/// call.
fn conclave(workdir: &Path) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../conclaves/light-code-review.conclave.json");
    let mut conclave: Value = serde_json::from_str(&std::fs::read_to_string(source).expect("read")).expect("json");
    conclave["id"] = json!("parts-review");
    for node in conclave["nodes"].as_array_mut().expect("nodes") {
        if let Some(agent) = node.get_mut("agent").and_then(Value::as_object_mut) {
            agent.remove("tools");
        }
    }
    let path = workdir.join("parts-review.conclave.json");
    std::fs::write(&path, serde_json::to_string_pretty(&conclave).expect("json")).expect("write");
    path
}

/// A repository rule for the files under `gamma/` only.
const GAMMA_RULE: &str = "Configuration values are validated where they are loaded.";

const WEAK: &str = "The session token is compared with `==`, which leaks its length through timing.";
const FINE: &str = "The token comparison here is fine: both sides are hashes of equal length.";

/// The security reviewer raises a concern about `alpha/auth.rs` line 3 in the part
/// holding `alpha/`; the correctness reviewer approves the same line in the part
/// holding `gamma/`; every other call finds nothing. The Writer reports nothing.
fn answer_by_part(body: &Value) -> Reply {
    let text = body.to_string();
    let item = |severity: &str, description: &str, by: &str, stance: &str| json!([{"severity": severity, "file": "alpha/auth.rs", "line": 3, "description": description, "raisedBy": by, "stance": stance}]);
    let answer = if text.contains("You are the security reviewer") && text.contains("--- alpha/auth.rs (") {
        findings(item("major", WEAK, "security", "concern"), [0, 1, 0, 0])
    } else if text.contains("You are the correctness reviewer") && text.contains("--- gamma/config.rs (") {
        findings(item("nit", FINE, "correctness", "approval"), [0, 0, 0, 1])
    } else {
        findings(json!([]), [0, 0, 0, 0])
    };
    Vendor::Anthropic.answer(&answer)
}

struct Reviewed {
    code: Option<i32>,
    stderr: String,
    report: Value,
    requests: Vec<Value>,
}

async fn review_in_parts(huge_hunk: bool, extra: &[&str]) -> Reviewed {
    review_with(huge_hunk, extra, None, answer_by_part).await
}

/// A review of the fixture; with `window`, the reviewers' model has that context
/// window in the configuration directory's `pricing.json`.
async fn review_with(
    huge_hunk: bool,
    extra: &[&str],
    window: Option<u64>,
    responder: conclave_testkit::fake_server::Responder,
) -> Reviewed {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = repository(dir.path(), huge_hunk);
    let workdir = dir.path().join("work");
    std::fs::create_dir_all(workdir.join("config")).expect("mkdir");
    if let Some(window) = window {
        let pricing = json!({"anthropic": {"claude-sonnet-4-5": {"input": 3.0, "output": 15.0, "context": window}}});
        std::fs::write(workdir.join("config/pricing.json"), pricing.to_string()).expect("write");
    }
    let report = workdir.join("review.json");
    let mut args: Vec<String> = vec![repo.display().to_string(), "--base".into(), "main".into()];
    args.extend(["--conclave".into(), conclave(&workdir).display().to_string()]);
    if window.is_none() {
        args.extend(["--max-diff-bytes".into(), PART.to_string()]);
    }
    args.extend(["--format".into(), "json".into(), "--output-file".into(), report.display().to_string()]);
    args.extend(extra.iter().map(|a| a.to_string()));
    let server = FakeServer::start_responding(responder).await;
    let out = review(&workdir, &server, args).await;
    let report = serde_json::from_str(&std::fs::read_to_string(&report).unwrap_or_default()).unwrap_or(Value::Null);
    let requests = server.requests().into_iter().map(|r| r.body).collect();
    Reviewed { code: out.status.code(), stderr: String::from_utf8_lossy(&out.stderr).into_owned(), report, requests }
}

fn of_lane<'a>(requests: &'a [Value], lane: &str) -> Vec<&'a Value> {
    let marker = format!("You are the {lane}");
    requests.iter().filter(|r| r.to_string().contains(&marker)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_five_times_the_cap_is_reviewed_in_parts_every_file_seen_and_the_parts_findings_compared() {
    let Reviewed { code, stderr, report, requests } = review_in_parts(false, &[]).await;
    assert_eq!(code, Some(0), "{stderr}");
    let parts = report["review"]["parts"]["parts"].as_array().cloned().unwrap_or_default();
    assert!(parts.len() >= 5, "a change about five times the cap: {}", report["review"]["parts"]);
    assert!(stderr.contains(&format!("with parts-review, in {} parts", parts.len())), "{stderr}");
    assert_eq!(requests.len(), parts.len() * 3 + 1, "parts × specialists + the Writer");

    let specialists: Vec<String> = ["security", "correctness", "conventions"]
        .iter()
        .flat_map(|lane| of_lane(&requests, &format!("{lane} reviewer")))
        .map(Value::to_string)
        .collect();
    for path in ["alpha/auth.rs", "alpha/session.rs", "beta/store.rs", "gamma/config.rs", "big/huge.rs"] {
        assert!(specialists.iter().any(|r| r.contains(&format!("--- {path} ("))), "{path} is in some part's request");
    }
    for block in 0..10 {
        let first_new = format!("block_{} = \\\"new value", block * 40 + 28);
        assert!(specialists.iter().any(|r| r.contains(&first_new)), "hunk {block} of big/huge.rs is reviewed");
    }
    let huge_parts = parts.iter().filter(|p| p["files"].as_array().is_some_and(|f| f.contains(&json!("big/huge.rs"))));
    assert!(huge_parts.count() >= 2, "the big file is split by hunks: {parts:?}");
    let alpha: Vec<&Value> = parts.iter().filter(|p| p["files"].to_string().contains("alpha/")).collect();
    assert_eq!(alpha.len(), 1, "a directory that fits stays in one part");
    assert_eq!(alpha[0]["files"], json!(["alpha/auth.rs", "alpha/session.rs"]));

    let with_gamma = specialists.iter().filter(|r| r.contains("--- gamma/config.rs ("));
    assert!(with_gamma.clone().count() == 3 && with_gamma.clone().all(|r| r.contains(GAMMA_RULE)), "its rule");
    let without = specialists.iter().filter(|r| !r.contains("--- gamma/config.rs ("));
    assert!(without.clone().count() > 0 && without.clone().all(|r| !r.contains(GAMMA_RULE)), "a part's own rules only");

    let writer = of_lane(&requests, "Writer");
    assert_eq!(writer.len(), 1);
    assert!(!writer[0].to_string().contains("--- alpha/auth.rs ("), "the Writer sees no diff that does not fit");
    assert!(writer[0].to_string().contains("split into"), "it is told the change was reviewed in parts");

    let contradictions: Vec<Value> = report["review"]["findings_checks"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|c| c["check"]["contradictions"].as_array().cloned().unwrap_or_default())
        .collect();
    assert_eq!(contradictions.len(), 1, "{}", report["review"]["findings_checks"]);
    assert_eq!(
        (contradictions[0]["file"].clone(), contradictions[0]["line"].clone()),
        (json!("alpha/auth.rs"), json!(3))
    );
    let agents: Vec<&str> = contradictions[0]["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter_map(|f| f["agent"].as_str())
        .collect();
    assert_eq!(agents, ["security", "correctness"], "findings of two parts, merged per specialist, then compared");
    assert_eq!(report["review"]["degraded"], false, "{}", report["review"]["degraded_reasons"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hunk_larger_than_a_part_is_left_out_and_degrades_and_max_parts_lists_the_files_beyond() {
    let Reviewed { code, stderr, report, requests } = review_in_parts(true, &["--fail-on", "blocker"]).await;
    assert_eq!(code, Some(6), "a hunk not reviewed makes the review degraded: {stderr}");
    let left_out = &report["review"]["parts"]["left_out"];
    assert_eq!(left_out.as_array().map(Vec::len), Some(1), "{left_out}");
    assert_eq!(
        (left_out[0]["path"].clone(), left_out[0]["lines"].clone()),
        (json!("big/generated.rs"), json!([1, 150]))
    );
    assert!(left_out[0]["diff_bytes"].as_u64().is_some_and(|b| b as usize > PART), "{left_out}");
    let reasons = report["review"]["degraded_reasons"].to_string();
    assert!(reasons.contains("a hunk of `big/generated.rs` (lines 1-150"), "{reasons}");
    assert!(!requests.iter().any(|r| r.to_string().contains("generated_1 = ")), "no request holds the huge hunk");

    let Reviewed { code, stderr, report, requests } = review_in_parts(false, &["--max-parts", "2"]).await;
    assert_eq!(code, Some(0), "{stderr}");
    let parts = report["review"]["parts"]["parts"].as_array().cloned().unwrap_or_default();
    assert_eq!(parts.len(), 2, "{}", report["review"]["parts"]);
    assert_eq!(requests.len(), 2 * 3 + 1);
    let omitted: Vec<&str> =
        report["review"]["omitted"].as_array().expect("omitted").iter().filter_map(|f| f["path"].as_str()).collect();
    assert_eq!(omitted, ["big/huge.rs"], "the largest file is beyond the cap; the small ones are reviewed");
    assert_eq!(report["review"]["degraded"], false, "files beyond the cap are listed, not a degraded review");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reviewers_model_window_bounds_a_part_below_the_cap_and_a_large_window_leaves_the_change_whole() {
    // About 21 KB of diff, under the default cap of 1 MiB: one call takes it whole.
    let Reviewed { code, stderr, report, requests } = review_with(false, &[], Some(200_000), answer_by_part).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(report["review"]["parts"].is_null(), "{}", report["review"]["parts"]);
    assert_eq!(requests.len(), 3 + 1);

    // A 30,000-token window less the prompt and a 4,096-token answer holds less.
    let window = 30_000;
    let Reviewed { code, stderr, report, requests } = review_with(false, &[], Some(window), answer_by_part).await;
    assert_eq!(code, Some(0), "{stderr}");
    let parts = report["review"]["parts"]["parts"].as_array().cloned().unwrap_or_default();
    assert!(parts.len() >= 2, "{}", report["review"]["parts"]);
    assert_eq!(requests.len(), parts.len() * 3 + 1);
    for request in of_lane(&requests, "security reviewer") {
        let diff = request.to_string().split("--- ").skip(1).map(str::len).sum::<usize>();
        assert!(diff < window as usize - 4096, "a part's diff leaves room for the prompt and the answer: {diff}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_markdown_report_lists_the_parts_and_the_hunks_not_reviewed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = repository(dir.path(), true);
    let workdir = dir.path().join("work");
    std::fs::create_dir_all(&workdir).expect("mkdir");
    let report = workdir.join("review.md");
    let args: Vec<String> = [
        repo.display().to_string(),
        "--base".into(),
        "main".into(),
        "--conclave".into(),
        conclave(&workdir).display().to_string(),
        "--max-diff-bytes".into(),
        PART.to_string(),
        "--output-file".into(),
        report.display().to_string(),
    ]
    .into();
    let server = FakeServer::start_responding(answer_by_part).await;
    let out = review(&workdir, &server, args).await;
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let markdown = std::fs::read_to_string(&report).expect("the report");
    assert!(markdown.contains("parts\n\nThe change is larger than one request can take"), "{markdown}");
    assert!(markdown.contains("- Part 1 of "), "{markdown}");
    assert!(markdown.contains("`alpha/auth.rs`, `alpha/session.rs`"), "{markdown}");
    assert!(markdown.contains("## Hunks not reviewed (1)"), "{markdown}");
    assert!(markdown.contains("- `big/generated.rs` lines 1-150 ("), "{markdown}");
}

#[tokio::test]
async fn the_api_takes_max_parts_in_its_review_object_and_refuses_one_out_of_range() {
    let api = crate::api::api_with(None);
    let repo = api.dir.path().join("repo");
    std::fs::create_dir_all(&repo).expect("mkdir");
    git(&repo, &["init", "-q"]);
    std::fs::write(repo.join("README.md"), "# Parts\n").expect("write");
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "base"]);
    // Three files of about 600 KB in three directories: one file to a part of 1 MiB.
    for (dir, lines) in [("one", 14_000), ("two", 13_000), ("three", 12_000)] {
        std::fs::create_dir_all(repo.join(dir)).expect("mkdir");
        std::fs::write(repo.join(format!("{dir}/data.rs")), self::lines(dir, 1, lines, "new")).expect("write");
    }
    let answer = r#"json={"findings":[],"counts":{"blocker":0,"major":0,"minor":0,"nit":0}}"#;
    let mut review = crate::api::conclave("mini-review", answer);
    review["nodes"][1]["agent"]["output_schema_ref"] = json!("review.findings.v1");
    assert_eq!(api.send("POST", "/api/conclaves", review).await.0, axum::http::StatusCode::CREATED);

    let too_many =
        json!({"conclave_id": "mini-review", "review": {"repository": repo.display().to_string(), "max_parts": 0}});
    let (status, body, _) = api.send("POST", "/api/runs", too_many).await;
    assert_eq!(status, axum::http::StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"]["path"], "/review/max_parts", "{body}");
    assert!(body["error"]["message"].as_str().is_some_and(|m| m.contains("give 1 to 64")), "{body}");

    let one =
        json!({"conclave_id": "mini-review", "review": {"repository": repo.display().to_string(), "max_parts": 1}});
    let (status, started, _) = api.send("POST", "/api/runs", one).await;
    assert_eq!(status, axum::http::StatusCode::ACCEPTED, "{started}");
    let id = started["run_id"].as_str().expect("id").to_string();
    api.get(&format!("/api/runs/{id}/events")).await;
    let mut report = Value::Null;
    for _ in 0..100 {
        let (status, _, text) = api.get(&format!("/api/runs/{id}/report?format=json")).await;
        if status == axum::http::StatusCode::OK {
            report = serde_json::from_str(&text).expect("json");
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let omitted: Vec<&str> =
        report["review"]["omitted"].as_array().expect("omitted").iter().filter_map(|f| f["path"].as_str()).collect();
    assert_eq!(omitted, ["one/data.rs", "two/data.rs"], "the smallest file reviewed, the others listed largest first");
}

/// Three new files in three directories, split into three parts, one file each.
fn three_part_change(root: &Path) -> conclave_review::diff::Change {
    use conclave_review::diff::{Change, ChangedFile, Head};
    let files: Vec<(ChangedFile, String)> = ["a/one.rs", "b/two.rs", "c/three.rs"]
        .iter()
        .map(|path| {
            let source = lines(path, 1, 30, "new");
            let numbered: String = source.lines().enumerate().map(|(n, l)| format!("+{:>5} | {l}\n", n + 1)).collect();
            let text = format!("--- {path} (added)\n@@ -0,0 +1,30 @@\n{numbered}");
            (ChangedFile { path: path.to_string(), status: "added".into(), changed_lines: vec![(1, 30)] }, text)
        })
        .collect();
    let mut change = Change {
        root: root.to_path_buf(),
        base: None,
        files: files.iter().map(|(f, _)| f.clone()).collect(),
        annotated: files.iter().map(|(_, d)| d.as_str()).collect::<Vec<_>>().join("\n"),
        omitted: vec![],
        parts: vec![],
        left_out: vec![],
        head: Head::default(),
        impact: None,
    };
    let largest = files.iter().map(|(_, d)| d.len()).max().unwrap_or_default();
    change.split_into_parts(largest + 10, 8).expect("splits");
    assert_eq!(change.parts.len(), 3);
    change
}

/// A review conclave of one findings-shaped agent `a` on the fake provider.
fn one_reviewer() -> conclave_shared::Conclave {
    use conclave_shared::{AgentConfig, Conclave, Edge, Node, NodeKind, Settings};
    let mut agent = AgentConfig::new("fake");
    agent.model = r#"json={"findings":[],"counts":{"blocker":0,"major":0,"minor":0,"nit":0}}"#.into();
    agent.output_schema_ref = Some("review.findings.v1".into());
    Conclave {
        version: 1,
        id: "queued-review".into(),
        name: "Queued review".into(),
        description: String::new(),
        settings: Settings::default(),
        nodes: vec![
            Node::new("in", NodeKind::Trigger),
            Node { agent: Some(agent), ..Node::new("a", NodeKind::Agent) },
            Node::new("out", NodeKind::Output),
        ],
        edges: vec![
            Edge { from: "in".into(), to: "a".into(), case: None },
            Edge { from: "a".into(), to: "out".into(), case: None },
        ],
    }
}

/// A queued review whose stored input holds its parts: the worker that claims it
/// rebuilds the same parts from that input, and the findings-shaped reviewer runs
/// once per part.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_runs_the_parts_a_queued_review_stored_in_its_input() {
    use conclave_core::{NewRun, ProviderRegistry, RunQueue, RunStore};
    use conclave_doubles::{FakeProvider, MemoryStore};
    use conclave_shared::RunStatus;
    use std::sync::Arc;

    let dir = tempfile::tempdir().expect("tempdir");
    let input = three_part_change(dir.path()).run_input();
    let queue = Arc::new(MemoryStore::new());
    let run = NewRun { id: "parts".into(), conclave: one_reviewer(), input, created_ms: 1, owner: "api".into() };
    queue.enqueue(&run, &json!({"kind": "review", "samples": 1})).await.expect("enqueue");

    let fake = Arc::new(FakeProvider::new("fake"));
    let mut providers = ProviderRegistry::default();
    providers.register(fake.clone());
    let engine = conclave_engine::Engine::new(providers, queue.clone(), conclave_engine::EngineConfig::default());
    let config = conclave_server::worker::WorkerConfig {
        id: "worker".into(),
        lease: std::time::Duration::from_millis(600),
        idle: std::time::Duration::from_millis(20),
        max_runs: 1,
    };
    let worker = conclave_server::worker::Worker::new(queue.clone(), engine, conclave_testkit::test_catalog(), config);
    let shutdown = tokio_util::sync::CancellationToken::new();
    tokio::spawn(worker.work(shutdown.clone()));
    let mut status = RunStatus::Queued;
    for _ in 0..500 {
        status = queue.get_run("parts").await.expect("get").expect("run").summary.status;
        if status.is_terminal() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    shutdown.cancel();
    assert_eq!(status, RunStatus::Succeeded);
    let calls = fake.calls_for("a");
    assert_eq!(calls.len(), 3, "one call per stored part");
    for path in ["a/one.rs", "b/two.rs", "c/three.rs"] {
        let holding = calls.iter().filter(|c| c.input["input"]["diff"].as_str().is_some_and(|d| d.contains(path)));
        assert_eq!(holding.count(), 1, "{path} is in exactly one part's call");
    }
}

/// As [`answer_by_part`], but the conventions reviewer's call on the part holding
/// `beta/` is refused by the provider.
fn refusing_one_part(body: &Value) -> Reply {
    let text = body.to_string();
    if text.contains("You are the conventions reviewer") && text.contains("--- beta/store.rs (") {
        let error =
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": "this part is refused"}});
        return Reply::Status { status: 400, headers: Vec::new(), body: error.to_string() };
    }
    answer_by_part(body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_part_that_fails_leaves_the_others_merged_and_the_review_degraded() {
    let Reviewed { code, stderr, report, .. } =
        review_with(false, &["--fail-on", "blocker"], None, refusing_one_part).await;
    assert_eq!(code, Some(6), "a part not reviewed makes the review degraded: {stderr}");
    let parts = report["review"]["parts"]["parts"].as_array().cloned().unwrap_or_default();
    let beta = parts.iter().position(|p| p["files"].to_string().contains("beta/")).expect("a part holds beta/") + 1;
    let failed = report["review"]["parts"]["failed"].as_array().cloned().unwrap_or_default();
    assert_eq!(failed.len(), 1, "{failed:?}");
    let says = failed[0].as_str().unwrap_or_default();
    let expected = format!("agent `conventions`: part {beta} of {}: ", parts.len());
    assert!(says.starts_with(&expected) && says.contains("this part is refused"), "{says}");
    let reasons = report["review"]["degraded_reasons"].to_string();
    assert!(reasons.contains("that part's findings are missing"), "{reasons}");
    let contradictions = report["review"]["findings_checks"].to_string();
    assert!(contradictions.contains(WEAK) && contradictions.contains(FINE), "the other parts still compared");
}
