//! Confidence from repetition and from independent models. `conclave review
//! --samples K`: each reviewer answers K times over loopback (the fake answers each
//! sample differently), the samples are merged by fingerprint, and each finding's
//! stability (how many samples raised it) reaches the report, the Writer's findings
//! and the gates. The built-in `review-panel`: one lane on Claude and on GPT (each
//! faked in its own wire format), so a finding both models raised has support 2.

use conclave_testkit::wire::Vendor;
use conclave_testkit::{FakeServer, Reply, Route};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

use crate::review_e2e::{TRAVERSAL, findings, fixture_workspace, review};

const ATOMIC: &str = "The write is not atomic; a crash leaves a partial file behind.";
const DOC: &str = "The doc comment no longer says which names are refused.";

fn item(severity: &str, line: u64, description: &str, evidence: &str) -> Value {
    json!({"severity": severity, "file": "src/upload.rs", "line": line, "description": description, "raisedBy": "security", "evidence": evidence})
}

/// The three findings: the traversal (major), the partial write (minor) and the doc
/// comment (blocker, so gates show what stability does).
fn x() -> Value {
    item("major", 8, TRAVERSAL, "root.join(name)")
}
fn y() -> Value {
    item("minor", 9, ATOMIC, "std::fs::write(target, data)")
}
fn z() -> Value {
    item("blocker", 7, DOC, "pub fn save_upload(")
}

fn answer(items: Vec<Value>) -> Reply {
    let count = |s: &str| items.iter().filter(|i| i["severity"] == s).count() as u64;
    let counts = [count("blocker"), count("major"), count("minor"), count("nit")];
    Vendor::Anthropic.answer(&findings(Value::Array(items), counts))
}

/// The built-in review conclave without tools, so each sample of a reviewer makes
/// exactly one call and takes the next scripted answer.
fn sampled_conclave(workdir: &Path) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../conclaves/light-code-review.conclave.json");
    let mut conclave: Value = serde_json::from_str(&std::fs::read_to_string(source).expect("read")).expect("json");
    conclave["id"] = json!("sampled-review");
    for node in conclave["nodes"].as_array_mut().expect("nodes") {
        if let Some(agent) = node.get_mut("agent").and_then(Value::as_object_mut) {
            agent.remove("tools");
        }
    }
    let path = workdir.join("sampled-review.conclave.json");
    std::fs::write(&path, serde_json::to_string_pretty(&conclave).expect("json")).expect("write");
    path
}

/// Routes: the security reviewer's samples answer `security` in turn; the other
/// reviewers find nothing; the Writer reports all three findings.
fn routes(security: Vec<Reply>) -> Vec<Route> {
    let mut routes = vec![Route { marker: "You are the security reviewer".into(), replies: security }];
    for lane in ["correctness", "conventions"] {
        routes.push(Route { marker: format!("You are the {lane} reviewer"), replies: vec![answer(Vec::new())] });
    }
    routes.push(Route { marker: "You are the Writer".into(), replies: vec![answer(vec![x(), y(), z()])] });
    routes
}

async fn sampled_review(security: Vec<Reply>, extra: &[&str]) -> (Option<i32>, String, Value) {
    let (_dir, repo, workdir) = fixture_workspace();
    let conclave = sampled_conclave(&workdir);
    let report = workdir.join("review.json");
    let mut args: Vec<String> = vec![repo.display().to_string(), "--base".into(), "main".into()];
    args.extend(["--conclave".into(), conclave.display().to_string(), "--samples".into(), "3".into()]);
    args.extend(["--format".into(), "json".into(), "--output-file".into(), report.display().to_string()]);
    args.extend(extra.iter().map(|a| a.to_string()));
    let server = FakeServer::start_routed(routes(security)).await;
    let out = review(&workdir, &server, args).await;
    let json = serde_json::from_str(&std::fs::read_to_string(&report).unwrap_or_default()).unwrap_or(Value::Null);
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned(), json)
}

/// Each finding's line and stability, as the report gives them.
fn stabilities(json: &Value) -> Vec<(u64, String)> {
    let list = json["review"]["findings"].as_array().cloned().unwrap_or_default();
    let mut out: Vec<(u64, String)> = list
        .iter()
        .map(|f| {
            let s = &f["stability"];
            (f["line"].as_u64().unwrap_or(0), format!("{}/{}", s["raised"], s["samples"]))
        })
        .collect();
    out.sort();
    out
}

