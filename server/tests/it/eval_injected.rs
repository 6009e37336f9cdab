//! The shipped dataset `evals/injected-bugs/`, evaluated from its recordings with the
//! real binary and every provider on a closed port: the exact summary, cross-checked
//! against what each hand-written answer was meant to match; a missing recording
//! stops the eval with exit 2; `eval compare` shows what the correctness lane adds;
//! and the Markdown and HTML reports.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::record_replay::offline;

/// The shipped dataset.
fn dataset() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../evals/injected-bugs")
}

/// `conclave eval ARGS` offline: every provider URL on a closed port, no key.
fn offline_eval(workdir: &Path, args: &[String]) -> Output {
    offline(workdir, "eval", args)
}

fn replay_args(recordings: &Path, out: &Path, format: &str, extra: &[&str]) -> Vec<String> {
    let mut args = vec![dataset().display().to_string()];
    args.extend(extra.iter().map(|s| s.to_string()));
    args.extend(["--replay".into(), recordings.display().to_string(), "--format".into(), format.into()]);
    args.extend(["--output-file".into(), out.display().to_string()]);
    args
}

/// The summary without what differs from run to run or checkout to checkout.
fn steady(mut summary: Value) -> Value {
    summary["dataset"] = Value::Null;
    for case in summary["cases_detail"].as_array_mut().into_iter().flatten() {
        case["run_id"] = Value::Null;
    }
    summary
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("json")
}

/// What the Writer's answers were written to score: per case, the golden issues its
/// concerns were meant to match, and how many concerns it has.
fn intended(case: &str, issues: usize) -> (u64, u64, u64) {
    let answers = read_json(&dataset().join("answers").join(format!("{case}.json")));
    let findings = answers["writer"]["findings"].as_array().expect("writer findings");
    let intents = answers["intent"]["writer"].as_array().expect("writer intents");
    let mut hit: Vec<&str> = Vec::new();
    let mut concerns = 0;
    for (finding, intent) in findings.iter().zip(intents) {
        if finding["stance"] == "approval" {
            continue;
        }
        concerns += 1;
        if let Some(g) = intent.as_str()
            && !hit.contains(&g)
        {
            hit.push(g);
        }
    }
    let tp = hit.len() as u64;
    (tp, concerns - tp, issues as u64 - tp)
}

#[test]
fn the_shipped_dataset_scores_exactly_from_its_recordings() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("summary.json");
    let run = offline_eval(dir.path(), &replay_args(&dataset().join("recordings"), &out, "json", &[]));
    assert_eq!(run.status.code(), Some(0), "{}", String::from_utf8_lossy(&run.stderr));
    let summary = read_json(&out);
    for case in summary["cases_detail"].as_array().expect("cases") {
        let id = case["id"].as_str().expect("id");
        let issues = case["matched"].as_array().map_or(0, Vec::len) + case["missed"].as_array().map_or(0, Vec::len);
        let counts = &case["counts"];
        let got = (
            counts["true_positives"].as_u64().unwrap_or(0),
            counts["false_positives"].as_u64().unwrap_or(0),
            counts["false_negatives"].as_u64().unwrap_or(0),
        );
        assert_eq!(got, intended(id, issues), "case {id}: the matching disagrees with what its answers meant: {case}");
    }
    // The headline, in words: 40 of the Writer's 51 concerns match 40 of the 49
    // golden issues (8 invent a problem, 3 repeat one); the snapshot holds the rest.
    assert_eq!(
        summary["counts"],
        serde_json::json!({"true_positives": 40, "false_positives": 11, "false_negatives": 9})
    );
    assert_eq!(
        (summary["precision"].as_f64(), summary["recall"].as_f64(), summary["f1"].as_f64()),
        (Some(0.784314), Some(0.816327), Some(0.8))
    );
    insta::assert_json_snapshot!("injected_bugs_summary", steady(summary));
}

