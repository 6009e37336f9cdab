//! One review pipeline: the same review started with `conclave review` and with
//! `POST /api/runs` gives the same report in every format, apart from the run id.
//! The `--provider` switch and the local-model fallback behave the same on both
//! paths, and the fallback's notice is the same line.
//!
//! The CLI is the real binary (the test harness build, which also knows the fake
//! provider); the API is `conclave serve`'s app on a loopback socket. OpenAI is a fake
//! server that answers every schema with a minimal valid instance; the fallback runs
//! the embedded local model for real.

use conclave_core::Secret;
use conclave_engine::Engine;
use conclave_schema::SchemaCatalog;
use conclave_server::Workspace;
use conclave_server::api::{AppState, EditorSource, Security, app};
use conclave_server::workspace::{engine_config, open_store};
use conclave_testkit::answers::chat_completion_answer;
use conclave_testkit::{FakeServer, git};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

const CLI: &str = env!("CARGO_BIN_EXE_conclave-testbed");
const KEY: &str = "sk-review-paths-0123456789";
const FORMATS: [&str; 4] = ["markdown", "json", "sarif", "rdjsonl"];

/// A repository whose `feature` branch changes `src/lib.rs` on top of `main`.
fn repository(dir: &Path) -> PathBuf {
    let repo = dir.join("repo");
    std::fs::create_dir_all(repo.join("src")).expect("mkdir");
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("src/lib.rs"), "pub fn one() -> i32 {\n    1\n}\n").expect("write");
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "one"]);
    git(&repo, &["checkout", "-q", "-b", "feature"]);
    std::fs::write(repo.join("src/lib.rs"), "pub fn one() -> i32 {\n    1\n}\n\npub fn two() -> i32 {\n    3\n}\n")
        .expect("write");
    git(&repo, &["commit", "-q", "-am", "two"]);
    repo
}

/// A small review conclave: one reviewer on Anthropic (which has no key here), one
/// on OpenAI, both findings-shaped, compared before the output. The budget leaves the
/// embedded model room: its findings for this change took 85 tokens in one run and
/// more than 400 in another (CI, with the impact in the input).
fn mixed_conclave() -> Value {
    let agent = |id: &str, provider: &str, model: &str, y: i64| {
        json!({"id": id, "kind": "agent", "label": id, "position": {"x": 200, "y": y}, "agent": {
            "provider": provider, "model": model, "max_tokens": 1024,
            "system_prompt": format!("You are the {id} reviewer. Report problems in the change as findings."),
            "output_schema_ref": "review.findings.v1", "output_retries": 1}})
    };
    json!({"version": 1, "id": "mixed", "name": "Mixed", "nodes": [
        {"id": "change", "kind": "trigger", "label": "Change", "position": {"x": 0, "y": 0}},
        agent("security", "anthropic", "claude-sonnet-4-5", 0),
        agent("correctness", "openai", "gpt-4.1-mini", 120),
        {"id": "report", "kind": "output", "label": "Report", "position": {"x": 400, "y": 0}}
    ], "edges": [
        {"from": "change", "to": "security"}, {"from": "change", "to": "correctness"},
        {"from": "security", "to": "report"}, {"from": "correctness", "to": "report"}
    ]})
}

/// The environment both paths see: OpenAI at the fake server, no Anthropic key.
fn env_of(server: &FakeServer) -> Vec<(&'static str, String)> {
    vec![
        ("OPENAI_BASE_URL", format!("{}/v1", server.base)),
        ("OPENAI_API_KEY", KEY.to_string()),
        // The local model beside the other tests on two cores: one thread, or llama.cpp's
        // threads spin against each other and every test slows down.
        ("CONCLAVE_LOCAL_THREADS", "1".to_string()),
    ]
}

struct Paths {
    dir: tempfile::TempDir,
    repo: PathBuf,
    server: FakeServer,
    api: String,
}

