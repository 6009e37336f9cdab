//! Anchoring and fingerprinting at scale: 10,000 findings over 1,000 files of 400
//! lines, read from disk through the same sandbox as the agents' tools, one walk of
//! the repository included (target: under 200 ms). Six in ten quotes are at the cited
//! line, two in ten a few lines away, one in ten invented (the whole file is searched
//! for it), and one in ten findings has no quote.
//!
//! Run with `cargo bench -p conclave-review --bench anchor`.

use conclave_review::repository_anchors::anchor_in_repository;
use conclave_shared::{Anchor, Finding};
use std::time::{Duration, Instant};

const FILES: usize = 1_000;
const LINES: usize = 400;
const FINDINGS: usize = 10_000;

fn line_text(file: usize, line: usize) -> String {
    format!("    let value_{line} = compute(input_{file}, {line}) + offset; // step {line} of module {file}")
}

fn findings(rng: &mut fastrand::Rng) -> Vec<Finding> {
    (0..FINDINGS)
        .map(|i| {
            let file = rng.usize(0..FILES);
            let at = rng.usize(10..LINES - 10);
            let (cited, evidence) = match i % 10 {
                0..=5 => (at, Some(format!("compute(input_{file}, {at})"))),
                6 | 7 => (at + rng.usize(1..=3), Some(format!("compute(input_{file}, {at})"))),
                8 => (at, Some("sanitize(path).expect(\"a safe path\")".to_string())),
                _ => (at, None),
            };
            Finding {
                agent: format!("agent{}", i % 10),
                file: format!("src/module{}/file{file}.rs", file / 10),
                line: cited as u64 + 1,
                description: "the value is computed from unchecked input".into(),
                evidence,
                ..Finding::default()
            }
        })
        .collect()
}

fn main() {
    let dir = tempfile::tempdir().expect("temporary directory");
    for file in 0..FILES {
        let path = dir.path().join(format!("src/module{}/file{file}.rs", file / 10));
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        let text: Vec<String> = (0..LINES).map(|l| line_text(file, l)).collect();
        std::fs::write(&path, text.join("\n")).expect("write");
    }
    let input = findings(&mut fastrand::Rng::with_seed(7));
    let mut times: Vec<Duration> = Vec::new();
    let mut states = Vec::new();
    for _ in 0..11 {
        let mut run = input.clone();
        let started = Instant::now();
        anchor_in_repository(&mut run, dir.path());
        times.push(started.elapsed());
        states = run.iter().map(|f| f.anchor).collect();
    }
    times.sort();
    let count = |a: Anchor| states.iter().filter(|s| **s == Some(a)).count();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "10,000 findings over 1,000 files: median {:.1} ms, min {:.1} ms (target: under 200 ms)",
        ms(times[times.len() / 2]),
        ms(times[0])
    );
    // The parts: the walk of the repository, and the checks on texts already in memory.
    let started = Instant::now();
    let visible = conclave_review::tools::Sandbox::new(dir.path(), &[]).expect("sandbox").visible_files();
    let walk = started.elapsed();
    let texts: std::collections::HashMap<String, String> =
        visible.iter().map(|p| (p.clone(), std::fs::read_to_string(dir.path().join(p)).expect("read"))).collect();
    let mut run = input.clone();
    let started = Instant::now();
    conclave_review::anchor::anchor_findings(&mut run, |p| texts.get(p).cloned());
    let checks = started.elapsed();
    println!(
        "  of which the walk of the repository {:.1} ms, the checks on texts in memory {:.1} ms",
        ms(walk),
        ms(checks)
    );
    println!(
        "  {} anchored, {} relocated, {} unanchored, {} unquoted, {} unchecked",
        count(Anchor::Anchored),
        count(Anchor::Relocated),
        count(Anchor::Unanchored),
        count(Anchor::Unquoted),
        count(Anchor::Unchecked)
    );
}
