//! Repository rules, end to end: `conclave review` of a fixture repository with a
//! `.conclave/rules/sql.md` for `db/**` and an `AGENTS.md` symlink out of the
//! repository, Anthropic faked over loopback; what reached the reviewers is read
//! from the fake's request log, what was applied from the reports. And a review
//! through the HTTP API: the repository's rules, no path the request names.

use conclave_testkit::wire::Vendor;
use conclave_testkit::{FakeServer, Route, git};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::review_e2e::{findings, review};

/// In `.conclave/rules/sql.md`, for `db/**`.
const SQL_RULE: &str = "SQL-RULE: every query takes bind parameters, never formatted strings.";
/// In the file outside the repository that `AGENTS.md` points to.
const OUTSIDE: &str = "OUTSIDE-SECRET: text from outside the repository.";
/// In the file given with `--rules`.
const TEAM_RULE: &str = "TEAM-RULE: errors say what to do next.";
/// The reviewers of the default review conclave.
const REVIEWERS: [&str; 3] = ["security", "correctness", "conventions"];

/// A repository with the SQL rule on `main`, and two branches: `db` changes
/// `db/schema.sql`, `src` changes `src/app.rs`. With `symlink`, `AGENTS.md` points
/// to a file outside the repository.
fn fixture(dir: &Path, symlink: bool) -> PathBuf {
    let repo = dir.join("repo");
    std::fs::create_dir_all(repo.join("db")).expect("mkdir");
    std::fs::create_dir_all(repo.join("src")).expect("mkdir");
    std::fs::create_dir_all(repo.join(".conclave/rules")).expect("mkdir");
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("db/schema.sql"), "create table users (id integer primary key);\n").expect("write");
    std::fs::write(repo.join("src/app.rs"), "pub fn app() {}\n").expect("write");
    std::fs::write(repo.join(".conclave/rules/sql.md"), format!("---\npaths: [\"db/**\"]\n---\n# SQL\n\n{SQL_RULE}\n"))
        .expect("write");
    if symlink {
        let outside = dir.join("outside.md");
        std::fs::write(&outside, format!("{OUTSIDE}\n")).expect("write");
        std::os::unix::fs::symlink(&outside, repo.join("AGENTS.md")).expect("symlink");
    }
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "schema and app"]);
    for (branch, file, text) in [
        ("db", "db/schema.sql", "create table users (id integer primary key, name text);\n"),
        ("src", "src/app.rs", "pub fn app() {\n    println!(\"app\");\n}\n"),
    ] {
        git(&repo, &["checkout", "-q", "-b", branch, "main"]);
        std::fs::write(repo.join(file), text).expect("write");
        git(&repo, &["commit", "-q", "-am", &format!("change {file}")]);
    }
    git(&repo, &["checkout", "-q", "main"]);
    repo
}

/// Every reviewer reads, then answers no findings; the Writer answers none.
fn routes() -> Vec<Route> {
    let a = Vendor::Anthropic;
    let none = || a.answer(&findings(json!([]), [0, 0, 0, 0]));
    let mut routes: Vec<Route> = REVIEWERS
        .iter()
        .map(|lane| Route {
            marker: format!("You are the {lane} reviewer"),
            replies: vec![a.answer("I read the diff; nothing more to look up."), none()],
        })
        .collect();
    routes.push(Route { marker: "You are the Writer".into(), replies: vec![none()] });
    routes
}

/// Reviews `branch` against `main` with `extra` arguments (the report in JSON unless
/// they say otherwise) through a fresh fake; the fake's request bodies, and the review.
async fn reviewed(repo: &Path, workdir: &Path, branch: &str, extra: &[&str]) -> (Vec<String>, Output) {
    git(repo, &["checkout", "-q", branch]);
    let server = FakeServer::start_routed(routes()).await;
    let mut args = vec![repo.display().to_string(), "--base".into(), "main".into()];
    if !extra.contains(&"--format") {
        args.extend(["--format".into(), "json".into()]);
    }
    args.extend(extra.iter().map(|a| a.to_string()));
    let out = review(workdir, &server, args).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    (server.requests().into_iter().map(|r| r.body.to_string()).collect(), out)
}

