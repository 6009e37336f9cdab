//! The Python and Semgrep lanes through the real binary, with Ruff and Semgrep found
//! where the product finds them (`PATH`, else Conclave's tool directory, where
//! `scripts/setup.sh` installs them): a change whose only problem is an unused
//! import passes `--fail-on blocker` under the default conclave (a lint is no
//! blocker), and fails it only under a conclave whose map says so; and the semgrep
//! lane, run with no network at all, finds an SQL query built from a string with
//! Conclave's own rules.

use conclave_review::analyzers::locate_program;
use conclave_review::pipeline::BUILTIN_REVIEW;
use conclave_testkit::{FakeServer, git};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::review_e2e::writer_routes;

/// Fails with what to run when `program` is neither on `PATH` nor in the tool
/// directory.
fn installed(program: &str) {
    assert!(
        locate_program(program).is_some(),
        "`{program}` is not installed (neither on PATH nor in Conclave's tool directory): run \
         scripts/fetch-analyzers.sh, which scripts/setup.sh runs"
    );
}

/// A repository whose `feature` branch adds `file` with `text` on top of `main`.
fn repository(dir: &Path, file: &str, text: &str) -> PathBuf {
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).expect("mkdir");
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("README.md"), "# Service\n").expect("write");
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "readme"]);
    git(&repo, &["checkout", "-q", "-b", "feature"]);
    std::fs::write(repo.join(file), text).expect("write");
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "change"]);
    repo
}

fn workdir(dir: &Path) -> PathBuf {
    let workdir = dir.join("work");
    std::fs::create_dir_all(&workdir).expect("mkdir");
    workdir
}

/// Reviews `repo` against `main` as a user would, the specialists and the Writer
/// (faked) finding nothing, and the tools found where the product finds them (unlike
/// the other review tests, no empty tool directory); the exit code, standard error
/// and the JSON report.
async fn review(workdir: &Path, repo: &Path, extra: &[&str]) -> (Option<i32>, String, Value) {
    let server = FakeServer::start_routed(writer_routes(json!([]))).await;
    let report = workdir.join("review.json");
    let mut args = vec![repo.display().to_string(), "--base".into(), "main".into(), "--format".into(), "json".into()];
    args.extend(["--output-file".to_string(), report.display().to_string()]);
    args.extend(extra.iter().map(|a| a.to_string()));
    let (workdir_owned, base) = (workdir.to_path_buf(), server.base.clone());
    let out = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_conclave"))
            .arg("review")
            .args(&args)
            .current_dir(&workdir_owned)
            .env("CONCLAVE_DB", workdir_owned.join("runs.db"))
            .env("CONCLAVE_CONFIG_DIR", workdir_owned.join("config"))
            .env("ANTHROPIC_BASE_URL", base)
            .env("ANTHROPIC_API_KEY", "sk-ant-test")
            .output()
            .expect("conclave runs")
    })
    .await
    .expect("joined");
    let json = serde_json::from_str(&std::fs::read_to_string(&report).unwrap_or_default()).unwrap_or(Value::Null);
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned(), json)
}

fn raised_by<'a>(report: &'a Value, lane: &str) -> Vec<&'a Value> {
    report["review"]["findings"].as_array().into_iter().flatten().filter(|f| f["raised_by"] == lane).collect()
}

/// Line 1 imports a module nothing uses; the rest is clean.
const UNUSED_IMPORT: &str = "import json\n\n\ndef double(value):\n    return value * 2\n";

#[tokio::test]
async fn an_unused_import_is_no_blocker_unless_the_conclave_says_so() {
    installed("ruff");
    let dir = tempfile::tempdir().expect("tempdir");
    let (repo, workdir) = (repository(dir.path(), "util.py", UNUSED_IMPORT), workdir(dir.path()));
    let (code, stderr, report) = review(&workdir, &repo, &["--fail-on", "blocker"]).await;
    assert_eq!(code, Some(0), "an unused import trips no blocker gate: {stderr}");
    let ruff = raised_by(&report, "ruff");
    let unused = ruff.iter().find(|f| f["description"].as_str().is_some_and(|d| d.starts_with("[F401]")));
    let unused = unused.unwrap_or_else(|| panic!("ruff's F401 is in the report: {:#}", report["review"]));
    assert_eq!(
        (&unused["file"], &unused["line"], &unused["severity"]),
        (&json!("util.py"), &json!(1), &json!("major"))
    );
    assert!(ruff.iter().all(|f| f["severity"] != "blocker"), "no lint is a blocker: {ruff:#?}");

    // A conclave that grades F401 a blocker gets the gate it asked for.
    let mut strict: Value = serde_json::from_str(BUILTIN_REVIEW).expect("the built-in conclave");
    let nodes = strict["nodes"].as_array_mut().expect("nodes");
    let lane = nodes.iter_mut().find(|n| n["id"] == "ruff").expect("a ruff lane");
    lane["command"]["analyzer"]["severity"]["rules"]["F401"] = json!("blocker");
    let catalog = workdir.join("strict");
    std::fs::create_dir_all(&catalog).expect("mkdir");
    let path = catalog.join("light-code-review.conclave.json");
    std::fs::write(&path, serde_json::to_string_pretty(&strict).expect("json")).expect("write");
    let conclave = path.display().to_string();
    let (code, stderr, _) = review(&workdir, &repo, &["--fail-on", "blocker", "--conclave", &conclave]).await;
    assert_eq!(code, Some(5), "the conclave made F401 a blocker: {stderr}");
}

