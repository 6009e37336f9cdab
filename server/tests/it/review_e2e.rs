//! `conclave review` end to end: a fixture git repository with a path-traversal bug,
//! Anthropic faked over loopback in its real streaming wire format, the built-in
//! review conclave, and every report format.

use conclave_testkit::git;
use conclave_testkit::wire::Vendor;
use conclave_testkit::{FakeServer, Route};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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

/// The change under review: line 8 joins a client-supplied name onto the root.
pub(crate) const VULNERABLE: &str = "//! Saving uploaded files.

use std::io;
use std::path::Path;

/// Saves `data` as `name` under `root`.
pub fn save_upload(root: &Path, name: &str, data: &[u8]) -> io::Result<()> {
    let target = root.join(name);
    std::fs::write(target, data)
}
";

/// A temporary directory holding the fixture repository and an empty working
/// directory for `conclave` beside it.
pub(crate) fn fixture_workspace() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = fixture_repo(dir.path());
    let workdir = dir.path().join("work");
    std::fs::create_dir_all(&workdir).expect("mkdir");
    (dir, repo, workdir)
}

/// A repository whose `feature` branch adds the bug on top of `main`.
pub(crate) fn fixture_repo(dir: &Path) -> PathBuf {
    let repo = dir.join("repo");
    std::fs::create_dir_all(repo.join("src")).expect("mkdir");
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("src/upload.rs"), SAFE).expect("write");
    std::fs::write(repo.join("README.md"), "# Uploads\n").expect("write");
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "safe uploads"]);
    git(&repo, &["checkout", "-q", "-b", "feature"]);
    std::fs::write(repo.join("src/upload.rs"), VULNERABLE).expect("write");
    std::fs::write(repo.join("README.md"), "# Uploads\n\nSaves uploaded files.\n").expect("write");
    git(&repo, &["commit", "-q", "-am", "simplify uploads"]);
    repo
}

pub(crate) fn findings(items: Value, counts: [u64; 4]) -> String {
    json!({"findings": items, "counts": {"blocker": counts[0], "major": counts[1], "minor": counts[2], "nit": counts[3]}}).to_string()
}

pub(crate) const TRAVERSAL: &str = "The client-supplied name is joined to the upload root without rejecting `..` or absolute paths: path traversal lets a client write anywhere.";

pub(crate) fn routes() -> Vec<Route> {
    let a = Vendor::Anthropic;
    let looked = || a.answer("I read the diff; nothing more to look up.");
    vec![
        Route {
            marker: "You are the security reviewer".into(),
            replies: vec![looked(), a.answer(&findings(json!([{"severity": "blocker", "file": "src/upload.rs", "line": 8, "description": TRAVERSAL, "raisedBy": "security", "stance": "concern"}]), [1, 0, 0, 0]))],
        },
        Route {
            marker: "You are the correctness reviewer".into(),
            replies: vec![looked(), a.answer(&findings(json!([{"severity": "minor", "file": "src/upload.rs", "line": 9, "description": "The write is not atomic; a crash leaves a partial file. Write to a temporary file and rename it.", "raisedBy": "correctness", "stance": "concern"}]), [0, 0, 1, 0]))],
        },
        Route {
            marker: "You are the conventions reviewer".into(),
            replies: vec![looked(), a.answer(&findings(json!([{"severity": "nit", "file": "./src/upload.rs", "line": 8, "description": "Reads cleanly; joining the name onto the root is idiomatic.", "raisedBy": "conventions", "stance": "approval"}]), [0, 0, 0, 1]))],
        },
        Route {
            marker: "You are the Writer".into(),
            replies: vec![a.answer(&findings(
                json!([
                    {"severity": "blocker", "file": "src/upload.rs", "line": 8, "description": TRAVERSAL, "raisedBy": "security", "stance": "concern"},
                    {"severity": "minor", "file": "src/upload.rs", "line": 9, "description": "The write is not atomic; write to a temporary file and rename it.", "raisedBy": "correctness", "stance": "concern"}
                ]),
                [3, 0, 1, 0],
            ))],
        },
    ]
}