/// The bodies of the reviewers' requests (not the Writer's), at least one each.
fn reviewer_requests(bodies: &[String]) -> Vec<&String> {
    let reviewers: Vec<&String> =
        bodies.iter().filter(|b| REVIEWERS.iter().any(|l| b.contains(&format!("You are the {l} reviewer")))).collect();
    for lane in REVIEWERS {
        assert!(reviewers.iter().any(|b| b.contains(&format!("You are the {lane} reviewer"))), "{lane} was called");
    }
    reviewers
}

fn envelope(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).expect("the JSON report")
}

fn workspace(symlink: bool) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = fixture(dir.path(), symlink);
    let workdir = dir.path().join("work");
    std::fs::create_dir_all(&workdir).expect("mkdir");
    (dir, repo, workdir)
}

#[tokio::test]
async fn a_rules_file_for_db_reaches_the_reviewers_for_a_change_under_db_and_not_for_one_elsewhere() {
    let (_dir, repo, workdir) = workspace(false);
    let (bodies, out) = reviewed(&repo, &workdir, "db", &[]).await;
    for body in reviewer_requests(&bodies) {
        assert!(body.contains(SQL_RULE), "every reviewer request carries the SQL rule: {body}");
        assert!(body.contains("# From `.conclave/rules/sql.md` (for the changes matching `db/**`)"), "{body}");
    }
    let report = envelope(&out);
    assert_eq!(
        report["review"]["rules"],
        json!({"applied": [{"path": ".conclave/rules/sql.md", "bytes": 32 + SQL_RULE.len() + 1, "truncated": false, "globs": ["db/**"]}]}),
        "the report lists the applied file"
    );

    let (bodies, out) = reviewed(&repo, &workdir, "src", &[]).await;
    for body in reviewer_requests(&bodies) {
        assert!(!body.contains("SQL-RULE"), "a change outside db/ gets no SQL rule: {body}");
        assert!(!body.contains("`rules`"), "nor a rules block at all: {body}");
    }
    assert!(bodies.iter().all(|b| !b.contains("SQL-RULE")), "no request carries it");
    assert_eq!(envelope(&out)["review"].get("rules"), None, "a review without rules lists none");
}

