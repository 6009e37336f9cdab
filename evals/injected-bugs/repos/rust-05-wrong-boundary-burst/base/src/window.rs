//! One client's fixed window.

pub struct Window {
    pub start: u64,
    pub count: u32,
}

impl Window {
    pub fn starting(now: u64) -> Window {
        Window { start: now, count: 0 }
    }

    /// Starts a new window when the current one is over.
    pub fn roll(&mut self, now: u64, secs: u64) {
        if now.saturating_sub(self.start) >= secs {
            self.start = now;
            self.count = 0;
        }
    }

    /// Counts a request if the window has room for it.
    pub fn admit(&mut self, limit: u32) -> bool {
        if self.count < limit {
            self.count += 1;
            true
        } else {
            false
        }
    }
}
