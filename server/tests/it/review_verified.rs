//! The built-in `verified-review`: the specialists and an analyzer lane (`git diff
//! --check`, its lines read as findings) feed the Writer; a verifier confirms one of
//! the Writer's findings from the code and refutes the other with a quote; the
//! refuted one is dropped from the findings and kept, with its reason, in the report
//! (the analyzer's finding the Writer left out is added back);
//! and a verified review with blockers waits for a person's approval before it is
//! reported. Each model is faked in Anthropic's wire format.

use conclave_testkit::wire::Vendor;
use conclave_testkit::{FakeServer, Route};
use serde_json::{Value, json};
use std::path::Path;

use crate::review_e2e::{TRAVERSAL, conclave, findings, fixture_workspace, review};

const WRONG: &str = "The write ignores the result of `create_dir_all`.";
const REASON: &str = "line 9 writes the file; no directory is created";

fn item(severity: &str, line: u64, description: &str) -> Value {
    json!({"severity": severity, "file": "src/upload.rs", "line": line, "description": description, "raisedBy": "correctness"})
}

/// The fake models: the specialists find nothing, the Writer reports the traversal
/// (at `severity`) and a wrong finding, the verifier refutes the wrong one, and the
/// publisher keeps the traversal and moves the other to `refuted`.
fn routes(severity: &str) -> Vec<Route> {
    let a = Vendor::Anthropic;
    let looked = || a.answer("I read the code; nothing more to look up.");
    let nothing = || a.answer(&findings(json!([]), [0, 0, 0, 0]));
    let mut routes: Vec<Route> = ["security", "correctness", "conventions"]
        .iter()
        .map(|lane| Route { marker: format!("You are the {lane} reviewer"), replies: vec![looked(), nothing()] })
        .collect();
    let blockers = u64::from(severity == "blocker");
    let written = json!([item(severity, 8, TRAVERSAL), item("minor", 9, WRONG)]);
    let counts = [blockers, 1 - blockers, 1, 0];
    routes.push(Route { marker: "You are the Writer".into(), replies: vec![a.answer(&findings(written, counts))] });
    let verdicts = json!({"verdicts": [
        {"file": "src/upload.rs", "line": 8, "verdict": "confirmed", "quote": "root.join(name)", "reason": "the name is joined unchecked"},
        {"file": "src/upload.rs", "line": 9, "verdict": "refuted", "quote": "std::fs::write(target, data)", "reason": REASON}
    ], "all_checked": true});
    routes.push(Route {
        marker: "You are the verifier".into(),
        replies: vec![looked(), a.answer(&verdicts.to_string())],
    });
    let published = json!({
        "findings": [item(severity, 8, TRAVERSAL)],
        "counts": {"blocker": blockers, "major": 1 - blockers, "minor": 0, "nit": 0},
        "refuted": [{"file": "src/upload.rs", "line": 9, "description": WRONG, "reason": REASON}]
    });
    let publisher = "You publish a verified code review".to_string();
    routes.push(Route { marker: publisher, replies: vec![a.answer(&published.to_string())] });
    routes
}

fn review_args(repo: &Path, report: &Path) -> Vec<String> {
    let args =
        [repo.display().to_string(), "--base".into(), "main".into(), "--conclave".into(), "verified-review".into()];
    args.into_iter().chain(["--output-file".into(), report.display().to_string()]).collect()
}

#[tokio::test]
async fn the_verifier_drops_a_refuted_finding_and_the_report_keeps_its_reason() {
    let (_dir, repo, workdir) = fixture_workspace();
    // Uncommitted trailing whitespace for the analyzer lane to find.
    std::fs::write(repo.join("README.md"), "# Uploads\n\nSaves uploaded files.   \n").expect("write");
    let server = FakeServer::start_routed(routes("major")).await;
    let report = workdir.join("review.md");
    let out = review(&workdir, &server, review_args(&repo, &report)).await;
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let markdown = std::fs::read_to_string(&report).expect("report");
    assert!(markdown.contains("## Refuted by the verifier (1)"), "{markdown}");
    assert!(markdown.contains(REASON), "the reason is kept:\n{markdown}");
    // The confirmed finding, and the analyzer's that the Writer left out (the report
    // adds it back: README.md's line 3 is in the change); the refuted one does not count.
    assert!(markdown.contains("**2 finding(s):**"), "only the confirmed finding and the analyzer's count:\n{markdown}");
    assert!(markdown.contains("| 3 | minor | git-diff-check · support 1 | trailing whitespace. |"), "{markdown}");
    let requests = server.requests();
    let writer = requests.iter().find(|r| r.body.to_string().contains("You are the Writer")).expect("the Writer ran");
    let body = writer.body.to_string();
    assert!(body.contains("whitespace") && body.contains("trailing whitespace"), "the analyzer lane joins the Writer");
}

#[tokio::test]
async fn a_verified_review_with_blockers_waits_for_approval_before_it_is_reported() {
    let (_dir, repo, workdir) = fixture_workspace();
    let server = FakeServer::start_routed(routes("blocker")).await;
    let report = workdir.join("review.md");
    let out = review(&workdir, &server, review_args(&repo, &report)).await;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(7), "a review with blockers waits: {stderr}");
    assert!(!report.exists(), "nothing is reported before the decision");
    let listed = conclave(&workdir, &server, &["runs", "list", "--json", "--limit", "1"]);
    let runs: Value = serde_json::from_slice(&listed.stdout).expect("runs");
    let run = runs[0]["id"].as_str().expect("a run").to_string();
    assert_eq!(runs[0]["status"], "waiting");
    assert!(stderr.contains(&format!("conclave approve {run} NODE")), "{stderr}");

    let approved = conclave(&workdir, &server, &["approve", &run, "approve", "--comment", "seen"]);
    assert_eq!(approved.status.code(), Some(0), "{}", String::from_utf8_lossy(&approved.stderr));
    let shown = conclave(&workdir, &server, &["runs", "report", &run]);
    let markdown = String::from_utf8_lossy(&shown.stdout);
    assert!(markdown.contains("1 blocker"), "the approved review is reported: {markdown}");
    assert!(markdown.contains("## Refuted by the verifier (1)"), "{markdown}");
}
