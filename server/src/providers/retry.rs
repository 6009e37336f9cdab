//! Retrying provider calls that failed for reasons that may pass: rate limits (after
//! the wait the provider asked for), server errors, timeouts and resets, with
//! exponential backoff and jitter. Authentication and validation errors fail at once.

use std::time::Duration;

use super::ProviderError;

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

impl RetryPolicy {
    /// The wait before retry number `retry` (1-based) after `error`, or `None` when the
    /// error is not retryable or retries are used up.
    pub fn delay(&self, retry: u32, error: &ProviderError) -> Option<Duration> {
        if !error.is_retryable() || retry > self.max_retries {
            return None;
        }
        if let ProviderError::RateLimited { retry_after: Some(wait) } = error {
            return Some((*wait).min(self.cap * 2));
        }
        let exp = self.base.saturating_mul(1u32 << (retry - 1).min(16)).min(self.cap);
        // Full jitter on top of half the backoff keeps retries apart without long stalls.
        let half = exp / 2;
        let jitter = Duration::from_micros(fastrand::u64(0..=half.as_micros() as u64));
        Some(half + jitter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_retryable_errors_are_retried_within_bounds() {
        let p = RetryPolicy { max_retries: 3, base: Duration::from_millis(100), cap: Duration::from_millis(300) };
        let server = ProviderError::Server { status: 500, message: String::new() };
        for retry in 1..=3 {
            let d = p.delay(retry, &server).expect("retryable");
            let exp = (Duration::from_millis(100) * (1 << (retry - 1))).min(Duration::from_millis(300));
            assert!(d >= exp / 2 && d <= exp, "retry {retry}: {d:?}");
        }
        assert_eq!(p.delay(4, &server), None, "retries used up");
        assert_eq!(p.delay(1, &ProviderError::Auth("no".into())), None);
        let limited = ProviderError::RateLimited { retry_after: Some(Duration::from_secs(1)) };
        assert_eq!(p.delay(1, &limited), Some(Duration::from_millis(600)), "retry-after capped at twice the cap");
    }
}
