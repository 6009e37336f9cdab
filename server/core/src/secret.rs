//! API keys that never print: `Debug` and `Display` show a placeholder, and
//! [`Secret::redact`] removes the key from any text before it is reported.

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

    /// `text` with every occurrence of the key replaced.
    pub fn redact(&self, text: &str) -> String {
        if self.0.len() < 4 { text.to_string() } else { text.replace(&self.0, "[redacted]") }
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
    fn never_prints_and_redacts() {
        let s = Secret::new("sk-live-123456");
        assert_eq!(format!("{s} {s:?}"), "[redacted] Secret([redacted])");
        assert_eq!(s.redact("bad key sk-live-123456!"), "bad key [redacted]!");
    }
}
