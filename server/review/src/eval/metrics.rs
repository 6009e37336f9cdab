//! The bootstrap behind an eval's intervals: cases resampled with replacement (1,000
//! times, from a fixed seed, so the same eval gives the same intervals), the figures
//! recomputed from the pooled counts of each resample, and the 2.5th and 97.5th
//! percentiles taken. `eval compare` pairs the two evals' cases, so each resample
//! takes the same cases from both and the interval is of the difference.

use super::summary::{Counts, Interval, Intervals};

/// Resamples of every bootstrap.
pub const RESAMPLES: u32 = 1_000;
/// The seed of every bootstrap.
pub const SEED: u64 = 0x00c0_4c1a_7e5e_ed01;

/// A figure computed from pooled counts.
pub type Figure = fn(&Counts) -> f64;

/// The three headline figures, by name.
pub const FIGURES: [(&str, Figure); 3] =
    [("precision", Counts::precision), ("recall", Counts::recall), ("f1", Counts::f1)];

/// The resampled case indices: `RESAMPLES` lists of `n` indices.
fn resamples(n: usize) -> Vec<Vec<usize>> {
    let mut rng = fastrand::Rng::with_seed(SEED);
    (0..RESAMPLES).map(|_| (0..n).map(|_| rng.usize(0..n.max(1))).collect()).collect()
}

fn pooled(cases: &[Counts], picks: &[usize]) -> Counts {
    let mut sum = Counts::default();
    for &k in picks {
        sum.add(cases[k]);
    }
    sum
}

/// The 2.5th and 97.5th percentiles of `values` (sorted here).
fn percentiles(mut values: Vec<f64>) -> Interval {
    if values.is_empty() {
        return Interval { low: 0.0, high: 0.0 };
    }
    values.sort_by(f64::total_cmp);
    let at = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize];
    Interval { low: round(at(0.025)), high: round(at(0.975)) }
}

/// Rounds to 6 decimals, so figures print and compare the same everywhere.
pub fn round(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// The intervals of precision, recall and F1 over `cases` (each case's counts).
pub fn intervals(cases: &[Counts]) -> Intervals {
    let picks = resamples(cases.len());
    let [p, r, f] = FIGURES.map(|(_, figure)| {
        if cases.is_empty() {
            return Interval { low: 0.0, high: 0.0 };
        }
        percentiles(picks.iter().map(|pick| figure(&pooled(cases, pick))).collect())
    });
    Intervals { precision: p, recall: r, f1: f }
}

/// The interval of `figure(B) − figure(A)` over paired cases (`a[k]` and `b[k]` are
/// the same case).
pub fn paired_interval(a: &[Counts], b: &[Counts], figure: Figure) -> Interval {
    if a.is_empty() || a.len() != b.len() {
        return Interval { low: 0.0, high: 0.0 };
    }
    let deltas = resamples(a.len()).iter().map(|pick| figure(&pooled(b, pick)) - figure(&pooled(a, pick))).collect();
    percentiles(deltas)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(tp: u64, fp: u64, fn_: u64) -> Counts {
        Counts { true_positives: tp, false_positives: fp, false_negatives: fn_ }
    }

    #[test]
    fn intervals_hold_the_figure_and_are_the_same_every_time() {
        let cases: Vec<Counts> = (0..30).map(|k| c(k % 3, (k % 4 == 0) as u64, (k % 5 == 0) as u64)).collect();
        let total = cases.iter().fold(Counts::default(), |mut s, x| {
            s.add(*x);
            s
        });
        let ci = intervals(&cases);
        assert!(ci.precision.low <= total.precision() && total.precision() <= ci.precision.high);
        assert!(ci.f1.low < ci.f1.high);
        assert_eq!(ci, intervals(&cases), "a fixed seed");
        let same = vec![c(1, 0, 0); 10];
        assert_eq!(intervals(&same).f1, Interval { low: 1.0, high: 1.0 });
    }

    #[test]
    fn a_paired_difference_is_significant_only_when_it_is_consistent() {
        let a: Vec<Counts> = (0..30).map(|k| c(1, 0, (k % 2) as u64)).collect();
        let better: Vec<Counts> = (0..30).map(|_| c(1, 0, 0)).collect();
        let ci = paired_interval(&a, &better, Counts::recall);
        assert!(ci.low > 0.0, "{ci:?}");
        let ci = paired_interval(&a, &a, Counts::recall);
        assert_eq!((ci.low, ci.high), (0.0, 0.0));
    }
}
