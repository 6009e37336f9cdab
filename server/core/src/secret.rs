//! API keys that never print: `Debug` and `Display` show a placeholder. Removing
//! keys from what providers say is the job of `redact.rs`, the one redaction point.

use std::fmt;

/// An API key or token.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a key.
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The key, for building a request header only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_prints() {
        let s = Secret::new("sk-live-123456");
        assert_eq!(format!("{s} {s:?}"), "[redacted] Secret([redacted])");
    }
}