pub(crate) fn conclave(workdir: &Path, server: &FakeServer, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_conclave"))
        .args(args)
        .current_dir(workdir)
        .env("CONCLAVE_DB", workdir.join("runs.db"))
        .env("CONCLAVE_CONFIG_DIR", workdir.join("config"))
        .env("ANTHROPIC_BASE_URL", &server.base)
        .env("ANTHROPIC_API_KEY", "sk-ant-test")
        .env("CONCLAVE_TOOLS_DIR", conclave_testkit::no_tools())
        .env_remove("OPENAI_API_KEY")
        .output()
        .expect("conclave runs")
}

/// Runs `conclave review ARGS` off the async runtime, so the fake server keeps serving.
pub(crate) async fn review(workdir: &Path, server: &FakeServer, args: Vec<String>) -> Output {
    let (workdir, base) = (workdir.to_path_buf(), server.base.clone());
    tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_conclave"))
            .arg("review")
            .args(&args)
            .current_dir(&workdir)
            .env("CONCLAVE_DB", workdir.join("runs.db"))
            .env("CONCLAVE_CONFIG_DIR", workdir.join("config"))
            .env("ANTHROPIC_BASE_URL", base)
            .env("ANTHROPIC_API_KEY", "sk-ant-test")
            .env("CONCLAVE_TOOLS_DIR", conclave_testkit::no_tools())
            .output()
            .expect("conclave runs")
    })
    .await
    .expect("joined")
}

fn last_run(workdir: &Path, server: &FakeServer) -> String {
    let out = conclave(workdir, server, &["runs", "list", "--json", "--limit", "1"]);
    let runs: Value = serde_json::from_slice(&out.stdout).expect("json");
    runs[0]["id"].as_str().expect("a run").to_string()
}

#[tokio::test]
async fn a_review_surfaces_the_contradiction_and_the_miscount_in_every_format() {
    let (_dir, repo, workdir) = fixture_workspace();
    let server = FakeServer::start_routed(routes()).await;
    let report_md = workdir.join("review.md");
    let args = ["--base", "main", "--output-file", &report_md.display().to_string(), "--fail-on", "contradiction"]
        .map(String::from);
    let out = review(&workdir, &server, [vec![repo.display().to_string()], args.to_vec()].concat()).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "--fail-on contradiction trips after writing the report: {stderr}");
    assert!(stderr.contains("gate: 1 contradiction(s) between reviewers (--fail-on contradiction)"), "{stderr}");
    assert!(stderr.contains("reviewing 2 file(s)"), "{stderr}");

    let markdown = std::fs::read_to_string(&report_md).expect("the report was written: the run succeeded");
    let run_id = last_run(&workdir, &server);
    insta::assert_snapshot!("review_markdown", without_layers(&markdown.replace(&run_id, "<run>")));

    what_the_agents_were_sent(&server);

    sarif_validates_and_ranks(&conclave(&workdir, &server, &["runs", "report", &run_id, "--format", "sarif"]));

    let rd = conclave(&workdir, &server, &["runs", "report", &run_id, "--format", "rdjsonl"]);
    let lines: Vec<Value> = String::from_utf8_lossy(&rd.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["location"], json!({"path": "src/upload.rs", "range": {"start": {"line": 8}}}));
    assert_eq!(lines[0]["severity"], "ERROR");

    let env_out = conclave(&workdir, &server, &["runs", "report", &run_id, "--format", "json"]);
    let envelope: Value = serde_json::from_slice(&env_out.stdout).expect("json");
    assert_eq!(envelope["status"], "succeeded");
    assert_eq!(envelope["result"]["schema_ref"], "review.findings.v1");
    let text: Value =
        serde_json::from_str(envelope["result"]["text"].as_str().expect("text")).expect("canonical JSON parses");
    assert_eq!(text, envelope["result"]["json"]);
    assert_eq!(
        envelope["review"]["totals"],
        json!({"blocker": 1, "major": 0, "minor": 1, "nit": 0}),
        "totals come from the findings"
    );
    assert_eq!(envelope["provider"], "anthropic");
}

