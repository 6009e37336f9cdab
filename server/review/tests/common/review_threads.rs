//! The labelled review-comment set `tests/fixtures/review/review-threads.json` (see
//! the README beside it): loading it, deriving labelled pairs of comments by
//! different reviewers of one change, the fixed tuning/held-out split by change, and
//! scoring near-duplicate detection and support on it. Shared by the calibration test
//! (`tests/it/review_compare.rs`) and the `near_duplicates` bench.

// Each includer (the test, the bench) uses only part of this module.
#![allow(dead_code)]

use conclave_review::similarity::similarity;
use conclave_review::support::count_support;
use conclave_shared::Finding;
use serde::Deserialize;
use std::path::Path;

/// At most this many same-issue and this many different-issue pairs per change, so a
/// few changes with many reviewers cannot dominate the set.
pub const SAME_PAIRS_PER_CHANGE: usize = 20;
pub const DIFFERENT_PAIRS_PER_CHANGE: usize = 40;

/// One reviewed change (a pull request) and its reviewers' comments.
#[derive(Debug, Deserialize)]
pub struct Change {
    pub url: String,
    pub comments: Vec<Comment>,
}

/// One reviewer's comment: its claim, the issue label it was given, and whether the
/// issue is real (`None` when unknown).
#[derive(Debug, Deserialize)]
pub struct Comment {
    pub reviewer: String,
    pub file: Option<String>,
    pub line: Option<u64>,
    pub text: String,
    pub issue: String,
    pub valid: Option<bool>,
}

/// Which half of the set a change belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Half {
    Tuning,
    HeldOut,
}

/// Two comments by different reviewers of one change, their similarity and whether
/// they raise the same issue.
#[derive(Debug, Clone)]
pub struct Pair {
    pub similarity: f64,
    pub same: bool,
}

/// Precision, recall and F1 of "similarity ≥ threshold" as the near-duplicate rule.
#[derive(Debug, Clone, Copy)]
pub struct Score {
    pub threshold: f64,
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
}

/// One row of the support table: of the comments with a known label, those whose
/// support is at least `k`.
#[derive(Debug, Clone, Copy)]
pub struct SupportRow {
    pub k: u32,
    pub at_least_k: usize,
    pub valid_at_least_k: usize,
    pub valid: usize,
    pub precision: f64,
    pub recall: f64,
}

/// Reads the set from the repository's fixtures.
pub fn load() -> Vec<Change> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/review/review-threads.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The documented split: FNV-1a (64-bit) of the change's URL, even in the tuning
/// half, odd held out. A change is never split across halves.
pub fn half_of(url: &str) -> Half {
    if fnv1a(url).is_multiple_of(2) { Half::Tuning } else { Half::HeldOut }
}

/// The labelled pairs of one half: every two comments of one change by different
/// reviewers of which at least one names a real issue (two comments the judge matched
/// to no known issue have no label between them), capped per change in the order of
/// the FNV-1a hash of `url NUL text NUL text`.
pub fn pairs(changes: &[Change], half: Half) -> Vec<Pair> {
    let mut out = Vec::new();
    for change in changes.iter().filter(|c| half_of(&c.url) == half) {
        let (mut same, mut different) = (Vec::new(), Vec::new());
        let comments = &change.comments;
        for (i, a) in comments.iter().enumerate() {
            for b in &comments[i + 1..] {
                if a.reviewer == b.reviewer || !(a.valid == Some(true) || b.valid == Some(true)) {
                    continue;
                }
                let key = fnv1a(&format!("{}\0{}\0{}", change.url, a.text, b.text));
                let pair = Pair { similarity: similarity(&a.text, &b.text), same: a.issue == b.issue };
                if pair.same { same.push((key, pair)) } else { different.push((key, pair)) }
            }
        }
        for (list, cap) in [(&mut same, SAME_PAIRS_PER_CHANGE), (&mut different, DIFFERENT_PAIRS_PER_CHANGE)] {
            list.sort_by_key(|(key, _)| *key);
            out.extend(list.drain(..).take(cap).map(|(_, p)| p));
        }
    }
    out
}