#[tokio::test]
async fn three_samples_that_answer_differently_give_stabilities_of_one_two_and_three_thirds() {
    let security = vec![answer(vec![x(), y(), z()]), answer(vec![x(), y()]), answer(vec![x()])];
    let (code, stderr, json) = sampled_review(security.clone(), &["--fail-on", "blocker"]).await;
    assert_eq!(code, Some(5), "the blocker raised by one sample of three gates by default: {stderr}");
    assert_eq!(stabilities(&json), [(7, "1/3".into()), (8, "3/3".into()), (9, "2/3".into())]);
    let security_samples =
        json["review"]["samples"].as_array().expect("samples").iter().find(|s| s["node_id"] == "security").cloned();
    assert_eq!(
        security_samples,
        Some(json!({"node_id": "security", "requested": 3, "answered": 3, "failed": []})),
        "{}",
        json["review"]["samples"]
    );
    assert_eq!(json["review"]["stability"], json!({"3/3": 1, "2/3": 1, "1/3": 1}));
    assert_eq!(json["review"]["degraded"], false);

    let (code, stderr, _) = sampled_review(security, &["--fail-on", "blocker", "--min-stability", "2/3"]).await;
    assert_eq!(code, Some(0), "the blocker one sample of three raised does not gate at 2/3: {stderr}");
    assert!(stderr.contains("gate: 1 blocker(s) not counted"), "{stderr}");
}

#[tokio::test]
async fn a_sample_that_fails_leaves_the_others_merged_and_the_review_degraded() {
    let refused = Reply::Status {
        status: 400,
        headers: vec![("content-type", "application/json".into())],
        body: json!({"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long"}})
            .to_string(),
    };
    let security = vec![answer(vec![x(), y(), z()]), answer(vec![x(), y()]), refused];
    let (code, stderr, json) = sampled_review(security, &["--fail-on", "blocker"]).await;
    assert_eq!(code, Some(6), "a degraded review fails its gates: {stderr}");
    assert_eq!(stabilities(&json), [(7, "1/2".into()), (8, "2/2".into()), (9, "2/2".into())]);
    let reasons = json["review"]["degraded_reasons"].to_string();
    assert!(reasons.contains("agent `security`: 1 of 3 samples failed"), "{reasons}");
}

