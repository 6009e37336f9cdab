//! Per-client request limits for the API gateway.

pub mod window;

use std::collections::HashMap;
use window::Window;

/// Limits each client to `limit` requests per window of `window_secs` seconds.
pub struct Limiter {
    limit: u32,
    window_secs: u64,
    clients: HashMap<String, Window>,
}

impl Limiter {
    pub fn new(limit: u32, window_secs: u64) -> Limiter {
        Limiter { limit, window_secs, clients: HashMap::new() }
    }

    /// Whether `client` may make a request at `now` (seconds), counting it if so.
    pub fn allow(&mut self, client: &str, now: u64) -> bool {
        let window = self.clients.entry(client.to_string()).or_insert_with(|| Window::starting(now));
        window.roll(now, self.window_secs);
        window.admit(self.limit)
    }

    /// Forgets clients idle for more than a window.
    pub fn prune(&mut self, now: u64) {
        let secs = self.window_secs;
        self.clients.retain(|_, w| now.saturating_sub(w.start) <= secs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_are_counted_apart() {
        let mut limiter = Limiter::new(1, 60);
        assert!(limiter.allow("a", 0));
        assert!(limiter.allow("b", 0));
        assert!(limiter.allow("a", 60));
    }
}
