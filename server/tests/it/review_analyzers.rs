//! Analyzer lanes in `conclave review`: a change that adds a shell script with an
//! unquoted expansion (ShellCheck's SC2086) and a line with trailing whitespace
//! (`git diff --check`). Through Anthropic faked over loopback: the analyzers' findings
//! reach the Writer, an agent raising the same issue as ShellCheck gives the finding
//! support 2, an agent approving the line `git diff --check` flags is a
//! contradiction, and the finding the Writer dropped is added back with its analyzer
//! as `raisedBy`. Offline, with the real embedded model: both are reported, anchored.
//! And `conclave analyzers`, `--analyzers none` and `--analyzers shellcheck`.

use conclave_testkit::git;
use conclave_testkit::wire::Vendor;
use conclave_testkit::{FakeServer, Route};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::review_e2e::{conclave, findings, review};

/// Line 4 expands `$dir` unquoted; line 8 ends in spaces.
const SCRIPT: &str = "#!/bin/sh\n# Deploys the build.\ndir=$1\nrm -rf $dir/build\nmkdir -p \"$dir/build\"\ncp -r dist \"$dir/build\"\necho \"deployed\"\necho \"done\"   \n";

/// What the security reviewer says about line 4, in words close to ShellCheck's.
const UNQUOTED: &str =
    "Double quote $dir to prevent globbing and word splitting: a path with spaces deletes the wrong tree.";

/// A repository whose `feature` branch adds `deploy.sh` on top of `main`.
fn fixture(dir: &Path) -> PathBuf {
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).expect("mkdir");
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("README.md"), "# Deploy\n").expect("write");
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "readme"]);
    git(&repo, &["checkout", "-q", "-b", "feature"]);
    std::fs::write(repo.join("deploy.sh"), SCRIPT).expect("write");
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "deploy script"]);
    repo
}

fn workspace() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = fixture(dir.path());
    let workdir = dir.path().join("work");
    std::fs::create_dir_all(&workdir).expect("mkdir");
    (dir, repo, workdir)
}

fn shellcheck_installed() {
    let found = Command::new("shellcheck").arg("--version").output().is_ok_and(|o| o.status.success());
    assert!(found, "shellcheck is not installed: run scripts/setup.sh (it installs the Debian package)");
}

fn item(lane: &str, severity: &str, line: u64, description: &str, stance: &str) -> Value {
    json!({"severity": severity, "file": "deploy.sh", "line": line, "description": description, "raisedBy": lane, "stance": stance})
}

/// Security raises the unquoted expansion, conventions approves the line with
/// trailing whitespace, and the Writer keeps the expansion but drops the whitespace.
fn routes() -> Vec<Route> {
    let a = Vendor::Anthropic;
    let answer = |items: Value, counts: [u64; 4]| {
        vec![a.answer("I read the diff; nothing more to look up."), a.answer(&findings(items, counts))]
    };
    let approval = "The final echo reads cleanly and is fine as it is.";
    vec![
        Route {
            marker: "You are the security reviewer".into(),
            replies: answer(json!([item("security", "major", 4, UNQUOTED, "concern")]), [0, 1, 0, 0]),
        },
        Route { marker: "You are the correctness reviewer".into(), replies: answer(json!([]), [0, 0, 0, 0]) },
        Route {
            marker: "You are the conventions reviewer".into(),
            replies: answer(json!([item("conventions", "nit", 8, approval, "approval")]), [0, 0, 0, 1]),
        },
        Route {
            marker: "You are the Writer".into(),
            replies: vec![a.answer(&findings(
                json!([item("security, shellcheck", "major", 4, UNQUOTED, "concern")]),
                [0, 1, 0, 0],
            ))],
        },
    ]
}

fn json_report(workdir: &Path, out: &Output) -> Value {
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_str(&std::fs::read_to_string(workdir.join("review.json")).expect("report")).expect("json")
}

