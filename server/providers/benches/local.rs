//! The local model's speed with the default GGUF on a fixed prompt, in one run:
//! a bare llama-cpp-2 baseline (no Conclave code around it), Conclave's generation
//! unconstrained, and Conclave's generation constrained to the findings schema.
//! Targets: Conclave's decode speed at least 0.9x the baseline's, and constrained
//! decoding costing under 5% of decode time.
//!
//! Then decoding steps after a shared prefix of 5,000 tokens (this repository's diff
//! at a fixed commit, [`DIFF_AT`]), on bare llama-cpp-2: one sequence alone, and three
//! decoded together in one batch, in a unified KV cache (what the batcher uses) and
//! with a KV stream per sequence (llama.cpp's non-unified cache, measured against
//! it: each stream holds a copy of the prefix). Target: a batched step costs
//! no more per sequence than a step alone.
//!
//! Then sibling agents as a review runs them: three specialists at once, then a
//! Writer, all after that shared prefix, batched in one context and one at a time
//! (`CONCLAVE_LOCAL_BATCH=off`), with the specialists' decode time per token in each.
//! Target: batched at most 0.5x the wall time.
//!
//! Run with `cargo bench -p conclave-providers --bench local` (after scripts/fetch-model.sh);
//! `-- speed`, `-- steps` or `-- batch` runs one part.

use conclave_providers::local::generate::{Generation, RunSettings, backend, generate, load};
use conclave_providers::local::model::{DEFAULT_MODEL_FILE, model_dir};
use conclave_providers::local::{LocalProvider, LocalRequest};
use conclave_schema::{LowerTarget, SchemaCatalog, lower};
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use serde_json::Value;
use std::num::NonZeroU32;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

/// The model's threads: `CONCLAVE_LOCAL_THREADS`, else 2. On a machine other work
/// shares, one thread gives steadier figures: two threads meet at a barrier after
/// every operation, and one that waits for the other to be scheduled again spins.
fn threads() -> i32 {
    std::env::var("CONCLAVE_LOCAL_THREADS").ok().and_then(|t| t.parse().ok()).filter(|&t| t > 0).unwrap_or(2)
}
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
        .with_n_threads(threads())
        .with_n_threads_batch(threads());
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
    let parts = ["speed", "steps", "batch"];
    let asked = std::env::args().skip(1).find(|a| parts.contains(&a.as_str()));
    let runs = |part: &str| asked.as_deref().is_none_or(|a| a == part);
    if runs("speed") {
        speed();
    }
    if runs("steps") {
        steps();
    }
    if runs("batch") {
        sibling_agents();
    }
}

/// The commit whose diff (from three commits before it) is the shared change, fixed so
/// that figures taken at different times compare.
const DIFF_AT: &str = "9f09723e37a4460bcd443fd5568f847999c85bfd";

/// The change the sibling agents share: the diff of the three commits up to
/// [`DIFF_AT`], cut to about 5,000 tokens.
fn shared_change() -> String {
    let range = [format!("{DIFF_AT}~3"), DIFF_AT.to_string()];
    let out = std::process::Command::new("git").arg("diff").args(&range).output().expect("git runs");
    let diff = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(diff.len() > 20_000, "the bench needs this repository's history: `git diff {DIFF_AT}~3 {DIFF_AT}`");
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

/// Three specialists at once, then the Writer with their answers; the wall time, and
/// each answer with its figures.
fn review(provider: &LocalProvider, shared: &str, schema: &Value) -> (f64, Vec<Generation>) {
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
        running.outcome().await.unwrap_or_else(|e| panic!("{e}"))
    };
    let started = Instant::now();
    runtime.block_on(async {
        let asks = SPECIALISTS.map(|own| answer(request(own, "Review the change.".into())));
        let mut answers = futures::future::join_all(asks).await;
        let texts: Vec<&str> = answers.iter().map(|a| a.text.as_str()).collect();
        let writer = request(WRITER, format!("The specialists' findings:\n{}", texts.join("\n")));
        answers.push(answer(writer).await);
        (started.elapsed().as_secs_f64(), answers)
    })
}

