//! How alike two finding descriptions are: the Sørensen–Dice coefficient of their
//! sets of normalized words.
//!
//! Words are lowercased, split on anything but letters and digits, stripped of a few
//! common endings, and filtered against a stop list. The threshold for "the same
//! finding" was calibrated on the labelled pairs in
//! `tests/fixtures/review/near-duplicates.json` (see `NEAR_DUPLICATE_THRESHOLD`).

use std::collections::HashSet;

/// Descriptions at least this similar, within `NEAR_LINES` lines of each other in
/// the same file, are near-duplicates. Chosen on the labelled fixture set as the
/// threshold with the best F1 score (the calibration test prints the table).
pub const NEAR_DUPLICATE_THRESHOLD: f64 = 0.40;

/// How many lines apart two findings may be and still be near-duplicates.
pub const NEAR_LINES: u64 = 3;

const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "been", "but", "by", "can", "could", "do", "does", "for", "from", "has",
    "have", "here", "if", "in", "into", "is", "it", "its", "may", "might", "no", "not", "of", "on", "or", "should",
    "so", "than", "that", "the", "their", "then", "there", "this", "to", "was", "we", "when", "which", "while", "will",
    "with", "would", "you", "your",
];

/// The normalized word set of a description.
pub fn word_set(text: &str) -> HashSet<String> {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty() && !STOP_WORDS.contains(w))
        .map(stem)
        .collect()
}

/// Strips one common English ending, so `paths`/`path` and `joined`/`join` meet.
fn stem(word: &str) -> String {
    for suffix in ["ing", "ed", "es", "s"] {
        if let Some(root) = word.strip_suffix(suffix)
            && root.len() >= 3
        {
            return root.to_string();
        }
    }
    word.to_string()
}

/// Sørensen–Dice coefficient of two word sets: 2|A∩B| / (|A| + |B|).
pub fn dice(a: &HashSet<String>, b: &HashSet<String>) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 0.0;
    }
    let shared = a.iter().filter(|w| b.contains(*w)).count();
    2.0 * shared as f64 / (a.len() + b.len()) as f64
}

/// Similarity of two descriptions.
pub fn similarity(a: &str, b: &str) -> f64 {
    dice(&word_set(a), &word_set(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wording_changes_do_not_hide_the_same_finding() {
        let a = "User-controlled filename is joined to the upload root without normalisation, allowing path traversal";
        let b = "Path traversal: the filename from the user is joined onto the upload root with no normalisation";
        assert!(similarity(a, b) >= NEAR_DUPLICATE_THRESHOLD, "{}", similarity(a, b));
        let c = "Missing doc comment on the public function save";
        assert!(similarity(a, c) < NEAR_DUPLICATE_THRESHOLD, "{}", similarity(a, c));
        assert_eq!(similarity("", ""), 0.0);
    }
}
