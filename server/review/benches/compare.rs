//! Comparing sibling reviewers at scale: 10 agents × 10,000 findings (100,000) and
//! twice that, on one thread (target: under 100 ms, and at most ×2.2 when doubled).
//!
//! Run with `cargo bench -p conclave-review --bench compare`.

use conclave_review::compare_siblings;
use conclave_shared::{Finding, Severity, Stance};
use std::time::Duration;

#[path = "common/timing.rs"]
mod timing;

const PHRASES: &[&str] = &[
    "user controlled path joined without normalisation allows traversal",
    "missing timeout on the http client hangs requests",
    "sql built by concatenation allows injection",
    "unwrap on file read panics when the file is missing",
    "public function lacks a doc comment",
    "variable name does not say what it holds",
    "integer overflow when multiplying size by count",
    "error from write is ignored and data is lost",
];

/// `per_agent` findings for each of `agents` agents over a change of one file per 20
/// findings per agent (500 files at 10,000), so doubling the findings doubles the
/// change at the same density, as a bigger change would.
fn siblings(agents: usize, per_agent: usize, seed: u64) -> Vec<(String, Vec<Finding>)> {
    let mut rng = fastrand::Rng::with_seed(seed);
    (0..agents)
        .map(|a| {
            let name = format!("agent{a}");
            let files = per_agent / 20;
            let findings = (0..per_agent)
                .map(|_| Finding {
                    agent: name.clone(),
                    raised_by: Some(name.clone()),
                    file: format!("src/module{}/file{}.rs", rng.usize(0..files / 10), rng.usize(0..10)),
                    line: rng.u64(1..2000),
                    severity: Some(Severity::ALL[rng.usize(0..4)]),
                    stance: Some(if rng.u8(0..10) == 0 { Stance::Approval } else { Stance::Concern }),
                    description: format!("{} ({})", PHRASES[rng.usize(0..PHRASES.len())], rng.u32(0..1000)),
                    ..Default::default()
                })
                .collect();
            (name, findings)
        })
        .collect()
}

/// Median and minimum over 11 runs, and the number of groups found.
fn median_time(input: &[(String, Vec<Finding>)]) -> (Duration, Duration, usize) {
    timing::median_and_min(11, || {
        let check = compare_siblings(input);
        check.contradictions.len() + check.disagreements.len() + check.agreements.len() + check.duplicates.len()
    })
}

fn main() {
    let base = siblings(10, 10_000, 1);
    let doubled = siblings(10, 20_000, 1);
    let (m1, min1, g1) = median_time(&base);
    let (m2, min2, g2) = median_time(&doubled);
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "10 siblings x 10,000 findings (100,000): median {:>6.1} ms, min {:>6.1} ms  ({g1} groups)",
        ms(m1),
        ms(min1)
    );
    println!(
        "10 siblings x 20,000 findings (200,000): median {:>6.1} ms, min {:>6.1} ms  ({g2} groups)",
        ms(m2),
        ms(min2)
    );
    println!(
        "doubling the findings multiplied the time by {:.2} (medians), {:.2} (minimums)",
        m2.as_secs_f64() / m1.as_secs_f64(),
        min2.as_secs_f64() / min1.as_secs_f64()
    );
}