fn args(repo: &Path, workdir: &Path, extra: &[&str]) -> Vec<String> {
    let mut args = vec![repo.display().to_string(), "--base".into(), "main".into(), "--format".into(), "json".into()];
    args.extend(["--output-file".to_string(), workdir.join("review.json").display().to_string()]);
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

fn at(findings: &Value, line: u64) -> Vec<&Value> {
    findings.as_array().into_iter().flatten().filter(|f| f["line"] == line).collect()
}

#[tokio::test]
async fn analyzer_findings_reach_the_writer_count_in_support_contradict_approvals_and_are_not_lost() {
    shellcheck_installed();
    let (_dir, repo, workdir) = workspace();
    let server = FakeServer::start_routed(routes()).await;
    let report = json_report(&workdir, &review(&workdir, &server, args(&repo, &workdir, &[])).await);
    let findings = &report["review"]["findings"];

    let unquoted = at(findings, 4);
    assert_eq!(unquoted.len(), 1, "the Writer's finding stands for ShellCheck's: {findings:#}");
    assert_eq!(unquoted[0]["support"], 2, "security and shellcheck raised it: {findings:#}");
    let whitespace = at(findings, 8);
    assert_eq!(whitespace.len(), 1, "the finding the Writer dropped is added back: {findings:#}");
    assert_eq!(whitespace[0]["raised_by"], "git-diff-check");
    assert_eq!(whitespace[0]["description"], "trailing whitespace.");
    assert_eq!(whitespace[0]["anchor"], "anchored", "the analyzer's line is its quote: {:#}", whitespace[0]);
    assert!(whitespace[0]["fingerprint"].is_string());

    let checks = report["review"]["findings_checks"].as_array().expect("checks");
    let contradictions: Vec<&Value> =
        checks.iter().flat_map(|c| c["check"]["contradictions"].as_array()).flatten().collect();
    let flagged = contradictions.iter().find(|g| g["line"] == 8).expect("a contradiction at line 8");
    let raisers: Vec<&str> =
        flagged["findings"].as_array().into_iter().flatten().filter_map(|f| f["agent"].as_str()).collect();
    assert!(raisers.contains(&"conventions") && raisers.contains(&"git-diff-check"), "{flagged:#}");

    let lanes = &report["review"]["analyzers"];
    let lane = |name: &str| lanes.as_array().into_iter().flatten().find(|l| l["name"] == name).cloned();
    assert_eq!(lane("shellcheck").map(|l| (l["file_count"].clone(), l["raised"].clone())), Some((json!(1), json!(1))));
    assert_eq!(lane("git-diff-check").map(|l| l["added"].clone()), Some(json!(1)));
    assert_eq!(lane("clippy").map(|l| l["off"].clone()), Some(json!("off_by_default")));
    assert_eq!(lane("ruff").map(|l| l["off"].clone()), Some(json!("no_matching_files")));

    let requests = server.requests();
    let writer = requests.iter().find(|r| r.body.to_string().contains("You are the Writer")).expect("the Writer ran");
    let body = writer.body.to_string();
    assert!(
        body.contains("[SC2086] Double quote to prevent globbing"),
        "ShellCheck's finding is upstream of the Writer"
    );
    assert!(body.contains("trailing whitespace."), "and so is git diff --check's");
}

#[tokio::test]
async fn analyzers_none_runs_no_lane_and_a_named_lane_runs_alone() {
    shellcheck_installed();
    let (_dir, repo, workdir) = workspace();
    let lanes_that_ran = |report: &Value| -> Vec<String> {
        let lanes = report["review"]["analyzers"].as_array().cloned().unwrap_or_default();
        lanes.iter().filter(|l| l.get("off").is_none()).filter_map(|l| l["name"].as_str().map(str::to_string)).collect()
    };
    let server = FakeServer::start_routed(routes()).await;
    let none = json_report(&workdir, &review(&workdir, &server, args(&repo, &workdir, &["--analyzers", "none"])).await);
    assert_eq!(lanes_that_ran(&none), Vec::<String>::new());
    let raised: Vec<&Value> = none["review"]["findings"].as_array().into_iter().flatten().collect();
    assert!(raised.iter().all(|f| f["raised_by"] != "git-diff-check"), "no analyzer ran: {raised:#?}");
    let writer = server.requests().into_iter().find(|r| r.body.to_string().contains("You are the Writer"));
    assert!(!writer.expect("the Writer ran").body.to_string().contains("[SC2086]"));

    let server = FakeServer::start_routed(routes()).await;
    let only = args(&repo, &workdir, &["--analyzers", "shellcheck"]);
    let shellcheck = json_report(&workdir, &review(&workdir, &server, only).await);
    assert_eq!(lanes_that_ran(&shellcheck), ["shellcheck"]);
    assert!(at(&shellcheck["review"]["findings"], 8).is_empty(), "git diff --check did not run");

    let out = review(&workdir, &server, args(&repo, &workdir, &["--analyzers", "shelcheck"])).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("error: no analyzer `shelcheck` in conclave `light-code-review`; its analyzers: git-diff-check, shellcheck, ruff, semgrep, clippy, invisible-text (--analyzers)"),
        "{stderr}"
    );
}