impl Paths {
    async fn start() -> Paths {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = repository(dir.path());
        let work = dir.path().join("work");
        std::fs::create_dir_all(work.join("conclaves")).expect("mkdir");
        let text = serde_json::to_string_pretty(&mixed_conclave()).expect("json") + "\n";
        std::fs::write(work.join("conclaves/mixed.conclave.json"), text).expect("write");
        let server = FakeServer::start_responding(chat_completion_answer).await;
        let env: Vec<(&str, String)> = env_of(&server);
        let lookup = move |name: &str| {
            env.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.clone())
                .or_else(|| std::env::var(name).ok().filter(|_| name.starts_with("CONCLAVE_")))
        };
        let mut providers = conclave_providers::builtin_with_env(&lookup, conclave_server::SECRET_VARIABLES);
        providers.register(std::sync::Arc::new(conclave_doubles::FakeProvider::new("fake")));
        let workspace = Workspace::new(work.join("conclaves"), SchemaCatalog::for_workspace(&work), providers.clone());
        let store = open_store(&dir.path().join("api.db")).await.expect("store");
        let engine = Engine::new(providers, store, engine_config(16).await);
        let security = Security {
            token: Some(Secret::new("t0ken")),
            allowed_hosts: Vec::new(),
            repo_roots: vec![dir.path().to_path_buf()],
            allowed_programs: Vec::new(),
        };
        // The API's reviews run in this process: their `conclave scan` lanes run the
        // same binary as the command line's.
        conclave_review::analyzers::use_conclave_executable(CLI.into());
        let state = AppState::new(workspace, engine, security, EditorSource::embedded());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let api = format!("http://{}", listener.local_addr().expect("addr"));
        tokio::spawn(async move {
            axum::serve(listener, axum::ServiceExt::<axum::extract::Request>::into_make_service(app(state))).await
        });
        Paths { dir, repo, server, api }
    }

    fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    /// Runs the CLI in the work directory, off the async runtime.
    async fn cli(&self, args: Vec<String>) -> Output {
        let (work, env, db) = (self.work(), env_of(&self.server), self.dir.path().join("cli.db"));
        tokio::task::spawn_blocking(move || {
            let mut command = std::process::Command::new(CLI);
            command
                .args(&args)
                .current_dir(&work)
                .env("CONCLAVE_DB", db)
                .env("CONCLAVE_CONFIG_DIR", work.join("config"))
                .env_remove("ANTHROPIC_API_KEY")
                .env_remove("CONCLAVE_LOG")
                // Outside CI: in CI a missing key is refused rather than falling back.
                .env_remove("CI");
            for (k, v) in env {
                command.env(k, v);
            }
            command.output().expect("the CLI runs")
        })
        .await
        .expect("joined")
    }

    /// `conclave review` with `extra` arguments: its notices and its stored reports.
    async fn review_by_cli(&self, extra: &[&str]) -> (String, Vec<String>) {
        let mut args: Vec<String> =
            ["review", &self.repo.display().to_string(), "--base", "main"].map(String::from).into();
        args.extend(extra.iter().map(|a| a.to_string()));
        let out = self.cli(args).await;
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        let list = self.cli(["runs", "list", "--json", "--limit", "1"].map(String::from).into()).await;
        let runs: Value = serde_json::from_slice(&list.stdout).expect("runs list is JSON");
        let run_id = runs[0]["id"].as_str().expect("a run").to_string();
        let mut reports = Vec::new();
        for format in FORMATS {
            let out = self.cli(["runs", "report", &run_id, "--format", format].map(String::from).into()).await;
            assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
            reports.push(String::from_utf8_lossy(&out.stdout).replace(&run_id, "<run>"));
        }
        let notices = stderr.lines().filter(|l| l.starts_with("note: ")).collect::<Vec<_>>().join("\n");
        (notices, reports)
    }

    /// `POST /api/runs` with `review`: its notices and its reports once stored.
    async fn review_by_api(&self, conclave_id: &str, review: Value) -> (String, Vec<String>) {
        let client = reqwest::Client::new();
        let mut target = json!({"repository": self.repo.display().to_string(), "base": "main"});
        if let (Some(target), Some(extra)) = (target.as_object_mut(), review.as_object()) {
            target.extend(extra.clone());
        }
        let response = client
            .post(format!("{}/api/runs", self.api))
            .bearer_auth("t0ken")
            .json(&json!({"conclave_id": conclave_id, "review": target}))
            .send()
            .await
            .expect("POST /api/runs");
        assert_eq!(response.status().as_u16(), 202);
        let started: Value = response.json().await.expect("JSON");
        let run_id = started["run_id"].as_str().expect("run id").to_string();
        let notices = started["notices"]
            .as_array()
            .map_or_else(Vec::new, |n| n.iter().filter_map(Value::as_str).map(str::to_string).collect::<Vec<_>>());
        let mut reports = Vec::new();
        for format in FORMATS {
            let url = format!("{}/api/runs/{run_id}/report?format={format}", self.api);
            let deadline = Instant::now() + Duration::from_secs(300);
            let text = loop {
                let response = client.get(&url).bearer_auth("t0ken").send().await.expect("GET report");
                if response.status().is_success() {
                    break response.text().await.expect("text");
                }
                assert!(Instant::now() < deadline, "no {format} report for run {run_id} after 5 minutes");
                tokio::time::sleep(Duration::from_millis(200)).await;
            };
            reports.push(text.replace(&run_id, "<run>"));
        }
        (notices.join("\n"), reports)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_and_the_api_give_the_same_review_with_provider_and_with_fallback() {
    let paths = Paths::start().await;

    // --provider: every agent of the built-in review conclave moves to OpenAI.
    let (cli_notices, cli) = paths.review_by_cli(&["--provider", "openai"]).await;
    let (api_notices, api) = paths.review_by_api("light-code-review", json!({"provider": "openai"})).await;
    for (i, format) in FORMATS.iter().enumerate() {
        assert_eq!(cli[i], api[i], "the {format} reports differ between the CLI and the API");
    }
    assert!(cli_notices.is_empty() && api_notices.is_empty(), "{cli_notices} / {api_notices}");
    let envelope: Value = serde_json::from_str(&cli[1]).expect("JSON report");
    assert_eq!(envelope["status"], "succeeded", "{envelope}");
    assert_eq!(envelope["model"], "gpt-4.1-mini", "--provider without --model uses the provider's default");

    // Fallback: the agent on Anthropic (no key) runs on the local model, on both paths.
    let (cli_notices, cli) = paths.review_by_cli(&["--conclave", "mixed"]).await;
    let (api_notices, api) = paths.review_by_api("mixed", json!({})).await;
    let fallback = "note: a provider is not configured (anthropic: ANTHROPIC_API_KEY is not set); running security on the local model (smollm2-135m) instead";
    assert_eq!(api_notices, fallback, "the API reports the fallback, and no command-line flag");
    assert_eq!(cli_notices, format!("{fallback}; pass --no-fallback to fail instead"), "the CLI names its flag");
    for (i, format) in FORMATS.iter().enumerate() {
        assert_eq!(cli[i], api[i], "the {format} reports differ between the CLI and the API");
    }
    assert!(
        cli[0].contains("local") && cli[0].contains("smollm2-135m"),
        "the report shows the local model:\n{}",
        cli[0]
    );
}