/// The sibling agents batched and one at a time.
fn sibling_agents() {
    let shared = shared_change();
    let findings = SchemaCatalog::with_roots(vec![]).resolve("review.findings.v1").expect("built-in").schema;
    let bounded = lower(&findings, LowerTarget::Local).expect("lowers").schema;
    println!(
        "{:<16} {:>8} {:>8} {:>8} {:>8} {:>8} {:>22} {:>16}",
        "sibling agents", "wall s", "CPU s", "prompt", "decoded", "copied", "specialists ms/token", "Writer ms/token"
    );
    let mut walls = Vec::new();
    for batched in [false, true] {
        let threads = threads().to_string();
        let provider = LocalProvider::from_env(&|k| match k {
            "CONCLAVE_LOCAL_THREADS" => Some(threads.clone()),
            "CONCLAVE_LOCAL_BATCH" => Some(if batched { "on" } else { "off" }.into()),
            _ => std::env::var(k).ok(),
        });
        let cpu = cpu_seconds();
        let (wall, answers) = review(&provider, &shared, &bounded);
        let cpu = cpu_seconds() - cpu;
        let counts = provider.prompt_counts();
        let name = if batched { "batched" } else { "one at a time" };
        // An answer's decode time over its tokens is the time of one step: three
        // sequences to a step for the specialists batched, one alone.
        let per_token = |answers: &[Generation]| {
            let decode: f64 = answers.iter().map(|a| a.timings.decode.as_secs_f64()).sum();
            decode * 1e3 / answers.iter().map(|a| a.timings.generated_tokens).sum::<usize>().max(1) as f64
        };
        println!(
            "{name:<16} {wall:>8.1} {cpu:>8.1} {:>8} {:>8} {:>8} {:>22.1} {:>16.1}",
            counts.prompt_tokens,
            counts.prefilled_tokens,
            counts.reused_tokens,
            per_token(&answers[..3]),
            per_token(&answers[3..])
        );
        let generated: Vec<usize> = answers.iter().map(|a| a.timings.generated_tokens).collect();
        println!("  tokens generated (3 specialists, Writer): {generated:?}");
        println!("  writer's answer: {}", answers[3].text.chars().take(120).collect::<String>());
        walls.push((wall, cpu));
    }
    let ((wall_alone, cpu_alone), (wall_batched, cpu_batched)) = (walls[0], walls[1]);
    println!(
        "batched / one at a time: {:.2}x wall time (target at most 0.5x), {:.2}x CPU time",
        wall_batched / wall_alone,
        cpu_batched / cpu_alone
    );
}

/// The CPU time this process has used so far, every thread, user and system, in
/// seconds: on a shared machine the wall time also counts the others' work.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // After the command name's closing parenthesis, utime and stime are the 12th and
    // 13th fields (14 and 15 of proc(5)), in clock ticks.
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ticks: f64 = fields.get(11..13).map_or(0.0, |f| f.iter().filter_map(|v| v.parse::<f64>().ok()).sum());
    let out = std::process::Command::new("getconf").arg("CLK_TCK").output().ok();
    let per_second = out.and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse::<f64>().ok()).unwrap_or(100.0);
    ticks / per_second
}

/// The shared prefix of the decoding steps, in tokens.
const PREFIX: usize = 5_000;
/// Decoding steps timed per layout.
const STEPS: usize = 48;
/// The window of one sequence, the local provider's default.
const WINDOW: u32 = 8192;

/// How the steps' sequences are laid out in the KV cache.
#[derive(Clone, Copy)]
enum Layout {
    /// One sequence in a context of its own: one at a time.
    Alone,
    /// Three sequences sharing the prefix's cells in one unified cache, each
    /// attending over every cell with the others' masked (the batcher).
    Unified,
    /// Three sequences, each in a stream of its own with a copy of the prefix (the
    /// alternative measured).
    Streams,
}

/// Per-step decode time after a 5,000-token shared prefix: one sequence alone against
/// three decoded together, in a unified cache and with a stream per sequence.
fn steps() {
    let path = model_dir(&|k| std::env::var(k).ok()).join(DEFAULT_MODEL_FILE);
    assert!(path.is_file(), "install the default model first: bash scripts/fetch-model.sh");
    let backend = backend().expect("llama.cpp starts");
    let model = LlamaModel::load_from_file(backend, &path, &LlamaModelParams::default()).expect("model");
    let vocab = model.vocab();
    let mut prefix = vocab.tokenize(shared_change().as_bytes(), true, false);
    assert!(prefix.len() >= PREFIX, "the shared change is {} tokens, fewer than {PREFIX}", prefix.len());
    prefix.truncate(PREFIX);
    // Each sequence's own instructions after the shared change, as each agent's are.
    let endings: Vec<Vec<LlamaToken>> =
        SPECIALISTS.iter().map(|s| vocab.tokenize(s.as_bytes(), false, false)).collect();
    println!(
        "{:<36} {:>12} {:>12} {:>16} {:>10}",
        "decoding steps after 5,000 tokens", "wall ms/step", "CPU ms/step", "CPU ms/sequence", "vs alone"
    );
    for round in 0..2 {
        let alone = time_steps(backend, &model, &prefix, &endings[..1], Layout::Alone);
        for (name, layout) in [
            ("one sequence alone", Layout::Alone),
            ("3 batched, unified cache (used)", Layout::Unified),
            ("3 batched, a stream each", Layout::Streams),
        ] {
            let ((wall, cpu), n) = match layout {
                Layout::Alone => (alone, 1),
                _ => (time_steps(backend, &model, &prefix, &endings, layout), endings.len()),
            };
            let per_sequence = cpu / n as f64;
            println!(
                "{:<36} {wall:>12.1} {cpu:>12.1} {per_sequence:>16.1} {:>9.2}x",
                format!("{name} ({round})"),
                per_sequence / alone.1
            );
        }
    }
}

