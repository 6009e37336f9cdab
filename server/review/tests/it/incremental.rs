//! Carrying an earlier review's findings into an incremental review: what the new
//! commits did not touch is carried `unchanged` (at the line its code moved to),
//! what they touched is left to the new review, and so is gone when it was not raised
//! again.

use conclave_review::diff::ChangedFile;
use conclave_review::incremental::carry_forward;
use conclave_shared::{BaselineState, Finding};

fn earlier(file: &str, line: u64, evidence: Option<&str>, fingerprint: &str) -> Finding {
    Finding {
        agent: "writer".into(),
        file: file.into(),
        line,
        description: format!("finding {fingerprint}"),
        evidence: evidence.map(str::to_string),
        fingerprint: Some(fingerprint.into()),
        baseline: Some(BaselineState::Absent),
        ..Finding::default()
    }
}

#[test]
fn untouched_code_is_carried_at_its_new_line_and_touched_code_is_not() {
    let dir = tempfile::tempdir().expect("tempdir");
    conclave_testkit::git(dir.path(), &["init", "-q"]);
    // Two lines were inserted at the top of `a.rs` (lines 1-2 changed); `b.rs` was not changed.
    std::fs::write(dir.path().join("a.rs"), "// new\n// new\nlet kept = 1;\nlet edited = 3;\nlet also = 4;\n")
        .expect("write");
    std::fs::write(dir.path().join("b.rs"), "let other = 1;\n").expect("write");
    let changed =
        vec![ChangedFile { path: "a.rs".into(), status: "modified".into(), changed_lines: vec![(1, 2), (4, 4)] }];
    let absent = vec![
        earlier("a.rs", 1, Some("let kept = 1;"), "moved"),
        earlier("a.rs", 2, Some("let edited = 2;"), "quote-gone"),
        earlier("a.rs", 2, Some("let edited = 3;"), "on-a-changed-line"),
        earlier("a.rs", 3, None, "unquoted"),
        earlier("b.rs", 1, None, "other-file"),
        earlier("gone.rs", 9, Some("x"), "file-not-in-change"),
    ];
    let mut findings = Vec::new();
    let gone = carry_forward(&mut findings, absent, &changed, dir.path());
    let carried: Vec<(&str, u64)> = findings.iter().map(|f| (f.fingerprint.as_deref().unwrap_or(""), f.line)).collect();
    assert_eq!(carried, [("other-file", 1), ("file-not-in-change", 9), ("moved", 3)]);
    assert!(findings.iter().all(|f| f.baseline == Some(BaselineState::Unchanged)));
    let gone: Vec<&str> = gone.iter().map(|f| f.fingerprint.as_deref().unwrap_or("")).collect();
    assert_eq!(gone, ["quote-gone", "on-a-changed-line", "unquoted"], "touched code was reviewed again");
}
