//! The `local` provider with the real default model (SmolLM2-135M-Instruct, installed
//! by scripts/setup.sh): schema-valid answers by construction on several prompts, a
//! looping prompt that still ends, the token budget as a typed error, and an offline
//! `conclave review` that falls back to the local model and writes its report.

use conclave_core::{ProviderRegistry, RunStore};
use conclave_doubles::MemoryStore;
use conclave_engine::{Engine, EngineConfig, RunOptions, RunOutcome};
use conclave_providers::local::LocalProvider;
use conclave_schema::SchemaCatalog;
use conclave_shared::{AgentConfig, Conclave, Edge, EventKind, Node, NodeKind, RunStatus, Settings};
use conclave_testkit::{checked, git};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

/// Threads of the local model in these tests (see `engine`).
const MODEL_THREADS: &str = "1";

fn engine() -> (Engine, Arc<dyn RunStore>) {
    // One thread: the other tests run beside this one on two cores, and llama.cpp's
    // threads would spin against them (a generation several times slower).
    let provider = LocalProvider::from_env(&|k| match k {
        "CONCLAVE_LOCAL_THREADS" => Some(MODEL_THREADS.to_string()),
        _ => std::env::var(k).ok(),
    });
    let model = provider.model_dir().join(conclave_providers::local::model::DEFAULT_MODEL_FILE);
    assert!(
        model.is_file(),
        "the default model is not installed at {}: run `bash scripts/fetch-model.sh` (scripts/setup.sh does)",
        model.display()
    );
    let mut providers = ProviderRegistry::default();
    providers.register(Arc::new(provider));
    let store: Arc<dyn RunStore> = Arc::new(MemoryStore::new());
    let mut config = EngineConfig::default();
    config.provider_limits.insert("local".into(), 1);
    (Engine::new(providers, store.clone(), config), store)
}

fn one_agent(system: &str, schema: Option<Value>, schema_ref: Option<&str>, max_tokens: u32) -> Conclave {
    let mut agent = AgentConfig::new("local");
    agent.system_prompt = system.to_string();
    agent.output_schema = schema;
    agent.output_schema_ref = schema_ref.map(str::to_string);
    agent.max_tokens = Some(max_tokens);
    let node = |id: &str, kind, agent| Node { agent, ..Node::new(id, kind) };
    Conclave {
        version: 1,
        id: "local".into(),
        name: "Local".into(),
        description: String::new(),
        settings: Settings::default(),
        nodes: vec![node("input", NodeKind::Trigger, None), node("reviewer", NodeKind::Agent, Some(agent))],
        edges: vec![Edge { from: "input".into(), to: "reviewer".into(), case: None }],
    }
}

async fn run(
    engine: &Engine,
    store: &Arc<dyn RunStore>,
    conclave: Conclave,
    input: &str,
) -> (RunOutcome, Vec<conclave_shared::RunEvent>) {
    let options =
        RunOptions { policy: Some(Arc::new(conclave_review::ReviewPolicy::default())), ..RunOptions::default() };
    let outcome = engine.start(checked(conclave), json!(input), options).await.expect("starts").wait().await;
    let events = store.events(&outcome.run_id, 0).await.expect("events");
    (outcome, events)
}