#[test]
fn bad_sample_counts_and_rates_are_refused_before_anything_runs() {
    for (flag, value, says) in [
        ("--samples", "0", "0 is not in 1..=16"),
        ("--samples", "17", "17 is not in 1..=16"),
        ("--min-stability", "1.5", "is not a rate"),
        ("--min-stability", "2/0", "is not a rate"),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_conclave"))
            .args(["review", ".", flag, value])
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(2), "{flag} {value}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{flag} {value}: {stderr}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_panel_gives_support_two_to_what_both_models_raised() {
    let (_dir, repo, workdir) = fixture_workspace();
    let lane = |mut v: Value| {
        v["raisedBy"] = json!("defects");
        v
    };
    let claude_items = vec![lane(x()), lane(z())];
    let gpt_items =
        vec![lane(item("major", 8, "Path traversal: the name is joined onto the root unchecked.", "root.join(name)"))];
    let as_answer = |vendor: Vendor, items: Vec<Value>| {
        let count = |s: &str| items.iter().filter(|i| i["severity"] == s).count() as u64;
        let counts = [count("blocker"), count("major"), count("minor"), count("nit")];
        vendor.answer(&findings(Value::Array(items), counts))
    };
    let looked = |vendor: Vendor| vendor.answer("I read the diff; nothing more to look up.");
    let routes = vec![
        Route {
            marker: "You are the Writer".into(),
            replies: vec![as_answer(Vendor::Anthropic, claude_items.clone())],
        },
        Route {
            marker: "\"model\":\"gpt-4.1-mini\"".into(),
            replies: vec![looked(Vendor::OpenAiChat), as_answer(Vendor::OpenAiChat, gpt_items)],
        },
        Route {
            marker: "You are one of two independent reviewers".into(),
            replies: vec![looked(Vendor::Anthropic), as_answer(Vendor::Anthropic, claude_items)],
        },
    ];
    let server = FakeServer::start_routed(routes).await;
    let report = workdir.join("panel.json");
    let run = |extra: &[&str]| {
        let mut args = vec!["review".to_string(), repo.display().to_string(), "--base".into(), "main".into()];
        args.extend(["--conclave", "review-panel", "--format", "json", "--fail-on", "blocker"].map(String::from));
        args.extend(["--output-file".to_string(), report.display().to_string()]);
        args.extend(extra.iter().map(|a| a.to_string()));
        std::process::Command::new(env!("CARGO_BIN_EXE_conclave"))
            .args(args)
            .current_dir(&workdir)
            .env("CONCLAVE_DB", workdir.join("runs.db"))
            .env("CONCLAVE_CONFIG_DIR", workdir.join("config"))
            .env("ANTHROPIC_BASE_URL", &server.base)
            .env("ANTHROPIC_API_KEY", "sk-ant-test")
            .env("OPENAI_BASE_URL", &server.base)
            .env("OPENAI_API_KEY", "sk-openai-test")
            .env("CONCLAVE_TOOLS_DIR", conclave_testkit::no_tools())
            .env_remove("CI")
            .output()
            .expect("conclave runs")
    };
    let out = tokio::task::block_in_place(|| run(&[]));
    assert_eq!(out.status.code(), Some(5), "{}", String::from_utf8_lossy(&out.stderr));
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&report).expect("report")).expect("json");
    let support: Vec<(u64, u64)> = json["review"]["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| (f["line"].as_u64().unwrap_or(0), f["support"].as_u64().unwrap_or(0)))
        .collect();
    assert_eq!(support, [(8, 2), (7, 1)], "both models raised the traversal, only Claude the doc comment");
    let gpt_calls = server.requests().iter().filter(|r| r.body.to_string().contains("gpt-4.1-mini")).count();
    assert_eq!(gpt_calls, 2, "the GPT reviewer answered through the OpenAI wire format");

    let out = tokio::task::block_in_place(|| run(&["--min-support", "2"]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "the blocker one model raised does not gate at support 2: {stderr}");
}

/// The built-in review conclave without tools and with every agent cached.
fn cached_conclave(workdir: &Path) -> PathBuf {
    let path = sampled_conclave(workdir);
    let mut conclave: Value = serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("json");
    for node in conclave["nodes"].as_array_mut().expect("nodes") {
        if let Some(agent) = node.get_mut("agent").and_then(Value::as_object_mut) {
            agent.insert("cache".into(), json!(true));
        }
    }
    std::fs::write(&path, serde_json::to_string_pretty(&conclave).expect("json")).expect("write");
    path
}

#[tokio::test]
async fn a_second_review_of_the_same_change_takes_every_cached_answer_and_says_so() {
    let (_dir, repo, workdir) = fixture_workspace();
    let conclave = cached_conclave(&workdir);
    let server = FakeServer::start_routed(routes(vec![answer(vec![x()])])).await;
    let report = |name: &str| workdir.join(name);
    let args = |name: &str, extra: &[&str]| {
        let mut args: Vec<String> = vec![repo.display().to_string(), "--base".into(), "main".into()];
        args.extend(["--conclave".into(), conclave.display().to_string(), "--format".into(), "json".into()]);
        args.extend(["--output-file".into(), report(name).display().to_string()]);
        args.extend(extra.iter().map(|a| a.to_string()));
        args
    };
    let first = review(&workdir, &server, args("first.json", &[])).await;
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    let calls = server.requests().len();
    assert_eq!(calls, 4, "three reviewers and the Writer");

    let second = review(&workdir, &server, args("second.json", &[])).await;
    assert!(second.status.success(), "{}", String::from_utf8_lossy(&second.stderr));
    assert_eq!(server.requests().len(), calls, "every answer came from the cache");
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(report("second.json")).expect("report")).expect("json");
    let cached: Vec<&str> =
        json["review"]["cached"].as_array().expect("cached").iter().filter_map(|c| c["node_id"].as_str()).collect();
    assert_eq!(cached.len(), 4, "the report names each cached agent: {}", json["review"]["cached"]);
    assert_eq!(json["usage"]["input_tokens"], 0, "cached answers cost nothing");
    assert_eq!(json["review"]["findings"].as_array().map(Vec::len), Some(3), "the same findings as the first review");

    review(&workdir, &server, args("third.json", &["--no-cache"])).await;
    assert!(server.requests().len() > calls, "--no-cache calls the providers again");
}