#[test]
fn a_missing_recording_stops_the_eval_with_exit_2_naming_the_node_and_the_hash() {
    let dir = tempfile::tempdir().expect("tempdir");
    let recordings = dir.path().join("recordings");
    std::fs::create_dir_all(&recordings).expect("mkdir");
    let mut removed = None;
    for entry in std::fs::read_dir(dataset().join("recordings")).expect("recordings").flatten() {
        let text = std::fs::read_to_string(entry.path()).expect("read");
        let recording: Value = serde_json::from_str(&text).expect("json");
        // A Writer's call of the default conclave: the other conclave's Writer has the
        // same instructions but no correctness reviewer's output to read.
        let default_writer = recording["request"]["node_id"] == "writer"
            && recording["request"].to_string().contains("Output of `correctness`");
        if removed.is_none() && default_writer {
            removed = recording["hash"].as_str().map(str::to_string);
            continue;
        }
        std::fs::write(recordings.join(entry.file_name()), text).expect("copy");
    }
    let hash = removed.expect("a recording of the writer");
    let out = dir.path().join("summary.json");
    let run = offline_eval(dir.path(), &replay_args(&recordings, &out, "json", &[]));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("node `writer`") && stderr.contains(&hash) && stderr.contains("--record"), "{stderr}");
    assert!(!out.exists(), "no summary from an eval that stopped");
}

#[test]
fn compare_shows_what_the_correctness_lane_adds_with_an_interval() {
    let dir = tempfile::tempdir().expect("tempdir");
    let recordings = dataset().join("recordings");
    let (full, fewer) = (dir.path().join("full.json"), dir.path().join("fewer.json"));
    let without = dataset().join("conclaves/without-correctness.conclave.json").display().to_string();
    for (out, extra) in [(&full, vec![]), (&fewer, vec!["--conclave", without.as_str()])] {
        let run = offline_eval(dir.path(), &replay_args(&recordings, out, "json", &extra));
        assert_eq!(run.status.code(), Some(0), "{}", String::from_utf8_lossy(&run.stderr));
    }
    let compare = |format: &str| {
        let args = ["compare", &full.display().to_string(), &fewer.display().to_string(), "--format", format]
            .map(String::from);
        let run = offline_eval(dir.path(), &args);
        assert_eq!(run.status.code(), Some(0), "{}", String::from_utf8_lossy(&run.stderr));
        String::from_utf8_lossy(&run.stdout).into_owned()
    };
    let comparison: Value = serde_json::from_str(&compare("json")).expect("json");
    let recall =
        comparison["deltas"].as_array().expect("deltas").iter().find(|d| d["figure"] == "recall").expect("recall");
    let delta = recall["delta"].as_f64().expect("delta");
    assert!(delta < 0.0, "recall falls without the correctness lane: {recall}");
    assert!(recall["ci95"]["high"].as_f64().expect("high") < 0.0, "and the fall is significant: {recall}");
    assert_eq!(recall["significant"], true);
    let markdown = compare("markdown");
    assert!(markdown.contains("| recall |") && markdown.contains("significant"), "{markdown}");
}

#[test]
fn the_markdown_and_html_reports_are_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    let recordings = dataset().join("recordings");
    let (markdown, html) = (dir.path().join("eval.md"), dir.path().join("eval.html"));
    for (out, format) in [(&markdown, "markdown"), (&html, "html")] {
        let run = offline_eval(dir.path(), &replay_args(&recordings, out, format, &["--min-support", "2"]));
        assert_eq!(run.status.code(), Some(0), "{}", String::from_utf8_lossy(&run.stderr));
    }
    let markdown = std::fs::read_to_string(&markdown).expect("markdown");
    assert!(markdown.contains("| precision |") || markdown.contains("precision"), "{markdown}");
    let html = std::fs::read_to_string(&html).expect("html");
    assert!(html.starts_with("<!DOCTYPE html>") || html.starts_with("<!doctype html>"), "{html:.200}");
    assert!(html.contains("<svg") && !html.contains("src=\"http"), "self-contained, with charts");
}
