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
