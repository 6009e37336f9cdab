//! `conclave review --provider openai` against a real OpenAI-compatible server:
//! llama-cpp-python's (installed pinned from PyPI by `scripts/fetch-llama-server.sh`)
//! serving the default SmolLM2 model on loopback. It rejects a nested `json_schema`
//! with HTTP 500, so `auto` must step down once to `json_object_schema`; the next
//! review in the same store must start there (the server's log shows no rejected
//! call); and `conclave providers --probe` must say so too.

use conclave_testkit::{cached_tool, git};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const CLI: &str = env!("CARGO_BIN_EXE_conclave");

/// How long the server may take to load the model and answer.
const STARTUP: Duration = Duration::from_secs(120);

/// The server process, killed when the test ends however it ends.
struct LlamaServer {
    child: Child,
    base: String,
    log: PathBuf,
}

impl LlamaServer {
    fn start(dir: &Path) -> LlamaServer {
        let python = cached_tool("llama-server-venv/bin/python", "scripts/fetch-llama-server.sh");
        let model = cached_tool("models/SmolLM2-135M-Instruct.Q4_1.gguf", "scripts/fetch-model.sh");
        let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
        let log = dir.join("llama-server.log");
        let file = std::fs::File::create(&log).expect("log file");
        let child = Command::new(python)
            .args(["-m", "llama_cpp.server", "--host", "127.0.0.1", "--port", &port.to_string()])
            .arg("--model")
            .arg(&model)
            // Room for a review's prompt; requests queue instead of interrupting each other.
            .args(["--n_ctx", "8192", "--interrupt_requests", "False", "--n_threads", "2"])
            .stdout(Stdio::from(file.try_clone().expect("log")))
            .stderr(Stdio::from(file))
            .spawn()
            .expect("the llama-cpp-python server starts");
        let server = LlamaServer { child, base: format!("http://127.0.0.1:{port}/v1"), log };
        server.wait_until_up();
        server
    }

    fn wait_until_up(&self) {
        let started = Instant::now();
        while started.elapsed() < STARTUP {
            if self.lists_models() {
                return;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        panic!("the server did not answer within {STARTUP:?}; its log:\n{}", self.log_text());
    }

    /// Whether `GET /v1/models` answers 200.
    fn lists_models(&self) -> bool {
        let address = self.base.trim_start_matches("http://").trim_end_matches("/v1");
        let Ok(mut stream) = std::net::TcpStream::connect(address) else { return false };
        let request = format!("GET /v1/models HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
        let mut answer = String::new();
        stream.write_all(request.as_bytes()).is_ok()
            && stream.read_to_string(&mut answer).is_ok()
            && answer.starts_with("HTTP/1.1 200")
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The calls the server answered with HTTP 500 so far, from its access log.
    fn rejected_calls(&self) -> usize {
        self.log_text().lines().filter(|l| l.contains("POST /v1/chat/completions") && l.contains(" 500")).count()
    }
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn conclave(dir: &Path, server: &LlamaServer, args: &[&str]) -> Output {
    let mut cmd = Command::new(CLI);
    cmd.args(args)
        .current_dir(dir)
        .env("CONCLAVE_DB", dir.join("runs.db"))
        .env("CONCLAVE_CONFIG_DIR", dir.join("config"))
        .env("OPENAI_BASE_URL", &server.base);
    for var in ["OPENAI_API_KEY", "OPENAI_OUTPUT_DIALECT", "ANTHROPIC_API_KEY"] {
        cmd.env_remove(var);
    }
    cmd.output().expect("conclave runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The review conclave made for small local models (no tools, short answers).
fn small_review() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/local-server/local-server-review.conclave.json")
        .display()
        .to_string()
}

fn review(dir: &Path, repo: &Path, server: &LlamaServer) -> Value {
    let repo = repo.display().to_string();
    let out = conclave(
        dir,
        server,
        &[
            "review",
            &repo,
            "--base",
            "HEAD~1",
            "--conclave",
            &small_review(),
            "--provider",
            "openai",
            "--format",
            "json",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "the review succeeds: {}\nserver log:\n{}",
        text(&out.stderr),
        server.log_text()
    );
    serde_json::from_slice(&out.stdout).expect("a JSON report")
}

/// The events of a stored run, by type.
fn events_of(dir: &Path, server: &LlamaServer, run_id: &str, kind: &str) -> Vec<Value> {
    let out = conclave(dir, server, &["runs", "show", run_id, "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let shown: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    shown["events"].as_array().expect("events").iter().filter(|e| e["type"] == kind).cloned().collect()
}

#[test]
fn a_review_against_llama_cpp_python_steps_down_once_and_the_next_starts_from_the_store() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).expect("mkdir");
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("calc.py"), "def add(a, b):\n    return a + b\n").expect("write");
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "add"]);
    std::fs::write(repo.join("calc.py"), "def add(a, b):\n    return a - b\n\n\ndef div(a, b):\n    return a / b\n")
        .expect("write");
    git(&repo, &["commit", "-q", "-am", "div"]);
    let server = LlamaServer::start(dir.path());

    let first = review(dir.path(), &repo, &server);
    assert_eq!(first["status"], "succeeded");
    let run_id = first["run_id"].as_str().expect("run id").to_string();
    let dialects = first["review"]["dialects"].as_array().expect("the report names each agent's dialect");
    assert_eq!(dialects.len(), 4, "{dialects:?}");
    assert!(dialects.iter().all(|d| d["dialect"] == "json_object_schema"), "{dialects:?}");
    let downgrades = events_of(dir.path(), &server, &run_id, "dialect_downgraded");
    assert_eq!(downgrades.len(), 1, "one step down, recorded once: {downgrades:?}");
    assert_eq!(
        (downgrades[0]["from"].as_str(), downgrades[0]["to"].as_str()),
        (Some("json_schema"), Some("json_object_schema"))
    );
    assert!(downgrades[0]["note"]["message"].as_str().is_some_and(|m| m.contains("Input should be")), "{downgrades:?}");
    let completed = events_of(dir.path(), &server, &run_id, "node_completed");
    let agents: Vec<&Value> =
        completed.iter().filter(|e| e["node_id"] != "change" && e["node_id"] != "report").collect();
    assert_eq!(agents.len(), 4, "every agent answered with schema-valid JSON: {completed:?}");
    assert!(agents.iter().all(|e| e["output"]["format"] == "json"));
    let rejected = server.rejected_calls();
    assert!(rejected >= 1, "the server rejected the first dialect:\n{}", server.log_text());

    let second = review(dir.path(), &repo, &server);
    assert_eq!(second["status"], "succeeded");
    assert_eq!(server.rejected_calls(), rejected, "the second review sends no rejected first call");
    let run_id = second["run_id"].as_str().expect("run id");
    assert!(events_of(dir.path(), &server, run_id, "dialect_downgraded").is_empty());
    let lowered = events_of(dir.path(), &server, run_id, "schema_lowered");
    assert!(lowered.iter().all(|e| e["dialect"] == "json_object_schema"), "it starts from the store: {lowered:?}");

    let probe = conclave(dir.path(), &server, &["providers", "--probe", "--provider", "openai"]);
    let said = text(&probe.stdout);
    assert_eq!(probe.status.code(), Some(0), "{said}{}", text(&probe.stderr));
    assert!(said.contains("dialect json_object_schema") && said.contains(&server.base), "{said}");
    assert!(said.contains("rejected json_schema") && said.contains("Input should be"), "{said}");
}