/// The Writer got the engine's comparison; reviewers were offered the tools and the
/// findings schema narrowed to the change.
fn what_the_agents_were_sent(server: &FakeServer) {
    let requests = server.requests();
    let writer =
        requests.iter().find(|r| r.body.to_string().contains("You are the Writer")).expect("the writer was called");
    let writer_text = writer.body.to_string();
    assert!(
        writer_text.contains("Contradictions the engine found between the reviewers above (`contradictions`)"),
        "{writer_text}"
    );
    assert!(writer_text.contains("security (blocker) raised a concern that conventions approved"), "{writer_text}");
    let security_final = requests
        .iter()
        .filter(|r| r.body.to_string().contains("You are the security reviewer"))
        .find(|r| r.body.get("output_config").is_some())
        .expect("the security extraction turn");
    assert_eq!(
        security_final.body.pointer("/output_config/format/schema/properties/findings/items/properties/file/enum"),
        Some(&json!(["README.md", "src/upload.rs"])),
        "findings may only cite the changed files"
    );
    let tool_turn =
        requests.iter().find(|r| r.body.to_string().contains("You are the security reviewer")).expect("tool turn");
    let tools: Vec<&str> =
        tool_turn.body["tools"].as_array().expect("tools offered").iter().filter_map(|t| t["name"].as_str()).collect();
    // Every agent on the provider is sent the conclave's tools in one order, so
    // their prompts start alike for the prompt cache.
    assert_eq!(tools, vec!["find_definition", "find_references", "grep", "list_files", "outline", "read_file"]);
    assert_eq!(writer.body["tools"], tool_turn.body["tools"], "the Writer sees the same tools");
    assert_eq!(writer.body["tool_choice"], json!({"type": "none"}), "and may call none of them");
}

/// The SARIF report validates against the official schema and maps severities to levels.
/// Asserts that `sarif` validates against the official SARIF 2.1.0 schema.
pub(crate) fn assert_valid_sarif(sarif: &Value) {
    let schema_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/sarif/sarif-schema-2.1.0.json");
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(schema_path).expect("schema fixture")).expect("json");
    let validator = jsonschema::validator_for(&schema).expect("the SARIF schema compiles");
    let errors: Vec<String> = validator.iter_errors(sarif).map(|e| format!("{}: {e}", e.instance_path())).collect();
    assert!(errors.is_empty(), "SARIF does not validate: {errors:?}");
    assert_multitool_accepts(sarif);
}

