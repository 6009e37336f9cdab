//! A small `key = value` configuration format.

pub mod store;

use std::collections::BTreeMap;
use std::fmt;

/// A parse error with its 1-based line number.
#[derive(Debug, PartialEq)]
pub struct ParseError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for ParseError {}

/// Parses `key = value` lines; blank lines and lines starting with `#` are skipped.
pub fn parse(text: &str) -> Result<BTreeMap<String, String>, ParseError> {
    let mut out = BTreeMap::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err(ParseError { line: n + 1, message: format!("expected `key = value`, got `{line}`") });
        };
        out.insert(key.trim().to_string(), value.trim().to_string());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_blank_lines_are_skipped() {
        let values = parse("# server\n\nport = 80\n").unwrap();
        assert_eq!(values.get("port").map(String::as_str), Some("80"));
    }

    #[test]
    fn a_line_without_equals_is_an_error() {
        assert_eq!(parse("port").unwrap_err().line, 1);
    }
}