/// Line 6 builds the query from `name` with an f-string.
const SQL_INJECTION: &str = "import sqlite3\n\n\ndef find_user(name):\n    db = sqlite3.connect(\"users.db\")\n    \
     rows = db.execute(f\"SELECT * FROM users WHERE name = '{name}'\").fetchall()\n    db.close()\n    return rows\n";

/// How to run a command with no network at all: in a network namespace of its own
/// (`unshare -n` as root, else `-rn` in a user namespace), where the host can offer
/// one; `None` where it cannot (the lane's own sandbox still denies the network).
fn without_network() -> Option<Vec<&'static str>> {
    [vec!["unshare", "-n"], vec!["unshare", "-rn"]].into_iter().find(|wrapper| {
        Command::new(wrapper[0]).args(&wrapper[1..]).arg("true").output().is_ok_and(|o| o.status.success())
    })
}

#[test]
fn the_semgrep_lane_finds_a_planted_sql_injection_with_no_network() {
    installed("semgrep");
    let dir = tempfile::tempdir().expect("tempdir");
    let (repo, workdir) = (repository(dir.path(), "users.py", SQL_INJECTION), workdir(dir.path()));
    let analyzers_only =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../evals/injected-bugs/conclaves/analyzers-only.conclave.json");
    let report = workdir.join("review.json");
    let wrapper = without_network();
    let mut argv: Vec<String> = wrapper.iter().flatten().map(|s| s.to_string()).collect();
    argv.push(env!("CARGO_BIN_EXE_conclave").to_string());
    argv.extend(["review", &repo.display().to_string(), "--base", "main", "--analyzers", "semgrep"].map(String::from));
    argv.extend(["--conclave".to_string(), analyzers_only.display().to_string(), "--format".into(), "json".into()]);
    argv.extend(["--output-file".to_string(), report.display().to_string(), "--fail-on".into(), "blocker".into()]);
    let out = Command::new(&argv[0])
        .args(&argv[1..])
        .current_dir(&workdir)
        .env("CONCLAVE_DB", workdir.join("runs.db"))
        .env("CONCLAVE_CONFIG_DIR", workdir.join("config"))
        .output()
        .expect("conclave runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap_or_default())
        .unwrap_or_else(|e| panic!("no JSON report ({e}; wrapper {wrapper:?}): {stderr}"));
    let lanes = json["review"]["analyzers"].as_array().cloned().unwrap_or_default();
    let semgrep = lanes.iter().find(|l| l["name"] == "semgrep").cloned().unwrap_or_default();
    assert!(semgrep.get("off").is_none() && semgrep.get("failed").is_none(), "the lane ran: {semgrep:#}\n{stderr}");
    let found = raised_by(&json, "semgrep");
    let injection = found
        .iter()
        .find(|f| f["description"].as_str().is_some_and(|d| d.starts_with("[python.sql-built-from-strings]")))
        .unwrap_or_else(|| panic!("the SQL injection at users.py:6: {found:#?}\n{stderr}"));
    assert_eq!((&injection["file"], &injection["line"]), (&json!("users.py"), &json!(6)));
    assert_eq!(injection["severity"], "blocker", "Semgrep's ERROR is a blocker in the built-in map");
    assert_eq!(out.status.code(), Some(5), "so the blocker gate trips: {stderr}");
    let sandboxes = json["review"]["sandboxes"].as_array().cloned().unwrap_or_default();
    let record = sandboxes.iter().find(|c| c["node_id"] == "semgrep").map(|c| c["sandbox"].clone());
    let record = record.unwrap_or_else(|| panic!("the lane's sandbox is reported: {sandboxes:#?}"));
    assert_eq!(record["confined"], true, "{record:#}");
    assert!(record.get("network").is_none(), "the lane did not open the network: {record:#}");
    let layers: Vec<&str> = record["layers"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    assert!(layers.contains(&"landlock_tcp") || layers.contains(&"seccomp_sockets"), "{layers:?}");
}
