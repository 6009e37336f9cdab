//! How alike two finding descriptions are: the Sørensen–Dice coefficient of their
//! sets of normalized words.
//!
//! Words are lowercased, split on anything but letters and digits, stripped of a few
//! common endings, and filtered against a stop list. The threshold for "the same
//! finding" is tuned on the tuning half of the real review comments in
//! `tests/fixtures/review/review-threads.json` and scored on the held-out half (see
//! `NEAR_DUPLICATE_THRESHOLD` and that folder's README).

/// Descriptions at least this similar, within `NEAR_LINES` lines of each other in
/// the same file, are near-duplicates. The threshold with the best F1 on the tuning
/// half of the review-comment set (the calibration test in
/// `tests/it/review_compare.rs` prints the table and checks both halves): different
/// reviewers word one issue differently enough that only about a quarter of the
/// words are shared, while two different issues in one change share fewer.
pub const NEAR_DUPLICATE_THRESHOLD: f64 = 0.24;

/// How many lines apart two findings may be and still be near-duplicates.
pub const NEAR_LINES: u64 = 3;

const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "been", "but", "by", "can", "could", "do", "does", "for", "from", "has",
    "have", "here", "if", "in", "into", "is", "it", "its", "may", "might", "no", "not", "of", "on", "or", "should",
    "so", "than", "that", "the", "their", "then", "there", "this", "to", "was", "we", "when", "which", "while", "will",
    "with", "would", "you", "your",
];

/// The normalized words of a description as a sorted, de-duplicated list of 64-bit
/// hashes (FNV-1a): comparing two lists is a linear merge with no allocation.
pub fn word_hashes(text: &str) -> Vec<u64> {
    let mut out = Vec::with_capacity(16);
    push_word_hashes(text, &mut out);
    out
}

/// Appends the sorted, de-duplicated word hashes of `text` to `out` (an arena shared
/// by many descriptions).
pub fn push_word_hashes(text: &str, arena: &mut Vec<u64>) {
    let begin = arena.len();
    let out = arena;
    let mut word = String::with_capacity(24);
    let flush = |word: &mut String, out: &mut Vec<u64>| {
        if !word.is_empty() {
            let hash = fnv1a(stem(word));
            if !is_stop_word(word) {
                out.push(hash);
            }
            word.clear();
        }
    };
    if text.is_ascii() {
        for b in text.bytes() {
            if b.is_ascii_alphanumeric() {
                word.push(b.to_ascii_lowercase() as char);
            } else {
                flush(&mut word, out);
            }
        }
    } else {
        for c in text.chars() {
            if c.is_alphanumeric() {
                word.extend(c.to_lowercase());
            } else {
                flush(&mut word, out);
            }
        }
    }
    flush(&mut word, out);
    let mine = &mut out[begin..];
    mine.sort_unstable();
    let mut kept = 0;
    for k in 0..mine.len() {
        if k == 0 || mine[k] != mine[kept - 1] {
            mine[kept] = mine[k];
            kept += 1;
        }
    }
    out.truncate(begin + kept);
}

/// Whether `word` (already lowercase) is a stop word, by hash lookup.
fn is_stop_word(word: &str) -> bool {
    static HASHES: std::sync::OnceLock<Vec<u64>> = std::sync::OnceLock::new();
    let hashes = HASHES.get_or_init(|| {
        let mut h: Vec<u64> = STOP_WORDS.iter().map(|w| fnv1a(w)).collect();
        h.sort_unstable();
        h
    });
    word.len() <= 5 && hashes.binary_search(&fnv1a(word)).is_ok() && STOP_WORDS.contains(&word)
}

fn fnv1a(word: &str) -> u64 {
    word.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3))
}

/// Strips one common English ending, so `paths`/`path` and `joined`/`join` meet.
fn stem(word: &str) -> &str {
    for suffix in ["ing", "ed", "es", "s"] {
        if let Some(root) = word.strip_suffix(suffix)
            && root.len() >= 3
        {
            return root;
        }
    }
    word
}

/// Sørensen–Dice coefficient of two sorted word-hash lists: 2|A∩B| / (|A| + |B|).
pub fn dice(a: &[u64], b: &[u64]) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 0.0;
    }
    let (mut i, mut j, mut shared) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                shared += 1;
                i += 1;
                j += 1;
            }
        }
    }
    2.0 * shared as f64 / (a.len() + b.len()) as f64
}

/// Similarity of two descriptions.
pub fn similarity(a: &str, b: &str) -> f64 {
    dice(&word_hashes(a), &word_hashes(b))
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
