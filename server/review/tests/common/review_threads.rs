//! The labelled review-comment set `tests/fixtures/review/review-threads.json` and the
//! hard pairs `tests/fixtures/review/hard-negatives.json` (see the README beside them):
//! loading them, deriving labelled pairs of comments by different reviewers of one
//! change, the fixed tuning/held-out split, and scoring the same-issue rule and
//! support on them. Shared by the calibration test (`tests/it/review_compare.rs`) and
//! the `near_duplicates` bench.

// Each includer (the test, the bench) uses only part of this module.
#![allow(dead_code)]

use conclave_review::same_issue::SameIssue;
use conclave_review::similarity::similarity;
use conclave_review::support::count_support;
use conclave_shared::{Anchor, Finding};
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

/// One labelled pair of the hard set: two findings in one file a few lines apart,
/// and whether they are the same issue.
#[derive(Debug, Deserialize)]
pub struct HardPair {
    pub id: String,
    pub same: bool,
    pub a: Side,
    pub b: Side,
}

/// One finding of a hard pair.
#[derive(Debug, Deserialize)]
pub struct Side {
    pub file: String,
    pub line: u64,
    pub evidence: Option<String>,
    pub description: String,
    /// Where the quote was found, for pairs that say (as `anchor.rs` would have).
    #[serde(default)]
    pub anchor: Option<Anchor>,
}

impl Side {
    fn finding(&self, agent: &str) -> Finding {
        Finding {
            agent: agent.into(),
            file: self.file.clone(),
            line: self.line,
            description: self.description.clone(),
            evidence: self.evidence.clone(),
            anchor: self.anchor,
            ..Finding::default()
        }
    }
}

impl Comment {
    /// The comment as a finding of its reviewer: at its file and line, both blank when
    /// the set does not know them, so the place always matches and the words decide.
    fn finding(&self) -> Finding {
        Finding {
            agent: self.reviewer.clone(),
            file: self.file.clone().unwrap_or_default(),
            line: self.line.unwrap_or(0),
            description: self.text.clone(),
            ..Finding::default()
        }
    }
}

/// Which half of the set a change (or a hard pair) belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Half {
    Tuning,
    HeldOut,
}

/// Two findings, by different reviewers, and whether they raise the same issue: two
/// comments of one change, or a hard pair.
#[derive(Debug, Clone)]
pub struct Pair {
    /// The wording alone: the similarity of the two descriptions.
    pub wording: f64,
    /// The full rule, `SameIssue::score`, at threshold 0: the similarity when nothing
    /// but the words could still tell the two apart, None when the file, the lines,
    /// the stance or the quoted evidence already does. The rule at threshold `t` says
    /// "same issue" exactly when this is at least `t`.
    pub rule: Option<f64>,
    pub same: bool,
    /// From the hard set, not the review comments.
    pub hard: bool,
}

impl Pair {
    fn new(a: &Finding, b: &Finding, same: bool, hard: bool) -> Pair {
        let rule = SameIssue { threshold: 0.0, ..SameIssue::default() }.score(a, b);
        Pair { wording: similarity(&a.description, &b.description), rule, same, hard }
    }

    /// Whether `judge` at `threshold` calls the two the same issue.
    pub fn merged(&self, judge: Judge, threshold: f64) -> bool {
        match judge {
            Judge::Rule => self.rule.is_some_and(|s| s >= threshold),
            Judge::Wording => self.wording >= threshold,
        }
    }
}

/// What decides whether a pair is the same issue: the full rule, or the words alone
/// (the rule before it read the evidence).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Judge {
    Rule,
    Wording,
}

/// Precision, recall and F1 of a judge of "the same issue" at one threshold.
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

/// Reads the review comments from the repository's fixtures.
pub fn load() -> Vec<Change> {
    read_fixture("review-threads.json")
}

/// Reads the hard pairs from the repository's fixtures.
pub fn load_hard() -> Vec<HardPair> {
    read_fixture("hard-negatives.json")
}

