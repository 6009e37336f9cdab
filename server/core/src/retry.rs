//! How provider calls that failed for reasons that may pass are retried: rate limits
//! (after the wait the provider asked for), server errors, timeouts and resets, with
//! exponential backoff and jitter from `backon`. Authentication and validation errors
//! fail at once.

use backon::{BackoffBuilder, ExponentialBuilder};
use std::time::Duration;

use crate::provider::ProviderError;

/// How provider faults are retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first try.
    pub max_retries: u32,
    /// The first backoff; each retry doubles it.
    pub base: Duration,
    /// The longest backoff (a provider's `retry-after` may ask for up to twice this).
    pub cap: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy { max_retries: 4, base: Duration::from_millis(500), cap: Duration::from_secs(30) }
    }
}

/// The waits left for one call: created per call with [`RetryPolicy::backoff`].
#[derive(Debug)]
pub struct Backoff {
    delays: backon::ExponentialBackoff,
    cap: Duration,
}

impl RetryPolicy {
    /// The backoff of one call. Each wait is drawn between half the exponential
    /// delay and the delay itself, which keeps retries of parallel calls apart
    /// without long stalls.
    pub fn backoff(&self) -> Backoff {
        let delays = ExponentialBuilder::new()
            .with_min_delay(self.base / 2)
            .with_max_delay(self.cap / 2)
            .with_max_times(self.max_retries as usize)
            .with_jitter()
            .build();
        Backoff { delays, cap: self.cap }
    }
}

impl Backoff {
    /// The wait before retrying after `error`, or `None` when the error is not
    /// retryable or the retries are used up.
    pub fn next_delay(&mut self, error: &ProviderError) -> Option<Duration> {
        if !error.is_retryable() {
            return None;
        }
        let backoff = self.delays.next()?;
        match error {
            ProviderError::RateLimited { retry_after: Some(wait) } => Some((*wait).min(self.cap * 2)),
            _ => Some(backoff),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_retryable_errors_are_retried_within_bounds() {
        let p = RetryPolicy { max_retries: 3, base: Duration::from_millis(100), cap: Duration::from_millis(300) };
        let server = ProviderError::Server { status: 500, message: String::new() };
        let mut backoff = p.backoff();
        for retry in 1..=3u32 {
            let d = backoff.next_delay(&server).expect("retryable");
            let exp = (Duration::from_millis(100) * (1 << (retry - 1))).min(Duration::from_millis(300));
            assert!(d >= exp / 2 && d <= exp, "retry {retry}: {d:?} not within [{:?}, {exp:?}]", exp / 2);
        }
        assert_eq!(backoff.next_delay(&server), None, "retries used up");
        assert_eq!(p.backoff().next_delay(&ProviderError::Auth("no".into())), None);
        let limited = ProviderError::RateLimited { retry_after: Some(Duration::from_secs(1)) };
        assert_eq!(
            p.backoff().next_delay(&limited),
            Some(Duration::from_millis(600)),
            "retry-after capped at twice the cap"
        );
    }
}