/// Microsoft's SARIF Multitool (installed from npm by
/// `scripts/fetch-sarif-multitool.sh`) finds no error in `sarif`: its `validate`
/// writes what it found as SARIF, and any result of level `error` fails the test.
fn assert_multitool_accepts(sarif: &Value) {
    let bin = conclave_testkit::cached_tool(
        "sarif-multitool/node_modules/.bin/sarif-multitool",
        "scripts/fetch-sarif-multitool.sh",
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let (input, output) = (dir.path().join("review.sarif"), dir.path().join("validation.sarif"));
    std::fs::write(&input, serde_json::to_string_pretty(sarif).expect("json")).expect("write");
    let out = Command::new(&bin).arg("validate").arg(&input).arg("--output").arg(&output).output().expect("runs");
    assert!(out.status.success(), "the multitool failed: {}", String::from_utf8_lossy(&out.stdout));
    let found: Value = serde_json::from_str(&std::fs::read_to_string(&output).expect("its log")).expect("json");
    let errors: Vec<String> = found["runs"][0]["results"]
        .as_array()
        .expect("results")
        .iter()
        .filter(|r| r["level"] == "error")
        .map(|r| format!("{}: {}", r["ruleId"], r["message"]))
        .collect();
    assert!(errors.is_empty(), "the SARIF Multitool finds errors: {errors:#?}");
}

fn sarif_validates_and_ranks(sarif_out: &Output) {
    let sarif: Value = serde_json::from_slice(&sarif_out.stdout).expect("SARIF is JSON");
    assert_valid_sarif(&sarif);
    let results = sarif.pointer("/runs/0/results").and_then(Value::as_array).expect("results");
    let levels: Vec<(&str, &str)> =
        results.iter().map(|r| (r["ruleId"].as_str().unwrap_or(""), r["level"].as_str().unwrap_or(""))).collect();
    assert_eq!(levels, vec![("security/blocker", "error"), ("correctness/minor", "note")]);
    assert_eq!(results[1]["properties"]["severity"], "minor");
    assert!(results[0]["partialFingerprints"]["conclaveFinding/v2"].as_str().is_some_and(|f| f.len() == 32));
}

#[tokio::test]
async fn repeat_reports_the_rates_of_mismatches_and_contradictions_in_one_report() {
    let (_dir, repo, workdir) = fixture_workspace();
    let server = FakeServer::start_routed(routes()).await;
    let report = workdir.join("review.json");
    let args = [repo.display().to_string(), "--base".into(), "main".into(), "--repeat".into(), "2".into()];
    let mut args = args.to_vec();
    args.extend(["--format", "json", "--output-file"].map(String::from));
    args.push(report.display().to_string());
    let out = review(&workdir, &server, args).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    for line in [
        "run 1/2 (succeeded): 1 count mismatch(es), 1 contradiction(s), 2 finding(s)",
        "run 2/2 (succeeded): 1 count mismatch(es), 1 contradiction(s), 2 finding(s)",
    ] {
        assert!(stderr.contains(line), "missing {line:?} in {stderr}");
    }
    assert_eq!(stderr.matches("report written to").count(), 1, "one report for all runs: {stderr}");
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&report).expect("report")).expect("json");
    let repeat = &json["review"]["repeat"];
    assert_eq!(repeat["runs"], 2);
    assert_eq!(repeat["runs_with_count_mismatch"], 2);
    assert_eq!(repeat["count_mismatch_rate"], 1.0);
    assert_eq!(repeat["contradiction_rate"], 1.0);
    assert_eq!(repeat["findings_per_run"], json!([2, 2]));
    assert_eq!(repeat["distinct_findings"], 2, "the same answers raise the same findings: {repeat}");
    assert_eq!(repeat["in_every_run"], 2);
}

#[test]
fn working_tree_changes_include_staged_unstaged_and_untracked_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = fixture_repo(dir.path());
    std::fs::write(repo.join("README.md"), "# Uploads, staged\n").expect("write");
    git(&repo, &["add", "README.md"]);
    std::fs::write(repo.join("src/upload.rs"), format!("{VULNERABLE}// unstaged\n")).expect("write");
    std::fs::write(repo.join("src/new.rs"), "pub fn fresh() {}\n").expect("write");
    let change = conclave_review::diff::collect_change(&repo, None).expect("git works").expect("a change");
    let files: Vec<(String, String)> = change.files.iter().map(|f| (f.path.clone(), f.status.clone())).collect();
    assert_eq!(
        files,
        vec![
            ("README.md".to_string(), "modified".to_string()),
            ("src/upload.rs".to_string(), "modified".to_string()),
            ("src/new.rs".to_string(), "added".to_string())
        ]
    );
    assert_eq!(change.files[1].changed_lines, vec![(11, 11)]);
    assert!(change.annotated.contains("+   11 | // unstaged"), "{}", change.annotated);
}