/// The pairs of the tuning and the held-out half, with their sizes printed.
pub fn halves(changes: &[Change]) -> (Vec<Pair>, Vec<Pair>) {
    let (tuning, held_out) = (pairs(changes, Half::Tuning), pairs(changes, Half::HeldOut));
    for (name, set) in [("tuning", &tuning), ("held-out", &held_out)] {
        let same = set.iter().filter(|p| p.same).count();
        println!("{name}: {} pairs ({same} same issue, {} different)", set.len(), set.len() - same);
    }
    (tuning, held_out)
}

/// The thresholds tried: 0.05 to 0.95 in steps of 0.01.
pub fn thresholds() -> impl Iterator<Item = f64> {
    (5..=95).map(|step| step as f64 / 100.0)
}

/// Scores "similarity ≥ threshold" on `pairs`.
pub fn score(pairs: &[Pair], threshold: f64) -> Score {
    let (mut tp, mut fp, mut fn_) = (0usize, 0usize, 0usize);
    for pair in pairs {
        match (pair.similarity >= threshold, pair.same) {
            (true, true) => tp += 1,
            (true, false) => fp += 1,
            (false, true) => fn_ += 1,
            (false, false) => {}
        }
    }
    let precision = tp as f64 / (tp + fp).max(1) as f64;
    let recall = tp as f64 / (tp + fn_).max(1) as f64;
    let f1 = if precision + recall > 0.0 { 2.0 * precision * recall / (precision + recall) } else { 0.0 };
    Score { threshold, precision, recall, f1 }
}

/// The threshold with the best F1 on `pairs` (the lowest of equals).
pub fn best(pairs: &[Pair]) -> Score {
    thresholds()
        .map(|t| score(pairs, t))
        .fold(score(pairs, 1.0), |best, s| if s.f1 > best.f1 + 1e-12 { s } else { best })
}

/// Support of every comment with a known label, counted by the review's own
/// `support::count_support` over all comments of its change: each comment becomes a
/// finding of its reviewer at its file and line (both blank when the set does not
/// know them, so the location always matches and only the wording decides).
pub fn supports(changes: &[Change]) -> Vec<(u32, bool)> {
    let mut out = Vec::new();
    for change in changes {
        let raised: Vec<Finding> = change
            .comments
            .iter()
            .map(|c| Finding {
                agent: c.reviewer.clone(),
                file: c.file.clone().unwrap_or_default(),
                line: c.line.unwrap_or(0),
                description: c.text.clone(),
                ..Finding::default()
            })
            .collect();
        let mut findings = raised.clone();
        count_support(&mut findings, &raised);
        for (finding, comment) in findings.iter().zip(&change.comments) {
            if let Some(valid) = comment.valid {
                out.push((finding.support.unwrap_or(0), valid));
            }
        }
    }
    out
}

/// Precision and recall of "support ≥ k" as a predictor of a real issue, k = 1, 2, 3.
pub fn support_table(changes: &[Change]) -> Vec<SupportRow> {
    let supports = supports(changes);
    let valid = supports.iter().filter(|(_, v)| *v).count();
    (1..=3)
        .map(|k| {
            let at_least_k = supports.iter().filter(|(s, _)| *s >= k).count();
            let valid_at_least_k = supports.iter().filter(|(s, v)| *s >= k && *v).count();
            SupportRow {
                k,
                at_least_k,
                valid_at_least_k,
                valid,
                precision: valid_at_least_k as f64 / at_least_k.max(1) as f64,
                recall: valid_at_least_k as f64 / valid.max(1) as f64,
            }
        })
        .collect()
}

/// Prints the threshold table of one half, one row per 0.05.
pub fn print_scores(title: &str, pairs: &[Pair]) {
    println!("{title}: threshold  precision  recall  F1");
    for s in thresholds().filter(|t| ((t * 100.0).round() as u32).is_multiple_of(5)).map(|t| score(pairs, t)) {
        println!("{:>9.2}  {:>9.3}  {:>6.3}  {:.3}", s.threshold, s.precision, s.recall, s.f1);
    }
}

/// Prints the support table.
pub fn print_support(rows: &[SupportRow]) {
    println!("support  findings  valid  precision  recall");
    for r in rows {
        println!(
            "   ≥ {}  {:>8}  {:>5}  {:>9.3}  {:>6.3}",
            r.k, r.at_least_k, r.valid_at_least_k, r.precision, r.recall
        );
    }
}

fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3))
}
