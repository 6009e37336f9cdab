//! Structured-output contract costs: validating a typical findings object with a
//! compiled, cached validator (target: at least 100,000 validations per second on one
//! core), and lowering the findings schema for each provider.
//!
//! Run with `cargo bench -p conclave-schema --bench contract`.

use conclave_schema::{LowerTarget, SchemaCatalog, lower};
use serde_json::{Value, json};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// A Writer's answer with six findings, the shape every review agent returns.
fn typical_findings() -> Value {
    let finding = |severity: &str, file: &str, line: u64, lane: &str| {
        json!({"severity": severity, "file": file, "line": line, "raisedBy": lane, "stance": "concern",
               "description": "User-controlled path joined to the upload root without normalisation; `..` escapes the root."})
    };
    json!({
        "findings": [
            finding("blocker", "src/upload.rs", 42, "security"),
            finding("major", "src/upload.rs", 57, "correctness"),
            finding("minor", "src/lib.rs", 8, "conventions"),
            finding("nit", "src/lib.rs", 9, "conventions"),
            finding("major", "src/db.rs", 120, "correctness"),
            finding("minor", "README.md", 3, "conventions")
        ],
        "counts": {"blocker": 1, "major": 2, "minor": 2, "nit": 1}
    })
}

/// Runs `f` for about `budget`, returning calls per second.
fn rate(budget: Duration, mut f: impl FnMut() -> bool) -> f64 {
    let mut calls = 0u64;
    let started = Instant::now();
    while started.elapsed() < budget {
        for _ in 0..1000 {
            assert!(black_box(f()));
        }
        calls += 1000;
    }
    calls as f64 / started.elapsed().as_secs_f64()
}

fn main() {
    let schema = SchemaCatalog::with_roots(vec![]).resolve("review.findings.v1").expect("built-in schema").schema;
    let validator = jsonschema::validator_for(&schema).expect("compiles");
    let answer = typical_findings();
    assert!(validator.is_valid(&answer), "the typical answer is valid");

    println!("validation of a 6-finding answer against review.findings.v1 (one thread)");
    for _ in 0..3 {
        let fast = rate(Duration::from_secs(2), || validator.is_valid(&answer));
        let full = rate(Duration::from_secs(2), || validator.iter_errors(&answer).next().is_none());
        println!("  is_valid: {fast:>10.0} /s    iter_errors (engine path): {full:>10.0} /s");
    }

    println!("\nlowering review.findings.v1 (normalize + lower, one thread)");
    for target in [LowerTarget::OpenAi, LowerTarget::Anthropic, LowerTarget::Ollama] {
        let per_sec = rate(Duration::from_secs(2), || lower(&schema, target).is_ok());
        println!("  {:<10} {:>8.1} µs per lowering", target.as_str(), 1e6 / per_sec);
    }
}
