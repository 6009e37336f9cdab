//! Timing shared by the review benches: the median and minimum of repeated runs.

use std::time::{Duration, Instant};

/// Median and minimum over `runs` runs of `f`, with the last run's result: the
/// minimum is the steadiest estimate of the intrinsic cost on a shared machine, the
/// median what a run usually takes.
pub fn median_and_min<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, Duration, T) {
    let mut times = Vec::with_capacity(runs);
    let mut last = None;
    for _ in 0..runs.max(1) {
        let started = Instant::now();
        last = Some(f());
        times.push(started.elapsed());
    }
    times.sort();
    let result = last.unwrap_or_else(|| unreachable!("at least one run"));
    (times[times.len() / 2], times[0], result)
}
