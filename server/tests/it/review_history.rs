//! A review against the reviews before it: dismissals recorded in the repository
//! (suppressed in SARIF with their reason, never gating), baselines (findings moved by
//! five lines stay `unchanged`, fixed ones are `absent`, gates see new ones), and the
//! automatic baseline of the base branch's latest stored review.

use conclave_testkit::{FakeServer, git};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

use crate::review_e2e::{
    TRAVERSAL, VULNERABLE, assert_valid_sarif, fixture_workspace, review, review_with, writer_routes,
};

/// Commits the working tree's `path` on `main` and rebases the `feature` branch onto
/// it: the way a dismissal reaches the
/// base of later reviews.
pub(crate) fn land_on_main(repo: &Path, path: &str) {
    let text = std::fs::read(repo.join(path)).expect("the file to land");
    git(repo, &["checkout", "-q", "main"]);
    std::fs::create_dir_all(repo.join(path).parent().expect("a directory")).expect("mkdir");
    std::fs::write(repo.join(path), text).expect("write");
    git(repo, &["add", path]);
    git(repo, &["commit", "-q", "-m", "dismiss a finding"]);
    git(repo, &["checkout", "-q", "feature"]);
    git(repo, &["rebase", "-q", "main"]);
}

#[tokio::test]
async fn a_dismissed_finding_is_suppressed_with_its_reason_and_gates_nothing() {
    let (_dir, repo, workdir) = fixture_workspace();
    let blocker = json!([{"severity": "blocker", "file": "src/upload.rs", "line": 8, "description": TRAVERSAL,
                          "raisedBy": "security", "evidence": "let target = root.join(name);"}]);
    let (code, stderr, report) = review_with(&workdir, &repo, blocker.clone(), &["--fail-on", "blocker"]).await;
    assert_eq!(code, Some(5), "an anchored blocker gates: {stderr}");
    let fingerprint = report["review"]["findings"][0]["fingerprint"].as_str().expect("a fingerprint").to_string();

    let dismiss = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_conclave"))
            .arg("dismiss")
            .args(args)
            .current_dir(&repo)
            .output()
            .expect("runs")
    };
    let reason = "The names come from our own upload form, which allows [a-z0-9] only.";
    let out = dismiss(&[&fingerprint, "--reason", reason, "--author", "Ann <ann@example.com>"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    // A review with a base reads the dismissals from the base: the dismissal is merged
    // into `main` first, as a team does.
    land_on_main(&repo, ".conclave/dismissed.json");
    let out = dismiss(&["not-a-fingerprint", "--reason", "r", "--author", "a"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a finding fingerprint"));
    let out = dismiss(&[&fingerprint, "--reason", " ", "--author", "a"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: a dismissal needs a reason: say why the finding does not apply (--reason)\n",
        "the review crate says what is missing, the CLI which flag gives it"
    );

    let (code, stderr, report) = review_with(&workdir, &repo, blocker.clone(), &["--fail-on", "blocker"]).await;
    assert_eq!(code, Some(0), "the dismissed blocker gates nothing: {stderr}");
    assert_eq!(
        report["review"]["findings"][0]["dismissed"],
        json!({"reason": reason, "author": "Ann <ann@example.com>"})
    );
    let server = FakeServer::start_routed(writer_routes(blocker.clone())).await;
    let args = [repo.display().to_string(), "--base".into(), "main".into(), "--format".into(), "sarif".into()];
    let out = review(&workdir, &server, args.to_vec()).await;
    let sarif: Value = serde_json::from_slice(&out.stdout).expect("SARIF is JSON");
    assert_valid_sarif(&sarif);
    assert_eq!(
        sarif["runs"][0]["results"][0]["suppressions"],
        json!([{"kind": "external", "status": "accepted", "justification": reason,
                "properties": {"author": "Ann <ann@example.com>", "file": ".conclave/dismissed.json"}}])
    );

    // A change's own malformed file is the change's problem: reported, not applied.
    std::fs::write(repo.join(".conclave/dismissed.json"), "{\"version\": 1, \"dismissed\": [{}]}").expect("write");
    git(&repo, &["commit", "-q", "-am", "break the dismissals"]);
    let (code, stderr, report) = review_with(&workdir, &repo, blocker.clone(), &[]).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(report["review"]["configuration"]["edited"][0]["path"], ".conclave/dismissed.json");
    assert_eq!(report["review"]["findings"][0]["dismissed"]["reason"], reason, "the base's dismissal applies");

    // The base's malformed file is never skipped.
    land_on_main(&repo, ".conclave/dismissed.json");
    let (code, stderr, _) = review_with(&workdir, &repo, blocker, &[]).await;
    assert_eq!(code, Some(2), "a malformed file is never skipped: {stderr}");
    assert!(
        stderr.contains(".conclave/dismissed.json: not a dismissals file: missing field `fingerprint`"),
        "{stderr}"
    );
}

#[tokio::test]
async fn against_a_baseline_moved_findings_are_unchanged_fixed_ones_absent_and_gates_see_new_ones() {
    let (_dir, repo, workdir) = fixture_workspace();
    let at = |severity: &str, line: u64, evidence: &str| {
        json!({"severity": severity, "file": "src/upload.rs", "line": line, "description": TRAVERSAL,
               "raisedBy": "security", "evidence": evidence})
    };
    let first =
        json!([at("blocker", 8, "let target = root.join(name);"), at("minor", 9, "std::fs::write(target, data)")]);
    let (code, stderr, report) = review_with(&workdir, &repo, first.clone(), &["--fail-on", "blocker"]).await;
    assert_eq!(code, Some(5), "{stderr}");
    let run = report["run_id"].as_str().expect("run id").to_string();
    let server = FakeServer::start_routed(writer_routes(first)).await;
    let sarif_file = workdir.join("last.sarif");
    let args = [repo.display().to_string(), "--base".into(), "main".into(), "--format".into(), "sarif".into()];
    let out = review(
        &workdir,
        &server,
        [args.to_vec(), vec!["--output-file".into(), sarif_file.display().to_string()]].concat(),
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));

    // Five lines land above the code, and the write (line 9) is fixed.
    let moved = VULNERABLE
        .replacen("use std::io;", "// One.\n// Two.\n// Three.\n// Four.\n// Five.\nuse std::io;", 1)
        .replace("std::fs::write(target, data)", "crate::atomic::write(&target, data)");
    std::fs::write(repo.join("src/upload.rs"), moved).expect("write");
    git(&repo, &["commit", "-q", "-am", "document uploads, write atomically"]);
    let now = json!([at("blocker", 13, "let target = root.join(name);"), at("nit", 12, "pub fn save_upload(")]);
    for baseline in [run.clone(), sarif_file.display().to_string()] {
        let (code, stderr, report) =
            review_with(&workdir, &repo, now.clone(), &["--fail-on", "blocker", "--baseline", &baseline]).await;
        assert_eq!(code, Some(0), "the blocker is not new, so it does not gate: {stderr}");
        let states: Vec<(u64, &str)> = report["review"]["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .map(|f| (f["line"].as_u64().unwrap_or(0), f["baseline"].as_str().unwrap_or("")))
            .collect();
        assert_eq!(states, [(13, "unchanged"), (12, "new")], "against {baseline}");
        let absent = &report["review"]["absent"];
        assert_eq!((absent[0]["line"].as_u64(), absent[0]["baseline"].as_str()), (Some(9), Some("absent")), "{absent}");
        assert_eq!(absent.as_array().map(Vec::len), Some(1));
    }
    let server = FakeServer::start_routed(writer_routes(now.clone())).await;
    let args = [repo.display().to_string(), "--base".into(), "main".into(), "--baseline".into(), run.clone()];
    let markdown = String::from_utf8_lossy(&review(&workdir, &server, args.to_vec()).await.stdout).into_owned();
    assert!(markdown.contains("1 new, 0 updated, 1 unchanged, 1 fixed"), "{markdown}");
    assert!(markdown.contains("| 13 | blocker (unchanged) | security |"), "unchanged findings stay listed: {markdown}");
    assert!(markdown.contains("### Fixed since the baseline (1)"), "{markdown}");
    let server = FakeServer::start_routed(writer_routes(now)).await;
    let args = [repo.display().to_string(), "--base".into(), "main".into(), "--format".into(), "sarif".into()];
    let out = review(&workdir, &server, [args.to_vec(), vec!["--baseline".into(), run]].concat()).await;
    let sarif: Value = serde_json::from_slice(&out.stdout).expect("SARIF is JSON");
    assert_valid_sarif(&sarif);
    let states: Vec<&str> = sarif["runs"][0]["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| r["baselineState"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(states, ["unchanged", "new", "absent"]);
    let out = review(
        &workdir,
        &FakeServer::start_routed(writer_routes(json!([]))).await,
        [args.to_vec(), vec!["--baseline".into(), "no-such".into()]].concat(),
    )
    .await;
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--baseline: `no-such` is not a file, a stored run, or a branch with a stored review"),
        "{stderr}"
    );
}

#[tokio::test]
async fn the_auto_baseline_is_the_latest_stored_review_of_the_base_branch() {
    let (_dir, repo, workdir) = fixture_workspace();
    let readme = json!({"severity": "blocker", "file": "README.md", "line": 1, "description": "The README does not say how to call save_upload.", "raisedBy": "conventions", "evidence": "# Uploads"});
    let traversal = json!({"severity": "blocker", "file": "src/upload.rs", "line": 8, "description": TRAVERSAL, "raisedBy": "security", "evidence": "root.join(name)"});
    let gate = ["--baseline", "auto", "--fail-on", "blocker"];

    let (code, stderr, report) = review_with(&workdir, &repo, json!([readme]), &gate).await;
    assert_eq!(code, Some(5), "{stderr}");
    assert!(stderr.contains("note: no stored review of `main`"), "nothing to compare with yet: {stderr}");
    assert_eq!(report["review"]["baseline"], Value::Null);

    // A review of the main branch: its working tree, with the README edited.
    git(&repo, &["checkout", "-q", "main"]);
    std::fs::write(repo.join("README.md"), "# Uploads\n\nDraft.\n").expect("write");
    let main_report = workdir.join("main.json");
    let args = [repo.display().to_string(), "--format".into(), "json".into(), "--output-file".into()];
    let server = FakeServer::start_routed(writer_routes(json!([readme]))).await;
    let out = review(&workdir, &server, [args.to_vec(), vec![main_report.display().to_string()]].concat()).await;
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let main_run = serde_json::from_str::<Value>(&std::fs::read_to_string(&main_report).expect("report"))
        .expect("json")["run_id"]
        .as_str()
        .expect("run id")
        .to_string();
    git(&repo, &["checkout", "-q", "--", "README.md"]);
    git(&repo, &["checkout", "-q", "feature"]);

    // The feature branch against main: the README finding was there already.
    let (code, stderr, report) = review_with(&workdir, &repo, json!([readme, traversal]), &gate).await;
    assert_eq!(code, Some(5), "the traversal is new: {stderr}");
    assert!(stderr.contains(&format!("baseline: run {main_run}, the latest stored review of `main`")), "{stderr}");
    let states: Vec<(u64, &str)> = report["review"]["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| (f["line"].as_u64().unwrap_or(0), f["baseline"].as_str().unwrap_or("")))
        .collect();
    assert_eq!(states, [(1, "unchanged"), (8, "new")]);
    let (code, stderr, _) =
        review_with(&workdir, &repo, json!([readme]), &["--baseline", "main", "--fail-on", "blocker"]).await;
    assert_eq!(code, Some(0), "a branch name names its latest review too, and the README blocker is not new: {stderr}");
}
