//! The conformance checks of kept evals: an eval reads back whole, a second put of
//! its id replaces it, listings are newest first (by time, then id), limited, and of
//! one conclave when one is named.

use conclave_core::RunStore;
use conclave_shared::eval::{
    CaseDetail, Counts, EvalListing, EvalSummary, FoundRef, GoldenRef, Interval, Intervals, MatchedIssue,
    MatchingSettings, NodeCase, NodeFigures, SUMMARY_FORMAT, SeverityFigures, StoredEval, SupportFigures, Tokens,
};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Every check of kept evals, each against a fresh store from `make`.
pub(super) async fn run_all(make: &dyn Fn() -> Arc<dyn RunStore>) {
    evals_are_kept_whole_and_replaced(make()).await;
    evals_are_listed_newest_first_by_conclave_and_limited(make()).await;
}

/// An eval of `conclave` kept at `created_ms` with figures that read back exactly
/// (binary fractions) and every part of a summary filled in.
pub fn stored_eval(id: &str, conclave: &str, created_ms: u64, precision: f64) -> StoredEval {
    let interval = Interval { low: precision - 0.125, high: precision + 0.125 };
    let issue = GoldenRef {
        index: 0,
        file: "src/lib.rs".into(),
        line: 12,
        description: "off by one in the loop bound".into(),
        severity: Some("major".into()),
    };
    let finding = FoundRef {
        node: "writer".into(),
        raised_by: Some("correctness".into()),
        file: "src/lib.rs".into(),
        line: 13,
        severity: Some("major".into()),
        description: "the loop reads one past the end".into(),
        support: Some(2),
    };
    let counts = Counts { true_positives: 3, false_positives: 1, false_negatives: 1 };
    let node_case = NodeCase { counts, matched_issues: vec![0] };
    let case = CaseDetail {
        id: "rust-off-by-one".into(),
        run_id: Some(format!("run-of-{id}")),
        status: "succeeded".into(),
        error: None,
        counts,
        matched: vec![MatchedIssue { issue: issue.clone(), finding: finding.clone(), similarity: 0.75 }],
        missed: vec![issue],
        extra: vec![finding],
        by_node: BTreeMap::from([("writer".to_string(), node_case)]),
    };
    let summary = EvalSummary {
        format: SUMMARY_FORMAT,
        dataset: "evals/injected-bugs".into(),
        conclave: conclave.into(),
        matching: MatchingSettings { window: 3, threshold: Some(0.5), judge: None, resamples: 1000, seed: 7 },
        min_support: 0,
        cases: 32,
        precision,
        recall: 0.625,
        f1: 0.5,
        counts,
        ci95: Intervals { precision: interval, recall: interval, f1: interval },
        by_node: vec![NodeFigures {
            node: "correctness".into(),
            result: false,
            findings: 9,
            precision: 0.5,
            recall: 0.25,
            union_recall_without: 0.5,
            adds: 0.125,
        }],
        by_support: vec![SupportFigures { min_support: 1, findings: 4, precision: 0.75, recall: 0.625 }],
        by_severity: BTreeMap::from([("major".to_string(), SeverityFigures { findings: 2, ..Default::default() })]),
        cost: Some(0.25),
        tokens: Tokens { input: 1200, output: 300 },
        cases_detail: vec![case],
    };
    StoredEval { id: id.into(), conclave: conclave.into(), dataset: "evals/injected-bugs".into(), created_ms, summary }
}

async fn evals_are_kept_whole_and_replaced(store: Arc<dyn RunStore>) {
    assert_eq!(store.get_eval("e1").await.expect("read"), None, "nothing is kept at first");
    assert_eq!(store.list_evals(None, 10).await.expect("list"), Vec::<EvalListing>::new(), "no eval is listed");
    let first = stored_eval("e1", "light-code-review", 100, 0.75);
    store.put_eval(&first).await.expect("put");
    assert_eq!(store.get_eval("e1").await.expect("read"), Some(first.clone()), "an eval reads back whole");
    let again = StoredEval { dataset: "elsewhere".into(), ..stored_eval("e1", "review-panel", 200, 0.5) };
    store.put_eval(&again).await.expect("put again");
    assert_eq!(store.get_eval("e1").await.expect("read"), Some(again.clone()), "a second put of an id replaces it");
    assert_eq!(store.list_evals(None, 10).await.expect("list"), vec![again.listing()], "and it is listed once");
    assert_eq!(store.get_eval("e2").await.expect("read"), None, "an unknown id has no eval");
}

async fn evals_are_listed_newest_first_by_conclave_and_limited(store: Arc<dyn RunStore>) {
    let evals = [
        stored_eval("e-a", "light-code-review", 100, 0.5),
        stored_eval("e-b", "review-panel", 300, 0.625),
        stored_eval("e-c", "light-code-review", 300, 0.75),
        stored_eval("e-d", "light-code-review", 200, 0.875),
    ];
    for eval in &evals {
        store.put_eval(eval).await.expect("put");
    }
    let ids = |listed: Vec<EvalListing>| listed.into_iter().map(|l| l.id).collect::<Vec<_>>();
    assert_eq!(
        ids(store.list_evals(None, 10).await.expect("list")),
        ["e-c", "e-b", "e-d", "e-a"],
        "newest first, the higher id first at the same time"
    );
    let light = store.list_evals(Some("light-code-review"), 10).await.expect("list");
    assert_eq!(
        light,
        vec![evals[2].listing(), evals[3].listing(), evals[0].listing()],
        "one conclave's evals, with their figures"
    );
    assert_eq!(ids(store.list_evals(Some("light-code-review"), 2).await.expect("list")), ["e-c", "e-d"], "limited");
    assert_eq!(ids(store.list_evals(None, 1).await.expect("list")), ["e-c"], "limited across conclaves too");
    assert!(store.list_evals(Some("hello"), 10).await.expect("list").is_empty(), "a conclave without evals");
}