fn read_fixture<T: serde::de::DeserializeOwned>(name: &str) -> T {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/review").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The documented split: FNV-1a (64-bit) of the change's URL (of a hard pair's id),
/// even in the tuning half, odd held out. A change is never split across halves.
pub fn half_of(key: &str) -> Half {
    if fnv1a(key).is_multiple_of(2) { Half::Tuning } else { Half::HeldOut }
}

/// The labelled pairs of one half: every two comments of one change by different
/// reviewers of which at least one names a real issue (two comments the judge matched
/// to no known issue have no label between them), capped per change in the order of
/// the FNV-1a hash of `url NUL text NUL text`; then the hard pairs of that half.
/// Comments have no file, line or quote, so for them the rule is the wording alone.
pub fn pairs(changes: &[Change], hard: &[HardPair], half: Half) -> Vec<Pair> {
    let mut out = comment_pairs(changes, half);
    for pair in hard.iter().filter(|p| half_of(&p.id) == half) {
        out.push(Pair::new(&pair.a.finding("a"), &pair.b.finding("b"), pair.same, true));
    }
    out
}

fn comment_pairs(changes: &[Change], half: Half) -> Vec<Pair> {
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
                let pair = Pair::new(&a.finding(), &b.finding(), a.issue == b.issue, false);
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
pub fn halves(changes: &[Change], hard: &[HardPair]) -> (Vec<Pair>, Vec<Pair>) {
    let (tuning, held_out) = (pairs(changes, hard, Half::Tuning), pairs(changes, hard, Half::HeldOut));
    for (name, set) in [("tuning", &tuning), ("held-out", &held_out)] {
        let count = |hard: bool, same: bool| set.iter().filter(|p| p.hard == hard && p.same == same).count();
        println!(
            "{name}: {} pairs: comments {} same issue, {} different; hard {} same issue, {} different",
            set.len(),
            count(false, true),
            count(false, false),
            count(true, true),
            count(true, false)
        );
    }
    (tuning, held_out)
}

/// The thresholds tried: 0.05 to 0.95 in steps of 0.01.
pub fn thresholds() -> impl Iterator<Item = f64> {
    (5..=95).map(|step| step as f64 / 100.0)
}

/// Scores the full rule at `threshold` on `pairs`.
pub fn score(pairs: &[Pair], threshold: f64) -> Score {
    score_by(Judge::Rule, pairs, threshold)
}

/// Scores `judge` at `threshold` on `pairs`.
pub fn score_by(judge: Judge, pairs: &[Pair], threshold: f64) -> Score {
    let (mut tp, mut fp, mut fn_) = (0usize, 0usize, 0usize);
    for pair in pairs {
        match (pair.merged(judge, threshold), pair.same) {
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

/// Of the hard pairs among `pairs` that are different issues, how many `judge` at
/// `threshold` merges, and how many there are.
pub fn false_merges(judge: Judge, pairs: &[Pair], threshold: f64) -> (usize, usize) {
    let negatives: Vec<&Pair> = pairs.iter().filter(|p| p.hard && !p.same).collect();
    (negatives.iter().filter(|p| p.merged(judge, threshold)).count(), negatives.len())
}

/// Prints, for one half at `threshold`, what the words alone and the full rule do:
/// precision, recall and F1 over all pairs, the hard negatives merged and the hard
/// same-issue pairs found.
pub fn print_hard(title: &str, pairs: &[Pair], threshold: f64) {
    println!("{title} at {threshold:.2}: judge  precision  recall  F1     hard negatives merged  hard same found");
    let positives: Vec<&Pair> = pairs.iter().filter(|p| p.hard && p.same).collect();
    for (name, judge) in [("wording", Judge::Wording), ("rule", Judge::Rule)] {
        let s = score_by(judge, pairs, threshold);
        let (merged, negatives) = false_merges(judge, pairs, threshold);
        let rate = merged as f64 / negatives.max(1) as f64;
        let found = positives.iter().filter(|p| p.merged(judge, threshold)).count();
        println!(
            "{:>18}  {:>9.3}  {:>6.3}  {:.3}  {:>13}/{negatives} ({rate:.3})  {found}/{}",
            name,
            s.precision,
            s.recall,
            s.f1,
            merged,
            positives.len()
        );
    }
}

/// Support of every comment with a known label, counted by the review's own
/// `support::count_support` over all comments of its change: each comment becomes a
/// finding of its reviewer at its file and line (both blank when the set does not
/// know them, so the location always matches and only the wording decides).
pub fn supports(changes: &[Change]) -> Vec<(u32, bool)> {
    let mut out = Vec::new();
    for change in changes {
        let raised: Vec<Finding> = change.comments.iter().map(Comment::finding).collect();
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

/// Prints the rows of the threshold table within 0.03 of `center`, one per 0.01: the
/// neighbourhood of the chosen threshold.
pub fn print_around(title: &str, pairs: &[Pair], center: f64) {
    println!("{title} near {center:.2}: threshold  precision  recall  F1");
    for s in thresholds().filter(|t| (t - center).abs() < 0.035).map(|t| score(pairs, t)) {
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
