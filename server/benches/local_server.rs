//! A review against a real OpenAI-compatible model server: llama-cpp-python's, serving
//! the default SmolLM2 model on loopback, reviewed with `conclave review --provider
//! openai` (the release binary) and the small-model review conclave of
//! `tests/fixtures/local-server/`.
//!
//! Run with `cargo bench -p conclave-server --bench local_server` after
//! `bash scripts/fetch-llama-server.sh` and `bash scripts/fetch-model.sh` (the set-up
//! runs both). The first review starts from an empty store, so it pays for the step
//! down from `json_schema`; the others start from the stored dialect. For each review:
//! the wall time of the command, the model time (the sum of the server's own
//! generation times, which it logs per request and runs one at a time), and the rest:
//! Conclave's overhead (process start, git, planning, validation, the store, the
//! report) and the server's HTTP handling.

use conclave_testkit::llama_server::{LlamaServer, generation_ms, small_change, small_review_conclave};
use std::process::Command;
use std::time::Instant;

const REVIEWS: usize = 5;

fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = LlamaServer::start(dir.path(), 2);
    let repo = small_change(dir.path());
    let conclave = small_review_conclave();

    println!(
        "review of a 2-function change by 3 reviewers and a Writer, llama-cpp-python 0.3.36 + SmolLM2-135M, 2 threads"
    );
    println!("review    wall s   model s   other s   model  status");
    let mut shares = Vec::new();
    for i in 0..REVIEWS {
        let before = server.log_text().len();
        let started = Instant::now();
        let out = Command::new(env!("CARGO_BIN_EXE_conclave"))
            .arg("review")
            .arg(&repo)
            .args(["--base", "HEAD~1", "--provider", "openai", "--format", "json", "--conclave"])
            .arg(&conclave)
            .current_dir(dir.path())
            .env("CONCLAVE_DB", dir.path().join("runs.db"))
            .env("OPENAI_BASE_URL", &server.base)
            .env("CONCLAVE_PROVIDER_LIMITS", "openai=1")
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_OUTPUT_DIALECT")
            .output()
            .expect("conclave review runs");
        let wall = started.elapsed().as_secs_f64();
        let text = server.log_text();
        let model = generation_ms(&text[before.min(text.len())..]) / 1000.0;
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
