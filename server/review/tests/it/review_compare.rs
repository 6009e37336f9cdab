//! Comparing sibling reviewers on labelled fixtures: exact buckets, the ±3-line
//! window, path normalization, one- and two-level severity gaps, stances, and the
//! near-duplicate threshold's precision and recall.

use conclave_review::similarity::{NEAR_DUPLICATE_THRESHOLD, similarity};
use conclave_review::{compare_findings, read_findings};
use conclave_shared::{Finding, FindingsCheck};
use serde_json::{Value, json};
use std::path::Path;

fn labelled_pairs() -> Vec<(String, String, bool)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/review/near-duplicates.json");
    let pairs: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("json");
    assert!(pairs.len() >= 40, "at least 40 labelled pairs");
    pairs
        .into_iter()
        .map(|p| {
            (
                p["a"].as_str().expect("a").to_string(),
                p["b"].as_str().expect("b").to_string(),
                p["same"].as_bool().expect("same"),
            )
        })
        .collect()
}

fn precision_recall(threshold: f64) -> (f64, f64) {
    let (mut tp, mut fp, mut fn_) = (0.0f64, 0.0f64, 0.0f64);
    for (a, b, same) in labelled_pairs() {
        match (similarity(&a, &b) >= threshold, same) {
            (true, true) => tp += 1.0,
            (true, false) => fp += 1.0,
            (false, true) => fn_ += 1.0,
            _ => {}
        }
    }
    (tp / (tp + fp).max(1.0), tp / (tp + fn_).max(1.0))
}

#[test]
fn near_duplicate_threshold_is_calibrated_on_the_labelled_pairs() {
    let mut best = (0.0, 0.0);
    println!("threshold  precision  recall  F1");
    for step in 4..=14 {
        let t = step as f64 * 0.05;
        let (p, r) = precision_recall(t);
        let f1 = if p + r > 0.0 { 2.0 * p * r / (p + r) } else { 0.0 };
        println!("{t:>9.2}  {p:>9.3}  {r:>6.3}  {f1:.3}");
        if f1 > best.1 + 1e-9 {
            best = (t, f1);
        }
    }
    let (p, r) = precision_recall(NEAR_DUPLICATE_THRESHOLD);
    let f1 = 2.0 * p * r / (p + r);
    println!("chosen {NEAR_DUPLICATE_THRESHOLD:.2}: precision {p:.3}, recall {r:.3}, F1 {f1:.3}");
    assert!(f1 + 1e-9 >= best.1, "the chosen threshold must have the best F1 ({} at {:.2})", best.1, best.0);
    assert!(p >= 0.9 && r >= 0.8, "precision {p:.3}, recall {r:.3}");
}

/// Findings of one agent from `(file, line, severity, stance, description)`.
fn agent(name: &str, items: &[(&str, u64, &str, &str, &str)]) -> (String, Vec<Finding>) {
    let findings: Vec<Value> = items
        .iter()
        .map(|(file, line, severity, stance, description)| {
            json!({"file": file, "line": line, "severity": severity, "stance": stance, "description": description, "raisedBy": name})
        })
        .collect();
    (name.to_string(), read_findings(name, &json!({ "findings": findings }), "findings"))
}

fn summary(check: &FindingsCheck) -> Vec<String> {
    let mut out = Vec::new();
    for (kind, groups) in [
        ("contradiction", &check.contradictions),
        ("disagreement", &check.disagreements),
        ("agreement", &check.agreements),
        ("duplicate", &check.duplicates),
    ] {
        for g in groups {
            let agents: Vec<&str> = g.findings.iter().map(|f| f.agent.as_str()).collect();
            out.push(format!("{kind} {}:{}-{} [{}] {}", g.file, g.line, g.end_line, agents.join(","), g.basis));
        }
    }
    out
}

