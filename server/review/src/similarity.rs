//! How alike two finding descriptions are: the Sørensen–Dice coefficient of their
//! sets of normalized words.
//!
//! Words are lowercased, split on anything but letters and digits, filtered against a
//! stop list (whatever their length), and stripped of a few common endings. The
//! threshold for "the same issue" is tuned on the tuning half of the real review
//! comments in `tests/fixtures/review/review-threads.json` and the hard pairs in
//! `hard-negatives.json` beside it, and scored on the held-out half (see
//! `NEAR_DUPLICATE_THRESHOLD` and that folder's README).

/// Descriptions at least this similar, within `NEAR_LINES` lines of each other in
/// the same file and not quoting different code, are the same issue (the rule is
/// `same_issue.rs`). The threshold with the best F1 on the tuning half of the
/// review-comment set and the hard pairs (the calibration test in
/// `tests/it/review_compare.rs` prints the table and checks both halves): tuning F1
/// 0.845 at 0.24 (0.841 at 0.23 and 0.25); held out, precision 0.836, recall 0.865,
/// F1 0.850. Different reviewers word one issue differently enough that only about a
/// quarter of the words are shared, while two different issues in one change share
/// fewer. Re-tuned when stop words of more than five letters began to be filtered;
/// the best threshold did not move.
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
            if !is_stop_word(word) {
                out.push(fnv1a(stem(word)));
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

/// Whether `word` (already lowercase) is a stop word, whatever its length: a binary
/// search of the stop words' hashes, then the word itself compared, so a hash
/// collision cannot drop a real word. Words longer than the longest stop word are
/// not hashed at all.
fn is_stop_word(word: &str) -> bool {
    struct StopWords {
        by_hash: Vec<(u64, &'static str)>,
        longest: usize,
    }
    static STOP: std::sync::OnceLock<StopWords> = std::sync::OnceLock::new();
    let stop = STOP.get_or_init(|| {
        let mut by_hash: Vec<(u64, &'static str)> = STOP_WORDS.iter().map(|w| (fnv1a(w), *w)).collect();
        by_hash.sort_unstable();
        StopWords { by_hash, longest: STOP_WORDS.iter().map(|w| w.len()).max().unwrap_or(0) }
    });
    if word.len() > stop.longest {
        return false;
    }
    let hash = fnv1a(word);
    let first = stop.by_hash.partition_point(|&(h, _)| h < hash);
    stop.by_hash[first..].iter().take_while(|&&(h, _)| h == hash).any(|&(_, w)| w == word)
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

    #[test]
    fn stop_words_are_dropped_whatever_their_length() {
        assert_eq!(word_hashes("the write should be atomic"), word_hashes("write atomic"));
        assert_eq!(similarity("the write should be atomic", "which write is atomic"), 1.0);
        assert!(STOP_WORDS.iter().any(|w| w.len() > 5), "a stop word longer than five letters is tested");
    }
}