#[test]
fn no_change_is_a_clear_message_and_a_non_repository_is_exit_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = fixture_repo(dir.path());
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_conclave"))
            .args(args)
            .current_dir(dir.path())
            .env("CONCLAVE_DB", dir.path().join("r.db"))
            .output()
            .expect("runs")
    };
    let clean = run(&["review", &repo.display().to_string()]);
    assert_eq!(clean.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&clean.stderr).contains("nothing to review: no changes in"),
        "{}",
        String::from_utf8_lossy(&clean.stderr)
    );
    let plain = tempfile::tempdir().expect("tempdir");
    let not_git = run(&["review", &plain.path().display().to_string()]);
    assert_eq!(not_git.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&not_git.stderr).contains("is not a git repository"));
    let bad_base = run(&["review", &repo.display().to_string(), "--base", "no-such-branch"]);
    assert_eq!(bad_base.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&bad_base.stderr);
    assert!(
        stderr.contains("`no-such-branch` is not a commit in this repository")
            && stderr.contains("; give a branch, tag or commit as the base (--base)"),
        "{stderr}"
    );
}

/// Routes where the specialists find nothing and the Writer reports `items`.
pub(crate) fn writer_routes(items: Value) -> Vec<Route> {
    let a = Vendor::Anthropic;
    let nothing = || a.answer(&findings(json!([]), [0, 0, 0, 0]));
    let mut routes: Vec<Route> = ["security", "correctness", "conventions"]
        .iter()
        .map(|lane| Route {
            marker: format!("You are the {lane} reviewer"),
            replies: vec![a.answer("I read the diff; nothing more to look up."), nothing()],
        })
        .collect();
    let counts = ["blocker", "major", "minor", "nit"]
        .map(|s| items.as_array().map_or(0, |list| list.iter().filter(|f| f["severity"] == s).count() as u64));
    routes.push(Route { marker: "You are the Writer".into(), replies: vec![a.answer(&findings(items, counts))] });
    routes
}

/// Reviews `repo` against `main` with the Writer reporting `items`; returns the exit
/// code, standard error and the JSON report.
pub(crate) async fn review_with(
    workdir: &Path,
    repo: &Path,
    items: Value,
    extra: &[&str],
) -> (Option<i32>, String, Value) {
    let server = FakeServer::start_routed(writer_routes(items)).await;
    let report = workdir.join("review.json");
    let mut args = vec![repo.display().to_string(), "--base".into(), "main".into(), "--format".into(), "json".into()];
    args.extend(["--output-file".to_string(), report.display().to_string()]);
    args.extend(extra.iter().map(|a| a.to_string()));
    let out = review(workdir, &server, args).await;
    let json = serde_json::from_str(&std::fs::read_to_string(&report).unwrap_or_default()).unwrap_or(Value::Null);
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned(), json)
}

#[tokio::test]
async fn quotes_are_checked_against_the_code_and_fingerprints_survive_line_drift() {
    let (_dir, repo, workdir) = fixture_workspace();
    let finding = |severity: &str, line: u64, evidence: &str| {
        json!({"severity": severity, "file": "src/upload.rs", "line": line, "description": TRAVERSAL,
               "raisedBy": "security", "stance": "concern", "evidence": evidence})
    };
    let items = json!([
        finding("major", 8, "let target = root.join(name);"),
        finding("minor", 6, "std::fs::write(target, data)"),
        finding("blocker", 8, "let target = sanitize(name).unwrap();"),
    ]);
    let (code, stderr, report) = review_with(&workdir, &repo, items.clone(), &["--fail-on", "blocker"]).await;
    assert_eq!(code, Some(0), "the only blocker quotes code that does not exist, so it gates nothing: {stderr}");
    assert!(stderr.contains("gate: 1 blocker(s) not counted: unanchored"), "{stderr}");
    let found: Vec<(String, u64, Option<u64>)> = report["review"]["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            (f["anchor"].as_str().unwrap_or("").to_string(), f["line"].as_u64().unwrap_or(0), f["cited_line"].as_u64())
        })
        .collect();
    assert_eq!(
        found,
        [("anchored".to_string(), 8, None), ("relocated".to_string(), 9, Some(6)), ("unanchored".to_string(), 8, None)]
    );
    assert_eq!(report["review"]["gated_totals"]["blocker"], 0);
    assert_eq!(report["review"]["totals"]["blocker"], 1, "every count is shown");
    let before = report["review"]["findings"][0]["fingerprint"].clone();

    // Five lines land above the code; the agent cites the new line and the same code.
    let moved = VULNERABLE.replacen("use std::io;", "// One.\n// Two.\n// Three.\n// Four.\n// Five.\nuse std::io;", 1);
    std::fs::write(repo.join("src/upload.rs"), moved).expect("write");
    git(&repo, &["commit", "-q", "-am", "document uploads"]);
    let (code, stderr, report) =
        review_with(&workdir, &repo, json!([finding("major", 13, "let target = root.join(name);")]), &[]).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(report["review"]["findings"][0]["anchor"], "anchored");
    assert_eq!(report["review"]["findings"][0]["fingerprint"], before, "the fingerprint names the code, not the line");
}