/// Decodes `prefix` into sequence 0, shares it with one sequence per ending (their
/// endings decoded after it), then times `STEPS` steps that decode one greedy token
/// per sequence in one batch; the mean wall and CPU time of a step, in milliseconds.
fn time_steps(
    backend: &LlamaBackend,
    model: &LlamaModel,
    prefix: &[LlamaToken],
    endings: &[Vec<LlamaToken>],
    layout: Layout,
) -> (f64, f64) {
    let n = endings.len();
    let longest = endings.iter().map(Vec::len).max().unwrap_or(0);
    // Unified, sized as the batcher sizes it: the cells the jobs need plus a window,
    // for up to 9 sequences; streams: a window per sequence and one for a kept prompt.
    let (n_ctx, seq_max, unified) = match layout {
        Layout::Alone => ((prefix.len() + longest + STEPS + 64) as u32, 1, false),
        Layout::Unified => ((prefix.len() + n * (longest + STEPS)) as u32 + WINDOW, 9, true),
        Layout::Streams => ((n as u32 + 1) * WINDOW, n as u32 + 1, false),
    };
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(n_ctx))
        .with_n_batch(512)
        .with_n_seq_max(seq_max)
        .with_kv_unified(unified)
        .with_n_threads(threads())
        .with_n_threads_batch(threads());
    let mut ctx = model.new_context(backend, params).expect("context");
    let mut batch = LlamaBatch::new(512, n as i32);
    for (chunk, tokens) in prefix.chunks(512).enumerate() {
        batch.clear();
        for (i, t) in tokens.iter().enumerate() {
            batch.add(*t, (chunk * 512 + i) as i32, &[0], false).expect("add");
        }
        ctx.decode(&mut batch).expect("prefill");
    }
    for s in 1..n as i32 {
        // Unified: the cells are shared; streams: sequence 0's stream is copied whole.
        ctx.copy_kv_cache_seq(0, s, None, None).expect("copy");
    }
    batch.clear();
    let mut positions = Vec::new();
    for (s, ending) in endings.iter().enumerate() {
        for (i, t) in ending.iter().enumerate() {
            batch.add(*t, (prefix.len() + i) as i32, &[s as i32], i == ending.len() - 1).expect("add");
        }
        positions.push((prefix.len() + ending.len()) as i32);
    }
    ctx.decode(&mut batch).expect("endings");
    let mut logits: Vec<i32> = Vec::new();
    let mut at = 0;
    for ending in endings {
        at += ending.len() as i32;
        logits.push(at - 1);
    }
    let mut sampler = LlamaSampler::greedy();
    let (started, cpu) = (Instant::now(), cpu_seconds());
    for _ in 0..STEPS {
        let next: Vec<LlamaToken> = logits.iter().map(|&i| sampler.sample(&ctx, i)).collect();
        batch.clear();
        for (s, token) in next.into_iter().enumerate() {
            batch.add(token, positions[s], &[s as i32], true).expect("add");
            positions[s] += 1;
        }
        ctx.decode(&mut batch).expect("step");
        logits = (0..n as i32).collect();
    }
    let per_step = |seconds: f64| seconds * 1e3 / STEPS as f64;
    (per_step(started.elapsed().as_secs_f64()), per_step(cpu_seconds() - cpu))
}

/// Decode speed against bare llama-cpp-2, and the constraint's cost.
fn speed() {
    let path = model_dir(&|k| std::env::var(k).ok()).join(DEFAULT_MODEL_FILE);
    assert!(path.is_file(), "install the default model first: bash scripts/fetch-model.sh");
    let loaded = load(&path).expect("model loads");
    let backend = backend().expect("llama.cpp starts");
    let raw = LlamaModel::load_from_file(backend, &path, &LlamaModelParams::default()).expect("model");
    let settings = RunSettings { threads: threads(), context: CONTEXT };
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