#[test]
fn severity_gaps_and_stances_at_one_place_are_classified() {
    let check = compare_findings(&[
        agent(
            "security",
            &[
                ("src/a.rs", 10, "blocker", "concern", "path traversal"),
                ("src/a.rs", 20, "major", "concern", "missing timeout"),
                ("src/a.rs", 30, "minor", "concern", "unclear name"),
                ("src/a.rs", 40, "major", "concern", "token leaks"),
            ],
        ),
        agent(
            "conventions",
            &[
                ("src/a.rs", 10, "minor", "concern", "style"),
                ("src/a.rs", 20, "minor", "concern", "style"),
                ("src/a.rs", 30, "minor", "concern", "naming"),
                ("src/a.rs", 40, "nit", "approval", "checked, fine"),
            ],
        ),
    ]);
    assert_eq!(
        summary(&check),
        vec![
            "contradiction src/a.rs:10-10 [security,conventions] same_line",
            "contradiction src/a.rs:40-40 [security,conventions] same_line",
            "disagreement src/a.rs:20-20 [security,conventions] same_line",
            "agreement src/a.rs:30-30 [security,conventions] same_line",
        ]
    );
    assert_eq!(check.contradictions[0].summary, "security says blocker, conventions says minor (2 levels apart)");
    assert_eq!(check.contradictions[1].summary, "security (major) raised a concern that conventions approved");
    assert_eq!(check.disagreements[0].summary, "security says major, conventions says minor (one level apart)");
}

#[test]
fn one_agent_never_conflicts_with_itself() {
    let check = compare_findings(&[
        agent("security", &[("src/a.rs", 10, "blocker", "concern", "one"), ("src/a.rs", 10, "nit", "approval", "two")]),
        agent("correctness", &[("src/b.rs", 1, "minor", "concern", "elsewhere")]),
    ]);
    assert_eq!(summary(&check), Vec::<String>::new());
}

#[test]
fn paths_are_normalized_before_bucketing() {
    let check = compare_findings(&[
        agent("security", &[("./src/upload.rs", 42, "blocker", "concern", "traversal")]),
        agent("conventions", &[("b/src//upload.rs", 42, "nit", "approval", "fine")]),
        agent("correctness", &[("src\\upload.rs", 42, "blocker", "concern", "escape")]),
    ]);
    assert_eq!(summary(&check), vec!["contradiction src/upload.rs:42-42 [security,conventions,correctness] same_line"]);
}

#[test]
fn near_duplicates_are_within_three_lines_and_similar() {
    let a = "User-controlled filename is joined to the upload root without normalisation, allowing path traversal";
    let b = "Path traversal: the filename from the user is joined onto the upload root with no normalisation";
    let check = compare_findings(&[
        agent("security", &[("src/a.rs", 10, "blocker", "concern", a), ("src/a.rs", 50, "major", "concern", a)]),
        agent("correctness", &[("src/a.rs", 13, "blocker", "concern", b), ("src/a.rs", 54, "major", "concern", b)]),
        agent("conventions", &[("src/a.rs", 11, "minor", "concern", "Missing doc comment on save")]),
    ]);
    assert_eq!(
        summary(&check),
        vec!["duplicate src/a.rs:10-13 [security,correctness] near_duplicate"],
        "54 is four lines from 50"
    );
    assert_eq!(check.duplicates[0].summary, "security, correctness describe the same issue");
}

#[test]
fn near_duplicates_with_conflicting_severity_are_contradictions() {
    let a = "The HTTP client has no timeout, so a slow server hangs the request forever";
    let b = "No timeout is set on the HTTP client; requests to a slow server can hang indefinitely";
    let check = compare_findings(&[
        agent("security", &[("src/net.rs", 7, "blocker", "concern", a)]),
        agent("conventions", &[("src/net.rs", 9, "nit", "concern", b)]),
    ]);
    assert_eq!(
        summary(&check),
        vec![
            "contradiction src/net.rs:7-9 [security,conventions] near_duplicate",
            "duplicate src/net.rs:7-9 [security,conventions] near_duplicate"
        ]
    );
}

#[test]
fn duplicates_merge_transitively_with_all_their_raisers() {
    let text = "Division by zero when the list of samples is empty";
    let check = compare_findings(&[
        agent("security", &[("m.rs", 5, "major", "concern", text)]),
        agent("correctness", &[("m.rs", 7, "major", "concern", "If samples is empty the average divides by zero")]),
        agent("conventions", &[("m.rs", 9, "major", "concern", "The average divides by zero if samples is empty")]),
    ]);
    assert_eq!(check.duplicates.len(), 1);
    let raisers: Vec<&str> = check.duplicates[0].findings.iter().map(|f| f.agent.as_str()).collect();
    assert_eq!(raisers, vec!["security", "correctness", "conventions"]);
    assert_eq!((check.duplicates[0].line, check.duplicates[0].end_line), (5, 9));
}