#[test]
fn in_ci_a_missing_key_fails_the_review_instead_of_falling_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = fixture_repo(dir.path());
    // A pull request from a fork: CI is set and the secrets are not.
    let out = Command::new(env!("CARGO_BIN_EXE_conclave"))
        .args(["review", &repo.display().to_string(), "--base", "main", "--fail-on", "blocker"])
        .current_dir(dir.path())
        .env("CI", "true")
        .env("CONCLAVE_TOOLS_DIR", conclave_testkit::no_tools())
        .env("CONCLAVE_DB", dir.path().join("runs.db"))
        .env("CONCLAVE_CONFIG_DIR", dir.path().join("config"))
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .output()
        .expect("conclave runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("error: not reviewed: security (anthropic: ANTHROPIC_API_KEY is not set)")
            && stderr.contains("CI is set, so Conclave does not fall back to the local model"),
        "{stderr}"
    );
    assert!(!stderr.contains("local model (smollm2"), "nothing ran on the local model: {stderr}");
}

#[tokio::test]
async fn a_one_level_disagreement_gates_with_fail_on_disagreement() {
    let (_dir, repo, workdir) = fixture_workspace();
    let a = Vendor::Anthropic;
    let rated = |lane: &str, severity: &str| {
        let item = json!([{"severity": severity, "file": "src/upload.rs", "line": 8, "description": TRAVERSAL, "raisedBy": lane}]);
        let counts = if severity == "major" { [0, 1, 0, 0] } else { [0, 0, 1, 0] };
        vec![a.answer("I read the diff; nothing more to look up."), a.answer(&findings(item, counts))]
    };
    let nothing = findings(json!([]), [0, 0, 0, 0]);
    let routes = vec![
        Route { marker: "You are the security reviewer".into(), replies: rated("security", "major") },
        Route { marker: "You are the correctness reviewer".into(), replies: rated("correctness", "minor") },
        Route {
            marker: "You are the conventions reviewer".into(),
            replies: vec![a.answer("Nothing to look up."), a.answer(&nothing)],
        },
        Route { marker: "You are the Writer".into(), replies: vec![a.answer(&nothing)] },
    ];
    let args = |gate: &str| {
        [repo.display().to_string(), "--base".into(), "main".into(), "--fail-on".into(), gate.into()].to_vec()
    };
    let server = FakeServer::start_routed(routes.clone()).await;
    let out = review(&workdir, &server, args("contradiction")).await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "one level apart is no contradiction: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let server = FakeServer::start_routed(routes).await;
    let out = review(&workdir, &server, args("disagreement")).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert!(stderr.contains("gate: 1 disagreement(s) between reviewers (--fail-on disagreement)"), "{stderr}");
}