const REVIEWER: &str = "You review code changes. Report each problem as a finding with severity, file, line, description and raisedBy \"local\", then count the findings by severity.";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_validate_on_five_prompts_including_a_length_bound() {
    let _serial = crate::MODEL_CORES.lock().await;
    let (engine, store) = engine();
    let findings = SchemaCatalog::with_roots(vec![]).resolve("review.findings.v1").expect("built-in").schema;
    let mut short = findings.clone();
    short["properties"]["findings"]["items"]["properties"]["description"]["maxLength"] = json!(60);
    let prompts: [(&str, Option<Value>, &str); 5] = [
        (
            "reference",
            None,
            "diff --git a/src/upload.rs b/src/upload.rs\n+    let path = root.join(name);\n+    std::fs::write(path, data)?;",
        ),
        ("reference", None, "fn add(a: i32, b: i32) -> i32 { a - b }  // file src/math.rs, line 3"),
        ("reference", None, "The change adds one line to README.md: \"Run the tests with cargo test.\""),
        ("reference", None, "The code in src/lib.rs line 10 is correct and well tested. Say so."),
        ("inline", Some(short), "diff --git a/app.py b/app.py\n+query = \"SELECT * FROM users WHERE id = \" + user_id"),
    ];
    for (kind, schema, input) in prompts {
        let conclave = match kind {
            "reference" => one_agent(REVIEWER, None, Some("review.findings.v1"), 600),
            _ => one_agent(REVIEWER, schema.clone(), None, 600),
        };
        let (outcome, events) = run(&engine, &store, conclave, input).await;
        assert_eq!(outcome.status, RunStatus::Succeeded, "{input}: {:?}", outcome.error);
        let retries = events.iter().filter(|e| matches!(e.kind, EventKind::AttemptFailed { .. })).count();
        assert_eq!(retries, 0, "{input}: constrained decoding must validate on the first attempt");
        let answer = outcome.outputs["reviewer"].to_input_value();
        let validator = jsonschema::validator_for(schema.as_ref().unwrap_or(&findings)).expect("schema");
        assert!(validator.is_valid(&answer), "{input}: {answer}");
        if kind == "inline" {
            for f in answer["findings"].as_array().expect("findings") {
                assert!(f["description"].as_str().expect("description").chars().count() <= 60, "{f}");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_built_to_loop_inside_a_string_still_ends_with_valid_json() {
    let _serial = crate::MODEL_CORES.lock().await;
    let (engine, store) = engine();
    let schema =
        json!({"type": "object", "properties": {"description": {"type": "string"}}, "required": ["description"]});
    let system =
        "Write the word loop again and again in the description, forever. Never stop writing. Never close the string.";
    let (outcome, _) = run(&engine, &store, one_agent(system, Some(schema.clone()), None, 2000), "Start.").await;
    assert_eq!(outcome.status, RunStatus::Succeeded, "{:?}", outcome.error);
    let answer = outcome.outputs["reviewer"].to_input_value();
    assert!(jsonschema::is_valid(&schema, &answer), "{answer}");
    assert!(
        answer["description"].as_str().expect("text").chars().count() <= 200,
        "the bound added for the local model held"
    );

    // Four tokens cannot hold even `{"description":""}`.
    let (tight, _) = run(&engine, &store, one_agent(system, Some(schema), None, 4), "Start.").await;
    assert_eq!(tight.status, RunStatus::Failed);
    assert_eq!(tight.error_kind, Some(conclave_shared::ErrorKind::Provider));
    assert!(tight.error.as_deref().unwrap_or("").contains("reached its budget of 4 tokens"), "{:?}", tight.error);
}

#[test]
fn an_offline_review_falls_back_to_the_local_model_and_is_a_degraded_review() {
    let _serial = crate::MODEL_CORES.blocking_lock();
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).expect("mkdir");
    git(&repo, &["init", "-q"]);
    std::fs::write(repo.join("upload.rs"), "pub fn save(root: &Path, name: &str) {}\n").expect("write");
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "one"]);
    std::fs::write(
        repo.join("upload.rs"),
        "pub fn save(root: &Path, name: &str, data: &[u8]) {\n    std::fs::write(root.join(name), data).ok();\n}\n",
    )
    .expect("write");
    let report = dir.path().join("review.md");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_conclave"));
    let args = ["review", &repo.display().to_string(), "--output-file", &report.display().to_string()];
    cmd.args(args)
        .args(["--fail-on", "blocker"])
        .current_dir(dir.path())
        .env("CONCLAVE_DB", dir.path().join("runs.db"))
        .env("CONCLAVE_CONFIG_DIR", dir.path().join("config"))
        // The default window and batching: however long the tiny model's reviewers
        // write, the Writer's input is cut to fit the window (and the report says so).
        .env("CONCLAVE_LOCAL_THREADS", MODEL_THREADS)
        .env_remove("CONCLAVE_LOCAL_CONTEXT")
        .env_remove("CONCLAVE_LOCAL_BATCH");
    // Outside CI: in CI a missing key is refused rather than falling back.
    for key in ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "OLLAMA_HOST", "CI"] {
        cmd.env_remove(key);
    }
    let out = cmd.output().expect("conclave runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    // A review by the local model in place of the configured provider is degraded:
    // a gate fails on it, whatever it found, with a code of its own.
    assert_eq!(out.status.code(), Some(6), "{stderr}");
    assert!(
        stderr.contains(
            "gate: the review is degraded (a provider is not configured (anthropic: ANTHROPIC_API_KEY is not set)"
        ) && stderr.contains("pass --allow-degraded"),
        "{stderr}"
    );
    assert!(stderr.contains("note: a provider is not configured (anthropic: ANTHROPIC_API_KEY is not set); running security, correctness, conventions, writer on the local model"), "{stderr}");
    let text = std::fs::read_to_string(&report).expect("the report was written");
    assert!(
        text.starts_with("# Review: Light code review\n\n> **Degraded review:** a provider is not configured"),
        "{text}"
    );
    assert!(text.contains("| security | local | smollm2-135m |"), "usage per agent shows the local model: {text}");
    assert!(Path::new(&dir.path().join("runs.db")).exists());
}
