//! `conclave review --provider openai` against a real OpenAI-compatible server:
//! llama-cpp-python's (installed pinned from PyPI by `scripts/fetch-llama-server.sh`)
//! serving the default SmolLM2 model on loopback. It rejects a nested `json_schema`
//! with HTTP 500, so `auto` must step down once to `json_object_schema`; the next
//! review in the same store must start there (the server's log shows no rejected
//! call); and `conclave providers --probe` must say so too.
//!
//! That server's grammar lets raw newlines into JSON strings, which Conclave reads as
//! escaped; should a 135M model still leave an agent's answer invalid after every
//! retry (exit 4), the review is done once more, so the dialect checks run on a
//! review that finished.

use conclave_testkit::llama_server::{LlamaServer, small_change, small_review_conclave};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

const CLI: &str = env!("CARGO_BIN_EXE_conclave");

fn conclave(dir: &Path, db: &Path, server: &LlamaServer, args: &[&str]) -> Output {
    let mut cmd = Command::new(CLI);
    cmd.args(args)
        .current_dir(dir)
        .env("CONCLAVE_DB", db)
        .env("CONCLAVE_CONFIG_DIR", dir.join("config"))
        .env("OPENAI_BASE_URL", &server.base)
        // One model answers one request at a time: the agents take turns.
        .env("CONCLAVE_PROVIDER_LIMITS", "openai=1");
    for var in ["OPENAI_API_KEY", "OPENAI_OUTPUT_DIALECT", "ANTHROPIC_API_KEY"] {
        cmd.env_remove(var);
    }
    cmd.output().expect("conclave runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A review with the store `db`: its JSON report, or `Err` when the model's output
/// stayed invalid (exit 4). Anything else fails the test.
fn review(dir: &Path, db: &Path, repo: &Path, server: &LlamaServer) -> Result<Value, String> {
    let (repo, conclave_file) = (repo.display().to_string(), small_review_conclave().display().to_string());
    let args =
        ["review", &repo, "--base", "HEAD~1", "--conclave", &conclave_file, "--provider", "openai", "--format", "json"];
    let out = conclave(dir, db, server, &args);
    match out.status.code() {
        Some(0) => Ok(serde_json::from_slice(&out.stdout).expect("a JSON report")),
        Some(4) => Err(text(&out.stderr)),
        code => panic!("the review exits {code:?}: {}\nserver log:\n{}", text(&out.stderr), server.log_text()),
    }
}

/// The events of a stored run, by type.
fn events_of(dir: &Path, db: &Path, server: &LlamaServer, run_id: &str, kind: &str) -> Vec<Value> {
    let out = conclave(dir, db, server, &["runs", "show", run_id, "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let shown: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    shown["events"].as_array().expect("events").iter().filter(|e| e["type"] == kind).cloned().collect()
}

#[test]
fn a_review_against_llama_cpp_python_steps_down_once_and_the_next_starts_from_the_store() {
    let _cores = crate::MODEL_CORES.blocking_lock();
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = small_change(dir.path());
    let server = LlamaServer::start(dir.path(), 1);

    let mut db = dir.path().join("runs.db");
    let first = review(dir.path(), &db, &repo, &server).unwrap_or_else(|why| {
        eprintln!("an agent's output stayed invalid; reviewing again from an empty store:\n{why}");
        db = dir.path().join("runs-again.db");
        review(dir.path(), &db, &repo, &server).expect("the review succeeds")
    });
    assert_eq!(first["status"], "succeeded");
    let run_id = first["run_id"].as_str().expect("run id").to_string();
    let dialects = first["review"]["dialects"].as_array().expect("the report names each agent's dialect");
    assert_eq!(dialects.len(), 4, "{dialects:?}");
    assert!(dialects.iter().all(|d| d["dialect"] == "json_object_schema"), "{dialects:?}");
    let downgrades = events_of(dir.path(), &db, &server, &run_id, "dialect_downgraded");
    assert_eq!(downgrades.len(), 1, "one step down, recorded once: {downgrades:?}");
    assert_eq!(
        (downgrades[0]["from"].as_str(), downgrades[0]["to"].as_str()),
        (Some("json_schema"), Some("json_object_schema"))
    );
    assert!(downgrades[0]["note"]["message"].as_str().is_some_and(|m| m.contains("Input should be")), "{downgrades:?}");
    let completed = events_of(dir.path(), &db, &server, &run_id, "node_completed");
    let agents: Vec<&Value> =
        completed.iter().filter(|e| e["node_id"] != "change" && e["node_id"] != "report").collect();
    assert_eq!(agents.len(), 4, "every agent answered with schema-valid JSON: {completed:?}");
    assert!(agents.iter().all(|e| e["output"]["format"] == "json"));
    let rejected = server.rejected_calls();
    assert!(rejected >= 1, "the server rejected the first dialect:\n{}", server.log_text());

    let second = review(dir.path(), &db, &repo, &server)
        .or_else(|_| review(dir.path(), &db, &repo, &server))
        .expect("the second review succeeds");
    assert_eq!(second["status"], "succeeded");
    assert_eq!(server.rejected_calls(), rejected, "the second review sends no rejected first call");
    let run_id = second["run_id"].as_str().expect("run id");
    assert!(events_of(dir.path(), &db, &server, run_id, "dialect_downgraded").is_empty());
    let lowered = events_of(dir.path(), &db, &server, run_id, "schema_lowered");
    assert!(lowered.iter().all(|e| e["dialect"] == "json_object_schema"), "it starts from the store: {lowered:?}");

    let probe = conclave(dir.path(), &db, &server, &["providers", "--probe", "--provider", "openai"]);
    let said = text(&probe.stdout);
    assert_eq!(probe.status.code(), Some(0), "{said}{}", text(&probe.stderr));
    assert!(said.contains("dialect json_object_schema") && said.contains(&server.base), "{said}");
    assert!(said.contains("rejected json_schema") && said.contains("Input should be"), "{said}");
}