#[tokio::test]
async fn support_counts_the_reviewers_behind_a_finding_and_min_support_gates_on_it() {
    let (_dir, repo, workdir) = fixture_workspace();
    let a = Vendor::Anthropic;
    let atomic = "The write is not atomic; a crash leaves a partial file.";
    let item = |lane: &str, severity: &str, line: u64, description: &str| json!({"severity": severity, "file": "src/upload.rs", "line": line, "description": description, "raisedBy": lane});
    let answer = |items: Value, counts: [u64; 4]| {
        vec![a.answer("I read the diff; nothing more to look up."), a.answer(&findings(items, counts))]
    };
    let routes = || {
        vec![
            Route {
                marker: "You are the security reviewer".into(),
                replies: answer(json!([item("security", "major", 8, TRAVERSAL)]), [0, 1, 0, 0]),
            },
            Route {
                marker: "You are the correctness reviewer".into(),
                replies: answer(
                    json!([item("correctness", "major", 8, TRAVERSAL), item("correctness", "blocker", 9, atomic)]),
                    [1, 1, 0, 0],
                ),
            },
            Route { marker: "You are the conventions reviewer".into(), replies: answer(json!([]), [0, 0, 0, 0]) },
            Route {
                marker: "You are the Writer".into(),
                replies: vec![a.answer(&findings(
                    json!([item("security", "major", 8, TRAVERSAL), item("correctness", "blocker", 9, atomic)]),
                    [1, 1, 0, 0],
                ))],
            },
        ]
    };
    let report = workdir.join("review.json");
    let args = |extra: &[&str]| {
        let mut args =
            vec![repo.display().to_string(), "--base".into(), "main".into(), "--format".into(), "json".into()];
        args.extend(["--output-file".to_string(), report.display().to_string(), "--fail-on".into(), "blocker".into()]);
        args.extend(extra.iter().map(|s| s.to_string()));
        args
    };
    let out = review(&workdir, &FakeServer::start_routed(routes()).await, args(&[])).await;
    assert_eq!(out.status.code(), Some(5), "{}", String::from_utf8_lossy(&out.stderr));
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&report).expect("report")).expect("json");
    let support: Vec<Option<u64>> =
        json["review"]["findings"].as_array().expect("findings").iter().map(|f| f["support"].as_u64()).collect();
    assert_eq!(support, [Some(2), Some(1)], "two reviewers raised the traversal, one the partial write");

    let out = review(&workdir, &FakeServer::start_routed(routes()).await, args(&["--min-support", "2"])).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "the blocker only one reviewer raised does not gate: {stderr}");
    assert!(stderr.contains("gate: 1 blocker(s) not counted"), "{stderr}");
}

#[tokio::test]
async fn a_reviewer_with_tools_is_told_its_quote_is_not_in_the_file_and_answers_again() {
    let (_dir, repo, workdir) = fixture_workspace();
    let a = Vendor::Anthropic;
    let finding = |evidence: &str| json!([{"severity": "major", "file": "src/upload.rs", "line": 8, "description": TRAVERSAL, "raisedBy": "security", "evidence": evidence}]);
    let looked = || a.answer("I read the diff; nothing more to look up.");
    let mut routes = writer_routes(finding("root.join(name)"));
    routes[0].replies = vec![
        looked(),
        a.answer(&findings(finding("let path = base.join(user_name);"), [0, 1, 0, 0])),
        looked(),
        a.answer(&findings(finding("root.join(name)"), [0, 1, 0, 0])),
    ];
    let server = FakeServer::start_routed(routes).await;
    let report = workdir.join("review.json");
    let mut args = vec![repo.display().to_string(), "--base".into(), "main".into(), "--format".into(), "json".into()];
    args.extend(["--output-file".to_string(), report.display().to_string()]);
    let out = review(&workdir, &server, args).await;
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let security: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.body.to_string())
        .filter(|body| body.contains("You are the security reviewer"))
        .collect();
    assert_eq!(security.len(), 4, "a tool phase and an answer, twice");
    let told = "/findings/0/evidence: the quote `let path = base.join(user_name);` is not in src/upload.rs at line 8";
    assert!(security[2].contains(told), "the retry says which quote and where: {}", security[2]);
    assert!(security[2].contains("Use your tools to read the code"), "{}", security[2]);
    let out = conclave(&workdir, &server, &["runs", "show", &last_run(&workdir, &server), "--json"]);
    let shown: Value = serde_json::from_slice(&out.stdout).expect("json");
    let failed: Vec<String> = shown["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(Value::to_string)
        .filter(|e| e.contains("attempt_failed"))
        .collect();
    assert_eq!(failed.len(), 1, "the rejected attempt is recorded: {}", shown["events"]);
    assert!(failed[0].contains("is not in src/upload.rs"), "{}", failed[0]);
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&report).expect("report")).expect("json");
    assert_eq!(json["review"]["findings"][0]["anchor"], "anchored", "the corrected quote is found");
}