#[tokio::test]
async fn an_agents_md_symlink_out_of_the_repository_is_refused_with_a_note_and_its_text_is_sent_nowhere() {
    let (_dir, repo, workdir) = workspace(true);
    let md = workdir.join("review.md");
    let (bodies, out) =
        reviewed(&repo, &workdir, "db", &["--format", "markdown", "--output-file", &md.display().to_string()]).await;
    assert!(bodies.iter().all(|b| !b.contains("OUTSIDE-SECRET")), "the symlink's target reached no request");
    for body in reviewer_requests(&bodies) {
        assert!(body.contains(SQL_RULE), "the review went on with the other rules: {body}");
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let markdown = std::fs::read_to_string(&md).expect("the report was written");
    assert!(markdown.contains("## Repository rules"), "{markdown}");
    assert!(markdown.contains("- `.conclave/rules/sql.md` ("), "{markdown}");
    assert!(
        markdown.contains(
            "- `AGENTS.md`: `AGENTS.md` is a symlink leading outside the repository; rules files are read only as \
             regular files of the repository, never through a symlink"
        ),
        "the note says which file and why: {markdown}\n{stderr}"
    );
    assert!(!markdown.contains("OUTSIDE-SECRET"), "{markdown}");
}

#[tokio::test]
async fn rules_false_sends_none_and_dash_dash_rules_adds_a_file_the_report_lists() {
    let (dir, repo, workdir) = workspace(false);
    let builtin: Value = serde_json::from_str(conclave_review::pipeline::BUILTIN_REVIEW).expect("the built-in review");
    let mut off = builtin.clone();
    off["settings"]["rules"] = json!(false);
    let conclave = dir.path().join("no-rules.conclave.json");
    std::fs::write(&conclave, serde_json::to_string_pretty(&off).expect("json")).expect("write");
    let conclave = conclave.display().to_string();

    let (bodies, out) = reviewed(&repo, &workdir, "db", &["--conclave", &conclave]).await;
    for body in reviewer_requests(&bodies) {
        assert!(!body.contains("SQL-RULE") && !body.contains("`rules`"), "rules: false sends none: {body}");
    }
    assert_eq!(envelope(&out)["review"].get("rules"), None);

    let team = dir.path().join("team.md");
    std::fs::write(&team, format!("# Team\n\n{TEAM_RULE}\n")).expect("write");
    let team_path = team.display().to_string();
    let (bodies, out) = reviewed(&repo, &workdir, "db", &["--conclave", &conclave, "--rules", &team_path]).await;
    for body in reviewer_requests(&bodies) {
        assert!(body.contains(TEAM_RULE), "--rules adds its file: {body}");
        assert!(!body.contains("SQL-RULE"), "the repository's rules stay off: {body}");
    }
    let applied = &envelope(&out)["review"]["rules"]["applied"];
    assert_eq!(
        applied,
        &json!([{"path": team_path, "bytes": 8 + TEAM_RULE.len() + 1, "truncated": false, "given": true}])
    );

    let missing = dir.path().join("missing.md").display().to_string();
    let server = FakeServer::start_routed(routes()).await;
    let args = [repo.display().to_string(), "--base".into(), "main".into(), "--rules".into(), missing.clone()];
    let out = review(&workdir, &server, args.to_vec()).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&format!("error: cannot read the rules file {missing}: ")), "{stderr}");
    assert!(stderr.trim_end().ends_with("give a readable Markdown file (--rules)"), "{stderr}");
    assert!(server.requests().is_empty(), "nothing was sent");
}

#[tokio::test]
async fn a_review_through_the_api_reads_the_repositorys_rules_and_no_path_the_request_names() {
    let api = crate::api::api_with(None);
    let repo = api.dir.path().join("repo");
    std::fs::create_dir_all(&repo).expect("mkdir");
    git(&repo, &["init", "-q"]);
    std::fs::write(repo.join("a.rs"), "fn a() {}\n").expect("write");
    let api_rule = "API-RULE: name what each function returns.\n";
    std::fs::write(repo.join("REVIEW.md"), api_rule).expect("write");
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "a"]);
    std::fs::write(repo.join("a.rs"), "fn a() { b() }\n").expect("write");
    let outside = api.dir.path().join("outside.md");
    std::fs::write(&outside, format!("{OUTSIDE}\n")).expect("write");
    let answer = r#"json={"findings":[],"counts":{"blocker":0,"major":0,"minor":0,"nit":0}}"#;
    let mut review = crate::api::conclave("mini-review", answer);
    review["nodes"][1]["agent"]["output_schema_ref"] = json!("review.findings.v1");
    assert_eq!(api.send("POST", "/api/conclaves", review).await.0, axum::http::StatusCode::CREATED);
    let body = json!({"conclave_id": "mini-review", "review": {"repository": repo.display().to_string(), "rules": [outside.display().to_string()]}});
    let (status, started, _) = api.send("POST", "/api/runs", body).await;
    assert_eq!(status, axum::http::StatusCode::ACCEPTED, "{started}");
    let id = started["run_id"].as_str().expect("id");
    let (status, run, text) = api.get(&format!("/api/runs/{id}")).await;
    assert_eq!(status, axum::http::StatusCode::OK, "{text}");
    let rules = run["input"]["rules"].as_str().unwrap_or_else(|| panic!("the run input has rules: {text}"));
    assert!(rules.contains("# From `REVIEW.md`\n\nAPI-RULE: name what each function returns."), "{rules}");
    assert!(!text.contains("OUTSIDE-SECRET"), "a path in the request is never read: {text}");
    assert_eq!(
        run["input"]["rules_files"]["applied"],
        json!([{"path": "REVIEW.md", "bytes": api_rule.len(), "truncated": false}])
    );
}
