//! `conclave validate` as a user runs it: the real binary on fixture catalogs, with
//! the exact messages snapshot-tested.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("server/ has a parent").to_path_buf()
}

fn conclave(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_conclave"))
        .args(args)
        .current_dir(workspace_root())
        .env("CONCLAVE_CONFIG_DIR", "tests/fixtures/config")
        .env_remove("CONCLAVE_DB")
        .output()
        .expect("conclave runs")
}

#[test]
fn broken_catalog_reports_every_problem_and_exits_2() {
    let out = conclave(&["validate", "tests/fixtures/broken"]);
    assert_eq!(out.status.code(), Some(2), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).expect("utf-8");
    insta::assert_snapshot!("broken_catalog", stdout);
}

#[test]
fn every_broken_fixture_has_at_least_one_diagnostic_naming_file_and_path() {
    let dir = workspace_root().join("tests/fixtures/broken");
    let out = conclave(&["validate", "--json", "tests/fixtures/broken"]);
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect();
    let mut fixtures = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("fixtures dir") {
        let name = entry.expect("entry").file_name().to_string_lossy().into_owned();
        if name.ends_with(".conclave.json") {
            fixtures.push(name);
        }
    }
    assert!(fixtures.len() >= 12, "at least 12 broken fixtures, found {}", fixtures.len());
    for fixture in fixtures {
        let hits: Vec<&serde_json::Value> =
            lines.iter().filter(|d| d["file"].as_str().is_some_and(|f| f.ends_with(&fixture))).collect();
        assert!(!hits.is_empty(), "{fixture} produced no diagnostic");
        for d in hits {
            assert!(d["path"].is_string() && d["subject"].is_object() && d["code"].is_string(), "{d}");
        }
    }
}

#[test]
fn a_clean_catalog_exits_0() {
    let out = conclave(&["validate", "conclaves", "tests/fixtures/valid"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("0 error(s)"), "{stdout}");
}

#[test]
fn a_missing_path_is_an_error_that_says_so() {
    let out = conclave(&["validate", "no/such/dir"]);
    assert_eq!(out.status.code(), Some(2));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("error[not-found]: no/such/dir does not exist"), "{stdout}");
}

#[test]
fn schema_lower_prints_the_lowered_schema_and_every_change() {
    let out =
        conclave(&["schema", "lower", "tests/fixtures/schemas/corpus/02-optional-fields.json", "--provider", "openai"]);
    assert_eq!(out.status.code(), Some(0));
    let lowered: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is the lowered schema");
    assert_eq!(lowered["required"], serde_json::json!(["name", "nickname", "age", "tags"]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("note[tightened]: /properties/age: optional property `age` is required and nullable"),
        "{stderr}"
    );
    assert!(stderr.ends_with("4 change(s), 0 losing meaning for openai\n"), "{stderr}");

    let strict = conclave(&["schema", "lower", "review.findings.v1", "--provider", "anthropic", "--strict"]);
    assert_eq!(strict.status.code(), Some(2), "meaning losses fail --strict");
    assert!(
        String::from_utf8_lossy(&strict.stderr)
            .contains("warning[dropped]: /properties/findings/items/properties/line/minimum")
    );

    let unknown = conclave(&["schema", "lower", "review.findings.v1", "--provider", "gemini"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&unknown.stderr),
        "error: no schema lowering for provider `gemini`; use one of: anthropic, openai, ollama, claude-code, local \
         (providers without native structured output get the prompt contract)\n",
        "the providers with a lowering are listed from the providers' dialects"
    );
}

#[test]
fn errors_of_each_new_kind_name_the_file_the_node_and_the_json_path() {
    let out = conclave(&[
        "validate",
        "--json",
        "tests/fixtures/broken/route-problems.conclave.json",
        "tests/fixtures/broken/command-problems.conclave.json",
        "tests/fixtures/broken/loop-problems.conclave.json",
        "tests/fixtures/broken/conclave-problems.conclave.json",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let found: Vec<(String, String, String, String)> = String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("each line is JSON"))
        .map(|d| {
            let file = d["file"].as_str().unwrap_or_default().rsplit('/').next().unwrap_or_default().to_string();
            let subject = d["subject"]["id"].as_str();
            (
                file,
                subject.unwrap_or_default().to_string(),
                d["path"].as_str().unwrap_or_default().to_string(),
                d["code"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let route = "route-problems.conclave.json";
    let command = "command-problems.conclave.json";
    let repeat = "loop-problems.conclave.json";
    let child = "conclave-problems.conclave.json";
    for expected in [
        (route, "lanes", "/nodes/2/route/cases/0/when/pointer", "unknown-predicate-path"),
        (route, "lanes", "/nodes/2/route/cases/1/when/pointer", "unknown-predicate-path"),
        (route, "lanes", "/nodes/2/route/cases/2/when/value", "predicate-value"),
        (route, "lanes", "/nodes/2/route/otherwise", "route-case-without-edge"),
        (route, "lanes -> security", "/edges/2/case", "unknown-case"),
        (route, "lanes -> docs", "/edges/3", "edge-without-case"),
        (route, "in -> classify", "/edges/0/case", "case-on-plain-edge"),
        (command, "blank", "/nodes/2/command/argv/0", "empty-program"),
        (command, "bare", "/nodes/3", "missing-command"),
        (command, "probe", "/nodes/4/command/output_schema/properties/n/minimum", "invalid-schema"),
        (command, "writer", "/nodes/5/command", "unexpected-command"),
        (command, "lint", "/nodes/1/command/parse", "schema-unused"),
        (repeat, "verify", "/nodes/2/loop/max_iterations", "loop-without-max"),
        (repeat, "again", "/nodes/3/loop/max_iterations", "loop-max-iterations"),
        (repeat, "verify", "/nodes/2/loop/body/1", "missing-node"),
        (repeat, "verify", "/nodes/2/loop/body/2", "loop-body-kind"),
        (repeat, "verify", "/nodes/2/loop/until/pointer", "unknown-predicate-path"),
        (repeat, "again", "/nodes/3/loop/body/0", "loop-body-shared"),
        (repeat, "in -> check", "/edges/1/to", "edge-crosses-loop"),
        (child, "lane", "/nodes/1/conclave/id", "unknown-conclave"),
        (child, "again", "/nodes/2/conclave/id", "conclave-cycle"),
        (child, "bare", "/nodes/3", "missing-conclave"),
        (child, "writer", "/nodes/4/approval", "unexpected-approval"),
    ] {
        let expected = (expected.0.to_string(), expected.1.to_string(), expected.2.to_string(), expected.3.to_string());
        assert!(found.contains(&expected), "missing {expected:?} in {found:#?}");
    }
}