#[tokio::test]
async fn reviewers_who_quote_the_same_code_lines_apart_meet_at_it() {
    let (_dir, repo, workdir) = fixture_workspace();
    let a = Vendor::Anthropic;
    let answer = |items: Value, counts: [u64; 4]| {
        vec![a.answer("I read the diff; nothing more to look up."), a.answer(&findings(items, counts))]
    };
    let concern = json!([{"severity": "blocker", "file": "src/upload.rs", "line": 8, "description": TRAVERSAL, "raisedBy": "security", "evidence": "root.join(name)"}]);
    // Cited two lines off, but quoting the same code: an approval of it.
    let approval = json!([{"severity": "nit", "file": "src/upload.rs", "line": 10, "description": "Joining the name onto the root is idiomatic and fine.", "raisedBy": "conventions", "stance": "approval", "evidence": "let target = root.join(name);"}]);
    let mut routes = writer_routes(concern.clone());
    routes[0].replies = answer(concern, [1, 0, 0, 0]);
    routes[2].replies = answer(approval, [0, 0, 0, 1]);
    let server = FakeServer::start_routed(routes).await;
    let report = workdir.join("review.json");
    let mut args = vec![repo.display().to_string(), "--base".into(), "main".into(), "--format".into(), "json".into()];
    args.extend([
        "--output-file".to_string(),
        report.display().to_string(),
        "--fail-on".into(),
        "contradiction".into(),
    ]);
    let out = review(&workdir, &server, args).await;
    assert_eq!(out.status.code(), Some(5), "the contradiction gates: {}", String::from_utf8_lossy(&out.stderr));
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&report).expect("report")).expect("json");
    let contradiction = &json["review"]["findings_checks"][0]["check"]["contradictions"][0];
    assert_eq!(contradiction["line"], 8, "both sides at the quoted line: {contradiction}");
    let sides: Vec<(&str, u64)> = contradiction["findings"]
        .as_array()
        .expect("sides")
        .iter()
        .map(|f| {
            (f["agent"].as_str().unwrap_or(""), f["cited_line"].as_u64().unwrap_or(f["line"].as_u64().unwrap_or(0)))
        })
        .collect();
    assert_eq!(sides, [("security", 8), ("conventions", 10)], "the approval was cited at line 10");
    let writer_input = server.requests().iter().map(|r| r.body.to_string()).find(|b| b.contains("You are the Writer"));
    assert!(writer_input.is_some_and(|b| b.contains("contradictions")), "the Writer is told of the contradiction");
}

/// `markdown` with the layers of each row of "Commands and their sandbox" written
/// `<layers>`, and without what that section says is not enforced: both depend on
/// the machine (its kernel, root or not), so report snapshots show the section
/// without them.
fn without_layers(markdown: &str) -> String {
    let (mut in_section, mut after_gap) = (false, false);
    let mut kept: Vec<String> = Vec::new();
    for line in markdown.lines() {
        if line.starts_with("## ") {
            in_section = line == "## Commands and their sandbox";
        }
        let gap = in_section && line.starts_with("> Not enforced here: ");
        let skip = gap || (after_gap && line.is_empty());
        after_gap = gap;
        if skip {
            continue;
        }
        kept.push(match line.rsplitn(2, " | ").collect::<Vec<_>>().as_slice() {
            [_, row] if in_section && line.starts_with("| `") => format!("{row} | <layers> |"),
            _ => line.to_string(),
        });
    }
    kept.join("\n") + if markdown.ends_with('\n') { "\n" } else { "" }
}
