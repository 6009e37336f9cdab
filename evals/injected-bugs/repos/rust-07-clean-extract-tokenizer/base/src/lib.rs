//! Word frequencies of a text.

use std::collections::HashMap;

/// How often each word occurs in `text`, ignoring case and punctuation, most
/// frequent first (ties in alphabetical order).
pub fn frequencies(text: &str) -> Vec<(String, usize)> {
    let mut counts: HashMap<String, usize> = HashMap::new();
    for raw in text.split(|c: char| !c.is_alphanumeric() && c != '\'') {
        let word = raw.trim_matches('\'').to_lowercase();
        if word.is_empty() {
            continue;
        }
        *counts.entry(word).or_insert(0) += 1;
    }
    let mut out: Vec<(String, usize)> = counts.into_iter().collect();
    out.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn most_frequent_first_then_alphabetical() {
        let got = frequencies("b a B c a b");
        assert_eq!(got[0], ("b".to_string(), 3));
        assert_eq!(got[1], ("a".to_string(), 2));
        assert_eq!(got[2], ("c".to_string(), 1));
    }
}
