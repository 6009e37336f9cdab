//! The Evals panel in headless Chromium. Two evals of the default review conclave
//! are kept in a database by running the testbed's `conclave eval` on the shipped
//! dataset, offline from its recordings, as a user would (the second counting only
//! findings two reviewers raised); the editor is started on that database, and
//! everything after is a real click: the panel lists both newest first, one chosen
//! draws its summary's charts and cases, and two chosen stand side by side with
//! their differences.

use conclave_tests::browser::{Editor, tid, wait_until, workspace_root};
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use thirtyfour::prelude::*;

const TESTBED: &str = env!("CARGO_BIN_EXE_conclave-testbed");

/// The default review conclave, which `conclave eval` uses when none is named.
const CONCLAVE: &str = "light-code-review";

/// A kept eval: the summary `conclave eval` wrote, and the id it said it kept.
struct Kept {
    summary: Value,
    id: String,
}

/// Runs `conclave eval evals/injected-bugs --replay evals/injected-bugs/recordings`
/// (with `extra` arguments) from the repository's root, keeping the eval in `db`.
fn eval_into(db: &Path, work: &Path, name: &str, extra: &[&str]) -> Kept {
    let summary_file = work.join(format!("{name}.json"));
    let output = Command::new(TESTBED)
        .args(["eval", "evals/injected-bugs", "--replay", "evals/injected-bugs/recordings"])
        .args(["--format", "json", "--output-file", &summary_file.display().to_string()])
        .args(extra)
        .current_dir(workspace_root())
        .env("CONCLAVE_DB", db)
        .env("CONCLAVE_CONFIG_DIR", work.join("config"))
        .env_remove("CI")
        .output()
        .expect("the testbed runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let id = stderr
        .lines()
        .find_map(|l| l.strip_prefix("eval ").and_then(|rest| rest.strip_suffix(" kept")))
        .unwrap_or_else(|| panic!("conclave eval says which eval it kept: {stderr}"))
        .to_string();
    let summary = serde_json::from_str(&std::fs::read_to_string(summary_file).expect("the summary")).expect("JSON");
    Kept { summary, id }
}

fn len(summary: &Value, key: &str) -> usize {
    summary[key].as_array().map_or(0, Vec::len)
}

/// How many elements match `css` inside the element matching `within`.
async fn count_in(e: &Editor, within: &str, css: &str) -> usize {
    e.count(By::Css(format!("{within} {css}"))).await
}

/// The text of each element matching `css`, in page order.
async fn texts(e: &Editor, css: &str) -> Vec<String> {
    let mut texts = Vec::new();
    for element in e.driver.find_all(By::Css(css)).await.unwrap_or_default() {
        texts.push(element.text().await.unwrap_or_default());
    }
    texts
}

/// Whether `shown` (three places, maybe signed) is `value` as the panel rounds it.
fn shows(shown: &str, value: f64) -> bool {
    shown.trim_start_matches('+').parse::<f64>().is_ok_and(|v| (v - value).abs() <= 0.0005 + 1e-9)
}

/// The charts and cases inside `within` are drawn from `summary`: a precision point
/// and a recall point per support level, their two lines, a bar per node.
async fn assert_drawn_from(e: &Editor, within: &str, summary: &Value, cases: bool) {
    let levels = len(summary, "by_support");
    assert!(levels > 0, "the eval has support levels to draw: {summary}");
    assert_eq!(count_in(e, within, "svg circle.point.precision").await, levels, "a precision point per level");
    assert_eq!(count_in(e, within, "svg circle.point.recall").await, levels, "a recall point per level");
    let lines = "[data-testid='support-chart'] svg polyline";
    assert_eq!(count_in(e, within, lines).await, 2, "a line for precision and one for recall");
    assert_eq!(count_in(e, within, "svg rect.bar.adds").await, len(summary, "by_node"), "a bar per node");
    if cases {
        assert_eq!(count_in(e, within, "[data-testid='eval-case']").await, len(summary, "cases_detail"));
    }
    for figure in ["precision", "recall", "f1"] {
        let css = format!("{within} [data-figure='{figure}'] [data-testid='eval-figure-value']");
        let shown = texts(e, &css).await;
        assert!(
            shown.len() == 1 && shows(&shown[0], summary[figure].as_f64().expect("a figure")),
            "{figure}: {shown:?}"
        );
    }
}

/// Clicks the row of eval `id` in the list.
async fn choose(e: &Editor, id: &str) {
    let row = format!("[data-testid='eval-row'][data-eval-id='{id}']");
    e.wait_for(By::Css(row)).await.click().await.expect("choose the eval");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_evals_panel_lists_draws_and_compares_kept_evals() {
    let work = tempfile::tempdir().expect("tempdir");
    let db = work.path().join("runs.db");
    let every = eval_into(&db, work.path(), "every", &[]);
    let supported = eval_into(&db, work.path(), "supported", &["--min-support", "2"]);
    assert_eq!(every.summary["conclave"], CONCLAVE, "the default conclave reviewed the cases");
    let e = Editor::start_with(Path::new(TESTBED), None, &[("CONCLAVE_DB", db.display().to_string())]).await;
    let shipped = workspace_root().join(format!("conclaves/{CONCLAVE}.conclave.json"));
    std::fs::copy(shipped, e.ws.root().join(format!("conclaves/{CONCLAVE}.conclave.json"))).expect("copy");
    e.open_conclave(CONCLAVE).await;
    e.find(tid("evals")).await.expect("the Evals button").click().await.expect("open the panel");
    e.wait_for(tid("evals-panel")).await;
    wait_until("both evals listed", || async { e.count(tid("eval-row")).await == 2 }).await;

    let mut listed = Vec::new();
    for row in e.driver.find_all(tid("eval-row")).await.expect("rows") {
        listed.push(row.attr("data-eval-id").await.ok().flatten().unwrap_or_default());
    }
    assert_eq!(listed, [supported.id.clone(), every.id.clone()], "newest first");
    let cells = texts(&e, &format!("[data-testid='eval-row'][data-eval-id='{}'] td", every.id)).await;
    assert_eq!(cells[1], "evals/injected-bugs", "{cells:?}");
    assert_eq!(cells[2], len(&every.summary, "cases_detail").to_string(), "{cells:?}");
    for (cell, figure) in cells[3..].iter().zip(["precision", "recall", "f1"]) {
        assert!(shows(cell, every.summary[figure].as_f64().expect("a figure")), "{figure}: {cells:?}");
    }

    choose(&e, &every.id).await;
    let detail = format!("[data-testid='eval-detail'][data-eval-id='{}']", every.id);
    e.wait_for(By::Css(detail.clone())).await;
    assert_drawn_from(&e, &detail, &every.summary, true).await;

    e.find(tid("evals-compare")).await.expect("Compare").click().await.expect("turn Compare on");
    choose(&e, &supported.id).await;
    e.wait_for(tid("eval-compare")).await;
    let mut sides = Vec::new();
    for side in e.driver.find_all(tid("eval-side")).await.expect("sides") {
        sides.push(side.attr("data-eval-id").await.ok().flatten().unwrap_or_default());
    }
    assert_eq!(sides, [every.id.clone(), supported.id.clone()], "both, the earlier as A");
    for kept in [&every, &supported] {
        let side = format!("[data-testid='eval-side'][data-eval-id='{}']", kept.id);
        assert_drawn_from(&e, &side, &kept.summary, false).await;
    }
    for figure in ["precision", "recall", "f1"] {
        let delta = texts(&e, &format!("[data-testid='eval-delta'][data-figure='{figure}'] .delta")).await;
        let expected = supported.summary[figure].as_f64().expect("B") - every.summary[figure].as_f64().expect("A");
        assert!(delta.len() == 1 && shows(&delta[0], expected), "{figure}: {delta:?}, B − A = {expected}");
    }
    assert_eq!(e.count(tid("eval-detail")).await, 0, "two chosen are compared, not shown one by one");
    e.driver.clone().quit().await.ok();
}
