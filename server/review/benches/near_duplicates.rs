//! Near-duplicates on real review comments and at scale: the precision, recall and F1
//! of the same-issue rule on both halves of `tests/fixtures/review/review-threads.json`
//! with the hard pairs of `tests/fixtures/review/hard-negatives.json`, what the words
//! alone and the full rule do to the hard negatives, the precision and recall of
//! support ≥ 1, 2 and 3, and the time to group the near-duplicates of 10 reviewers ×
//! 1,000 findings (target: well under 1 s).
//!
//! Run with `cargo bench -p conclave-review --bench near_duplicates`.

#[path = "../tests/common/review_threads.rs"]
mod review_threads;
#[path = "common/timing.rs"]
mod timing;

use conclave_review::compare_siblings;
use conclave_review::similarity::NEAR_DUPLICATE_THRESHOLD;
use conclave_shared::{Finding, Severity, Stance};
use review_threads::{best, halves, print_hard, print_scores, print_support, score, support_table};
use std::time::Duration;

fn main() {
    let changes = review_threads::load();
    let (tuning, held_out) = halves(&changes, &review_threads::load_hard());
    print_scores("held-out", &held_out);
    let tuned = best(&tuning);
    let held = score(&held_out, NEAR_DUPLICATE_THRESHOLD);
    println!(
        "threshold {NEAR_DUPLICATE_THRESHOLD:.2} (tuning best {:.2}, F1 {:.3}): held-out precision {:.3}, recall {:.3}, F1 {:.3}\n",
        tuned.threshold, tuned.f1, held.precision, held.recall, held.f1
    );
    print_hard("held-out", &held_out, NEAR_DUPLICATE_THRESHOLD);
    println!();
    print_support(&support_table(&changes));

    let comments: Vec<&str> = changes.iter().flat_map(|c| c.comments.iter().map(|m| m.text.as_str())).collect();
    let input = reviewers(&comments, 10, 1_000, 7);
    let (median, min, groups) = time_grouping(&input);
    println!(
        "\n10 reviewers x 1,000 findings: median {:.1} ms, min {:.1} ms ({groups} near-duplicate groups)",
        ms(median),
        ms(min)
    );
}

/// `per_reviewer` findings for each of `count` reviewers, worded with the real
/// comments, over 50 files of 400 lines: dense enough that most findings have another
/// reviewer's finding within three lines.
fn reviewers(comments: &[&str], count: usize, per_reviewer: usize, seed: u64) -> Vec<(String, Vec<Finding>)> {
    let mut rng = fastrand::Rng::with_seed(seed);
    (0..count)
        .map(|r| {
            let name = format!("reviewer{r}");
            let findings = (0..per_reviewer)
                .map(|_| Finding {
                    agent: name.clone(),
                    raised_by: Some(name.clone()),
                    file: format!("src/file{}.rs", rng.usize(0..50)),
                    line: rng.u64(1..400),
                    severity: Some(Severity::ALL[rng.usize(0..4)]),
                    stance: Some(Stance::Concern),
                    description: comments[rng.usize(0..comments.len())].to_string(),
                    ..Default::default()
                })
                .collect();
            (name, findings)
        })
        .collect()
}

/// Median and minimum of 11 runs of the whole comparison (exact buckets and the
/// near-duplicate sweep), and the number of near-duplicate groups found.
fn time_grouping(input: &[(String, Vec<Finding>)]) -> (Duration, Duration, usize) {
    timing::median_and_min(11, || compare_siblings(input).duplicates.len())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
