//! The local model's speed with the default GGUF on a fixed prompt, in one run:
//! a bare llama-cpp-2 baseline (no Conclave code around it), Conclave's generation
//! unconstrained, and Conclave's generation constrained to the findings schema.
//! Targets: Conclave's decode speed at least 0.9x the baseline's, and constrained
//! decoding costing under 5% of decode time.
//!
//! Then sibling agents as a review runs them: three specialists at once, then a
//! Writer, all after a shared prefix of about 5,000 tokens (this repository's
//! `git diff HEAD~3`), batched in one context and one at a time
//! (`CONCLAVE_LOCAL_BATCH=off`). Target: batched at most 0.5x the wall time.
//!
//! Run with `cargo bench -p conclave-providers --bench local` (after scripts/fetch-model.sh);
//! `-- speed` or `-- batch` runs one part.

use conclave_providers::local::generate::{RunSettings, backend, generate, load};
use conclave_providers::local::model::{DEFAULT_MODEL_FILE, model_dir};
use conclave_providers::local::{LocalProvider, LocalRequest};
use conclave_schema::{LowerTarget, SchemaCatalog, lower};
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;
use serde_json::Value;
use std::num::NonZeroU32;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

const THREADS: i32 = 2;
const CONTEXT: u32 = 4096;
const DECODE: usize = 128;
const SYSTEM: &str = "You review code changes. Report each problem as a finding with severity, file, line, description and raisedBy, then count the findings by severity.";
const USER: &str = "diff --git a/src/upload.rs b/src/upload.rs\n@@ -5,6 +5,7 @@\n pub fn save_upload(root: &Path, name: &str, data: &[u8]) -> io::Result<()> {\n-    let relative = sanitize(name)?;\n+    let target = root.join(name);\n+    std::fs::write(target, data)\n }\nThe name comes from the HTTP request. Review the change: is it safe? Cite the file and the new line numbers, and explain what to fix.";

/// Tokens per second.
fn rate(tokens: usize, secs: f64) -> f64 {
    tokens as f64 / secs
}

/// The baseline: llama-cpp-2 alone, greedy, `DECODE` tokens (EOS ignored).
fn baseline(backend: &LlamaBackend, model: &LlamaModel) -> (usize, f64, usize, f64) {
    let template = model.chat_template(None).expect("template");
    let chat = [
        LlamaChatMessage::new("system".into(), SYSTEM.into()).expect("msg"),
        LlamaChatMessage::new("user".into(), USER.into()).expect("msg"),
    ];
    let prompt = model.apply_chat_template(&template, &chat, true).expect("prompt");
    let tokens = model.vocab().tokenize(prompt.as_bytes(), model.vocab().should_add_bos(), true);
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(CONTEXT))
        .with_n_batch(512)
        .with_n_threads(THREADS)
        .with_n_threads_batch(THREADS);
    let mut ctx = model.new_context(backend, params).expect("context");
    let mut batch = LlamaBatch::new(512, 1);
    for (i, t) in tokens.iter().enumerate() {
        batch.add(*t, i as i32, &[0], i == tokens.len() - 1).expect("add");
    }
    let started = Instant::now();
    ctx.decode(&mut batch).expect("prefill");
    let prefill = started.elapsed().as_secs_f64();
    let mut sampler = LlamaSampler::greedy();
    let started = Instant::now();
    for n in 0..DECODE {
        let token = sampler.sample(&ctx, batch.n_tokens() - 1);
        batch.clear();
        batch.add(token, (tokens.len() + n) as i32, &[0], true).expect("add");
        ctx.decode(&mut batch).expect("decode");
    }
    (tokens.len(), prefill, DECODE, started.elapsed().as_secs_f64())
}

fn main() {
    let part = std::env::args().skip(1).find(|a| a == "speed" || a == "batch");
    if part.as_deref() != Some("batch") {
        speed();
    }
    if part.as_deref() != Some("speed") {
        sibling_agents();
    }
}

/// The change the sibling agents share: this repository's last three commits' diff,
/// cut to about 5,000 tokens.
fn shared_change() -> String {
    let out = std::process::Command::new("git").args(["diff", "HEAD~3"]).output().expect("git runs");
    let diff = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(diff.len() > 20_000, "the bench needs a diff of at least 20,000 bytes from `git diff HEAD~3`");
    let cut = (0..=18_000).rev().find(|&i| diff.is_char_boundary(i)).unwrap_or(0);
    format!("You are one of several agents reviewing a code change. The change under review:\n\n{}", &diff[..cut])
}

/// What each agent is told after the shared change.
const SPECIALISTS: [&str; 3] = [
    "You are the security reviewer: report injection, path traversal and secrets in the change.",
    "You are the correctness reviewer: report logic errors, panics and wrong edge cases in the change.",
    "You are the maintainability reviewer: report unclear names, duplication and missing tests in the change.",
];
const WRITER: &str =
    "You are the Writer: merge the specialists' findings below into the final list, without duplicates.";