#[tokio::test]
async fn conclave_analyzers_lists_each_lane_and_why_it_is_off() {
    shellcheck_installed();
    let (_dir, repo, workdir) = workspace();
    let server = FakeServer::start_routed(Vec::new()).await;
    let repo_arg = repo.display().to_string();
    let out = conclave(&workdir, &server, &["analyzers", &repo_arg, "--base", "main"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let line = |name: &str| stdout.lines().find(|l| l.trim_start().starts_with(name)).unwrap_or_default().to_string();
    assert!(stdout.starts_with("analyzer lanes of light-code-review:\n"), "{stdout}");
    assert!(line("git-diff-check").ends_with("`git`, installed; runs on 1 changed file(s): deploy.sh"), "{stdout}");
    assert!(line("shellcheck").ends_with("`shellcheck`, installed; runs on 1 changed file(s): deploy.sh"), "{stdout}");
    assert!(line("ruff").ends_with("off: the change touches no file it reads"), "{stdout}");
    assert!(line("invisible-text").ends_with("installed; runs on 1 changed file(s): deploy.sh"), "{stdout}");
    assert!(
        line("clippy")
            .ends_with("off: off by default: name it in the selection of analyzers to run it (--analyzers clippy)"),
        "{stdout}"
    );

    let selected = conclave(&workdir, &server, &["analyzers", &repo_arg, "--base", "main", "--analyzers", "none"]);
    let stdout = String::from_utf8_lossy(&selected.stdout);
    assert_eq!(stdout.matches("off: not in the selection of analyzers").count(), 6, "{stdout}");

    // A tool that is nowhere is said to be missing, with where it was looked for: a
    // PATH with git alone.
    let which = Command::new("sh").args(["-c", "command -v git"]).output().expect("sh runs");
    let git_bin = PathBuf::from(String::from_utf8_lossy(&which.stdout).trim());
    let only_git = workdir.join("only-git");
    std::fs::create_dir_all(&only_git).expect("mkdir");
    std::os::unix::fs::symlink(&git_bin, only_git.join("git")).expect("link git");
    let mut bare = Command::new(env!("CARGO_BIN_EXE_conclave"));
    bare.args(["analyzers", &repo_arg, "--base", "main", "--analyzers", "shellcheck"])
        .current_dir(&workdir)
        .env("PATH", &only_git)
        .env("CONCLAVE_TOOLS_DIR", workdir.join("tools"));
    let out = bare.output().expect("conclave runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let expected =
        format!("off: `shellcheck` is not installed (neither on PATH nor in {})", workdir.join("tools").display());
    assert!(stdout.contains(&expected), "{stdout}");
}

/// The real offline path: no keys, every agent on the embedded model (one thread),
/// as `bash scripts/main.sh` reviews. Whatever the small model makes of the change,
/// the analyzers' findings are in the report with their analyzer and their line.
#[test]
fn an_offline_review_reports_the_analyzers_findings_anchored() {
    shellcheck_installed();
    let _serial = crate::MODEL_CORES.blocking_lock();
    let (_dir, repo, workdir) = workspace();
    let report = workdir.join("review.json");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_conclave"));
    cmd.args(["review", &repo.display().to_string(), "--base", "main", "--format", "json"])
        .args(["--output-file", &report.display().to_string()])
        .current_dir(&workdir)
        .env("CONCLAVE_DB", workdir.join("runs.db"))
        .env("CONCLAVE_CONFIG_DIR", workdir.join("config"))
        .env("CONCLAVE_LOCAL_THREADS", "1");
    for key in ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "OLLAMA_HOST", "CI"] {
        cmd.env_remove(key);
    }
    let out = cmd.output().expect("conclave runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap_or_default())
        .unwrap_or_else(|e| panic!("no JSON report ({e}): {stderr}"));
    let findings = json["review"]["findings"].as_array().cloned().unwrap_or_default();
    let by = |lane: &str, line: u64| {
        findings.iter().find(|f| f["raised_by"] == lane && f["line"] == line && f["anchor"] == "anchored").cloned()
    };
    let sc2086 = by("shellcheck", 4).unwrap_or_else(|| panic!("SC2086 at deploy.sh:4: {findings:#?}\n{stderr}"));
    assert!(sc2086["description"].as_str().unwrap_or_default().starts_with("[SC2086]"), "{sc2086:#}");
    assert_eq!(sc2086["file"], "deploy.sh");
    let whitespace = by("git-diff-check", 8).unwrap_or_else(|| panic!("whitespace at deploy.sh:8: {findings:#?}"));
    assert_eq!(whitespace["description"], "trailing whitespace.");
}
