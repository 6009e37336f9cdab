//! llama-cpp-python's OpenAI-compatible server, a real third-party server (installed
//! pinned from PyPI by `scripts/fetch-llama-server.sh`), serving the default SmolLM2
//! model on a free loopback port for the tests and the benchmark that review through
//! the `openai` provider; and the small change they review.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::workspace::{cached_tool, git};

/// How long the server may take to load the model and answer.
const STARTUP: Duration = Duration::from_secs(120);

/// The server process, killed when dropped however the test ends.
#[derive(Debug)]
pub struct LlamaServer {
    child: Child,
    port: u16,
    /// Its base URL, ending in `/v1`: what `OPENAI_BASE_URL` is set to.
    pub base: String,
    log: PathBuf,
}

impl LlamaServer {
    /// Starts the server with `threads` CPU threads, logging into `dir`, and waits
    /// until it lists its model. Tests that run beside others on two cores give it
    /// one thread: two would spin against the other tests' work.
    pub fn start(dir: &Path, threads: u32) -> LlamaServer {
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
            .args(["--n_ctx", "8192", "--interrupt_requests", "False", "--n_threads", &threads.to_string()])
            .stdout(Stdio::from(file.try_clone().expect("log")))
            .stderr(Stdio::from(file))
            .spawn()
            .expect("the llama-cpp-python server starts");
        let server = LlamaServer { child, port, base: format!("http://127.0.0.1:{port}/v1"), log };
        let started = Instant::now();
        while !server.lists_models() {
            assert!(
                started.elapsed() < STARTUP,
                "the server did not answer within {STARTUP:?}:\n{}",
                server.log_text()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
        server
    }

    /// Whether `GET /v1/models` answers 200.
    fn lists_models(&self) -> bool {
        let Ok(mut stream) = TcpStream::connect(("127.0.0.1", self.port)) else { return false };
        let request = format!("GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\r\n", self.port);
        let mut answer = String::new();
        stream.write_all(request.as_bytes()).is_ok()
            && stream.read_to_string(&mut answer).is_ok()
            && answer.starts_with("HTTP/1.1 200")
    }

    /// Everything the server logged so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The calls the server answered with HTTP 500 so far, from its access log.
    pub fn rejected_calls(&self) -> usize {
        self.log_text().lines().filter(|l| l.contains("POST /v1/chat/completions") && l.contains(" 500")).count()
    }
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The server's own generation time in a piece of its log (the `total time` it
/// prints per request), in milliseconds.
pub fn generation_ms(log: &str) -> f64 {
    log.lines()
        .filter(|l| l.starts_with("llama_perf_context_print:") && l.contains("total time ="))
        .filter_map(|l| l.split('=').nth(1)?.split("ms").next()?.trim().parse::<f64>().ok())
        .sum()
}

/// A repository in `dir` whose last commit breaks one small function and adds another.
pub fn small_change(dir: &Path) -> PathBuf {
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

/// The review conclave made for small local models (no tools, bounded findings).
pub fn small_review_conclave() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/local-server/local-server-review.conclave.json")
}