/// Three specialists at once, then the Writer with their answers; the wall time.
fn review(provider: &LocalProvider, shared: &str, schema: &Value) -> (f64, Vec<String>) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let request = |own: &str, user: String| LocalRequest {
        model: String::new(),
        turns: vec![("system".into(), format!("{shared}\n\n{own}")), ("user".into(), user)],
        schema: Some(schema.clone()),
        max_tokens: 400,
    };
    let answer = |request: LocalRequest| async move {
        let mut running = provider.submit(request).await.unwrap_or_else(|e| panic!("{e}"));
        while running.pieces.recv().await.is_some() {}
        running.outcome().await.unwrap_or_else(|e| panic!("{e}")).text
    };
    let started = Instant::now();
    runtime.block_on(async {
        let asks = SPECIALISTS.map(|own| answer(request(own, "Review the change.".into())));
        let mut answers = futures::future::join_all(asks).await;
        answers.push(answer(request(WRITER, format!("The specialists' findings:\n{}", answers.join("\n")))).await);
        (started.elapsed().as_secs_f64(), answers)
    })
}

/// The sibling agents batched and one at a time.
fn sibling_agents() {
    let shared = shared_change();
    let findings = SchemaCatalog::with_roots(vec![]).resolve("review.findings.v1").expect("built-in").schema;
    let bounded = lower(&findings, LowerTarget::Local).expect("lowers").schema;
    println!("{:<24} {:>8} {:>10} {:>10} {:>10}", "sibling agents", "wall s", "prompt", "decoded", "copied");
    let mut walls = Vec::new();
    for batched in [false, true] {
        let threads = THREADS.to_string();
        let provider = LocalProvider::from_env(&|k| match k {
            "CONCLAVE_LOCAL_THREADS" => Some(threads.clone()),
            "CONCLAVE_LOCAL_BATCH" => Some(if batched { "on" } else { "off" }.into()),
            _ => std::env::var(k).ok(),
        });
        let (wall, answers) = review(&provider, &shared, &bounded);
        let counts = provider.prompt_counts();
        let name = if batched { "batched" } else { "one at a time" };
        println!(
            "{name:<24} {wall:>8.1} {:>10} {:>10} {:>10}",
            counts.prompt_tokens, counts.prefilled_tokens, counts.reused_tokens
        );
        println!("  writer's answer: {}", answers[3].chars().take(120).collect::<String>());
        walls.push(wall);
    }
    println!("batched / one at a time: {:.2}x (target at most 0.5x)", walls[1] / walls[0]);
}

/// Decode speed against bare llama-cpp-2, and the constraint's cost.
fn speed() {
    let path = model_dir(&|k| std::env::var(k).ok()).join(DEFAULT_MODEL_FILE);
    assert!(path.is_file(), "install the default model first: bash scripts/fetch-model.sh");
    let loaded = load(&path).expect("model loads");
    let backend = backend().expect("llama.cpp starts");
    let raw = LlamaModel::load_from_file(backend, &path, &LlamaModelParams::default()).expect("model");
    let settings = RunSettings { threads: THREADS, context: CONTEXT };
    let messages = vec![("system".to_string(), SYSTEM.to_string()), ("user".to_string(), USER.to_string())];
    let findings = SchemaCatalog::with_roots(vec![]).resolve("review.findings.v1").expect("built-in").schema;
    let bounded = lower(&findings, LowerTarget::Local).expect("lowers").schema;
    let never = AtomicBool::new(false);

    println!(
        "{:<28} {:>8} {:>12} {:>8} {:>12} {:>18}",
        "route", "prompt", "prefill t/s", "tokens", "decode t/s", "sampling ms/token"
    );
    for round in 0..2 {
        let (p, ps, d, ds) = baseline(backend, &raw);
        println!(
            "{:<28} {p:>8} {:>12.0} {d:>8} {:>12.1} {:>18}",
            format!("llama-cpp-2 baseline ({round})"),
            rate(p, ps),
            rate(d, ds),
            "-"
        );
        // Unconstrained, the small model rarely stops by itself: it runs to the same
        // fixed budget as the baseline.
        let free = generate(&loaded, settings, &messages, None, DECODE, &never, &mut |_| {})
            .unwrap_or_else(|e| panic!("{e}"))
            .timings;
        let answer = generate(&loaded, settings, &messages, Some(&bounded), 600, &never, &mut |_| {})
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(answer.finished, "the constrained answer should close within 600 tokens");
        let (text, strict) = (answer.text, answer.timings);
        for (name, t) in [("conclave, unconstrained", free), ("conclave, constrained", strict)] {
            println!(
                "{:<28} {:>8} {:>12.0} {:>8} {:>12.1} {:>18.3}",
                format!("{name} ({round})"),
                t.prompt_tokens,
                rate(t.prompt_tokens, t.prefill.as_secs_f64()),
                t.generated_tokens,
                rate(t.generated_tokens, t.decode.as_secs_f64()),
                t.constraint.as_secs_f64() * 1e3 / t.generated_tokens.max(1) as f64
            );
        }
        if round == 1 {
            let per_token_free = free.constraint.as_secs_f64() / free.generated_tokens.max(1) as f64;
            let per_token_strict = strict.constraint.as_secs_f64() / strict.generated_tokens.max(1) as f64;
            let decode_per_token = strict.decode.as_secs_f64() / strict.generated_tokens.max(1) as f64;
            println!(
                "constraint cost: {:.3} ms/token over unconstrained sampling, {:.1}% of constrained decode time",
                (per_token_strict - per_token_free) * 1e3,
                100.0 * (per_token_strict - per_token_free) / decode_per_token
            );
            println!("constrained answer ({} chars): {}", text.len(), text.chars().take(160).collect::<String>());
        }
    }
}
