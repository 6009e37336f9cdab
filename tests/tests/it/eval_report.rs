//! The eval's HTML report (`conclave eval --format html`) in the real headless
//! Chromium the editor's tests use: a summary of 3 support levels, 4 nodes and 5
//! cases, written by `summary_html` to a file and opened from disk, must draw every
//! point, line, bar and case row, and the page must fetch nothing. Needs what the
//! editor's browser tests need (scripts/test.sh builds and installs it).

use conclave_review::eval::html::summary_html;
use conclave_shared::eval::{
    CaseDetail, Counts, EvalSummary, FoundRef, GoldenRef, Interval, Intervals, MatchingSettings, NodeFigures,
    SUMMARY_FORMAT, SupportFigures, Tokens,
};
use conclave_tests::browser::Editor;
use serde_json::{Value, json};
use std::path::Path;

/// What the page's DOM holds, measured in the browser after layout.
const MEASURE: &str = r#"
const all = s => Array.from(document.querySelectorAll(s));
const chart = document.querySelector('svg.support-chart');
const box = chart.getBoundingClientRect();
const inside = r => r.width > 0 && r.left >= box.left && r.right <= box.right && r.top >= box.top && r.bottom <= box.bottom;
const rules = Array.from(document.styleSheets).flatMap(s => Array.from(s.cssRules)).map(r => r.cssText);
return {
  precision: all('svg.support-chart circle.point.precision').length,
  recall: all('svg.support-chart circle.point.recall').length,
  pointsInside: all('svg.support-chart circle.point').every(c => inside(c.getBoundingClientRect())),
  lines: all('svg.support-chart polyline').map(l => l.points.numberOfItems),
  precisionHeights: all('svg.support-chart circle.point.precision').map(c => c.getBoundingClientRect().top),
  bars: all('rect.bar.adds').map(r => ({ node: r.getAttribute('data-node'), width: r.getBBox().width })),
  rows: all('table.cases tbody tr').length,
  titled: all('svg[role=img]').map(s => s.querySelector(':scope > title')?.textContent ?? ''),
  resources: performance.getEntriesByType('resource').map(r => r.name),
  fetching: all('[src],[href],link,script,img,iframe,object,embed,video,audio,source,use').length,
  urlsInStyle: rules.filter(t => t.includes('url(') || t.startsWith('@import')).length,
};
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_html_report_draws_its_charts_and_fetches_nothing() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let page = dir.path().join("eval.html");
    std::fs::write(&page, summary_html(&summary())).expect("the page is written");
    let e = Editor::start(Path::new(env!("CARGO_BIN_EXE_conclave-testbed"))).await;
    e.driver.goto(format!("file://{}", page.display())).await.expect("the page opens");
    let dom = e.driver.execute(MEASURE, Vec::new()).await.expect("the DOM is measured").json().clone();

    assert_eq!(dom["precision"], 3, "a precision point per support level: {dom}");
    assert_eq!(dom["recall"], 3, "a recall point per support level: {dom}");
    assert_eq!(dom["lines"], json!([3, 3]), "two lines through three points each: {dom}");
    assert_eq!(dom["pointsInside"], true, "every point is drawn inside its chart: {dom}");
    let heights: Vec<f64> = numbers(&dom["precisionHeights"]);
    assert!(heights.windows(2).all(|w| w[0] > w[1]), "precision rises with support, so its points climb: {dom}");
    let bars: Vec<(String, f64)> = dom["bars"]
        .as_array()
        .expect("bars")
        .iter()
        .map(|b| (b["node"].as_str().unwrap_or_default().to_string(), b["width"].as_f64().unwrap_or(-1.0)))
        .collect();
    assert_eq!(bars.len(), 4, "a bar per node: {dom}");
    for (node, width) in &bars {
        let expected_zero = node == "writer";
        assert!(if expected_zero { *width == 0.0 } else { *width > 0.0 }, "{node}'s bar is {width} wide: {dom}");
    }
    assert!(bars[0].1 > bars[1].1, "a node that adds more has the longer bar: {dom}");
    assert_eq!(dom["rows"], 5, "a row per case: {dom}");
    assert_eq!(
        dom["titled"],
        json!(["Precision and recall against min-support", "What each node adds to the union's recall"]),
        "each chart is an image with a title: {dom}"
    );
    assert_eq!(dom["resources"], json!([]), "the page fetched nothing: {dom}");
    assert_eq!(dom["fetching"], 0, "no element can fetch anything: {dom}");
    assert_eq!(dom["urlsInStyle"], 0, "the style fetches nothing: {dom}");
}

fn numbers(value: &Value) -> Vec<f64> {
    value.as_array().expect("an array").iter().filter_map(Value::as_f64).collect()
}

/// An eval of 5 cases with precision rising and recall falling over 3 support
/// levels, and 4 nodes of which the result's (the writer's) adds nothing.
fn summary() -> EvalSummary {
    let ci = Interval { low: 0.4, high: 0.8 };
    let counts = Counts { true_positives: 3, false_positives: 2, false_negatives: 1 };
    let node = |name: &str, adds: f64| NodeFigures {
        node: name.into(),
        result: name == "writer",
        findings: 6,
        precision: 0.5,
        recall: 0.6,
        union_recall_without: 0.75 - adds,
        adds,
    };
    let level = |min_support: u32, precision: f64, recall: f64| SupportFigures {
        min_support,
        findings: 10 / u64::from(min_support),
        precision,
        recall,
    };
    EvalSummary {
        format: SUMMARY_FORMAT,
        dataset: "evals/injected-bugs".into(),
        conclave: "light-code-review".into(),
        matching: MatchingSettings { window: 3, threshold: Some(0.24), judge: None, resamples: 1000, seed: 7 },
        min_support: 0,
        cases: 5,
        precision: 0.6,
        recall: 0.75,
        f1: 0.667,
        counts,
        ci95: Intervals { precision: ci, recall: ci, f1: ci },
        by_node: vec![
            node("security", 0.25),
            node("correctness", 0.125),
            node("performance", 0.05),
            node("writer", 0.0),
        ],
        by_support: vec![level(1, 0.5, 0.75), level(2, 0.7, 0.5), level(3, 0.9, 0.25)],
        by_severity: Default::default(),
        cost: Some(0.042),
        tokens: Tokens { input: 52_000, output: 6_100 },
        cases_detail: (1..=5).map(case).collect(),
    }
}

/// Case `n`: one golden issue missed and one extra finding, worded to break markup.
fn case(n: u32) -> CaseDetail {
    CaseDetail {
        id: format!("case-{n}"),
        run_id: None,
        status: "succeeded".into(),
        error: None,
        counts: Counts { true_positives: 1, false_positives: 1, false_negatives: 1 },
        matched: Vec::new(),
        missed: vec![GoldenRef {
            index: 0,
            file: "src/lib.rs".into(),
            line: u64::from(n) * 10,
            description: "an off-by-one in the <loop> bound".into(),
            severity: Some("high".into()),
        }],
        extra: vec![FoundRef {
            node: "writer".into(),
            raised_by: None,
            file: "src/main.rs".into(),
            line: 3,
            severity: None,
            description: "</td></tr></tbody><tr><td>not a case</td></tr> & 'quoted' \"text\"".into(),
            support: Some(1),
        }],
        by_node: Default::default(),
    }
}
