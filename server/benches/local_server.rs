//! A review against a real OpenAI-compatible model server: llama-cpp-python's, serving
//! the default SmolLM2 model on loopback, reviewed with `conclave review --provider
//! openai` (the release binary) and the small-model review conclave of
//! `tests/fixtures/local-server/`.
//!
//! Run with `cargo bench -p conclave-server --bench local_server` after
//! `bash scripts/fetch-llama-server.sh` (the set-up runs it). The first review starts
//! from an empty store, so it pays for the step down from `json_schema`; the others
//! start from the stored dialect. For each review: the wall time of the command, the
//! model time (the sum of the server's own generation times, which it logs per
//! request and runs one at a time), and Conclave's overhead, the rest: process start,
//! git, planning, HTTP, validation, the store and the report.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const REVIEWS: usize = 5;

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn cache() -> PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .expect("HOME is set")
        .join("conclave")
}

fn git(repo: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(args)
        .current_dir(repo)
        .env("GIT_AUTHOR_NAME", "bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.com")
        .env("GIT_COMMITTER_NAME", "bench")
        .env("GIT_COMMITTER_EMAIL", "bench@example.com")
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "git {args:?}");
}

fn lists_models(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else { return false };
    let request = format!("GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n");
    let mut answer = String::new();
    stream.write_all(request.as_bytes()).is_ok()
        && stream.read_to_string(&mut answer).is_ok()
        && answer.starts_with("HTTP/1.1 200")
}

/// The server's generation time in `log` (its `total time` line per request), in ms.
fn model_ms(log: &str) -> f64 {
    log.lines()
        .filter(|l| l.starts_with("llama_perf_context_print:") && l.contains("total time ="))
        .filter_map(|l| l.split('=').nth(1)?.split("ms").next()?.trim().parse::<f64>().ok())
        .sum()
}

/// Starts the server on a free port, logging into `dir`: the process, its port and log.
fn start_server(dir: &Path, python: &Path, model: &Path) -> (Server, u16, PathBuf) {
    let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("port").port();
    let log_path = dir.join("server.log");
    let log = std::fs::File::create(&log_path).expect("log");
    let server = Server(
        Command::new(python)
            .args(["-m", "llama_cpp.server", "--host", "127.0.0.1", "--port", &port.to_string(), "--model"])
            .arg(model)
            .args(["--n_ctx", "8192", "--interrupt_requests", "False", "--n_threads", "2"])
            .stdout(Stdio::from(log.try_clone().expect("log")))
            .stderr(Stdio::from(log))
            .spawn()
            .expect("the server starts"),
    );
    let started = Instant::now();
    while !lists_models(port) {
        assert!(started.elapsed() < Duration::from_secs(120), "the server did not start");
        std::thread::sleep(Duration::from_millis(200));
    }
    (server, port, log_path)
}

/// A repository whose last commit changes two small functions.
fn fixture_repo(dir: &Path) -> PathBuf {
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).expect("mkdir");
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("calc.py"), "def add(a, b):\n    return a + b\n").expect("write");
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "add"]);
    std::fs::write(repo.join("calc.py"), "def add(a, b):\n    return a - b\n\n\ndef div(a, b):\n    return a / b\n")
        .expect("write");
    git(&repo, &["commit", "-q", "-am", "div"]);
    repo
}

fn main() {
    let python = cache().join("llama-server-venv/bin/python");
    let model = cache().join("models/SmolLM2-135M-Instruct.Q4_1.gguf");
    if !python.is_file() || !model.is_file() {
        eprintln!(
            "llama-cpp-python or the model is missing: run `bash scripts/fetch-llama-server.sh` and `bash scripts/fetch-model.sh`"
        );
        std::process::exit(1);
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let (_server, port, log_path) = start_server(dir.path(), &python, &model);
    let repo = fixture_repo(dir.path());
    let conclave =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/local-server/local-server-review.conclave.json");

    println!(
        "review of a 2-function change by 3 reviewers and a Writer, llama-cpp-python 0.3.36 + SmolLM2-135M, 2 threads"
    );
    println!("review    wall s   model s   other s   model  status");
    let mut shares = Vec::new();
    for i in 0..REVIEWS {
        let before = std::fs::read_to_string(&log_path).unwrap_or_default().len();
        let started = Instant::now();
        let out = Command::new(env!("CARGO_BIN_EXE_conclave"))
            .arg("review")
            .arg(&repo)
            .args(["--base", "HEAD~1", "--provider", "openai", "--format", "json", "--conclave"])
            .arg(&conclave)
            .current_dir(dir.path())
            .env("CONCLAVE_DB", dir.path().join("runs.db"))
            .env("OPENAI_BASE_URL", format!("http://127.0.0.1:{port}/v1"))
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_OUTPUT_DIALECT")
            .output()
            .expect("conclave review runs");
        let wall = started.elapsed().as_secs_f64();
        let text = std::fs::read_to_string(&log_path).unwrap_or_default();
        let model = model_ms(&text[before.min(text.len())..]) / 1000.0;
        let status =
            if out.status.success() { "succeeded".to_string() } else { format!("exit {:?}", out.status.code()) };
        let label = if i == 0 { "first".to_string() } else { format!("{}", i + 1) };
        println!("{label:<6} {wall:>9.2} {model:>9.2} {:>9.2} {:>6.1}%  {status}", wall - model, 100.0 * model / wall);
        if i > 0 && out.status.success() {
            shares.push((wall, model));
        }
    }
    if !shares.is_empty() {
        let (wall, model) = shares.iter().fold((0.0, 0.0), |(w, m), (a, b)| (w + a, m + b));
        println!(
            "after the first: {:.2} s per review on average, {:.1}% of it model time, {:.2} s Conclave and the rest",
            wall / shares.len() as f64,
            100.0 * model / wall,
            (wall - model) / shares.len() as f64
        );
    }
}
