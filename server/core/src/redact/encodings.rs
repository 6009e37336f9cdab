//! A secret's encoded forms: base64 (standard and URL-safe alphabets, padded or
//! not) and hex. A secret inside a longer base64 text is encoded at one of three
//! byte alignments, and the characters at either edge of its encoding then depend on
//! the bytes around it; so each alignment's form keeps only the characters that the
//! secret's own bytes decide, which every encoding holding the secret contains.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};

/// One literal form of a secret; hex matches in either case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Form {
    /// The text, lower-case for hex.
    pub text: String,
    /// Whether it matches in any letter case (hex).
    pub any_case: bool,
}

impl Form {
    /// Whether `tail` (all of it) reads as the beginning of this form without
    /// completing it.
    pub fn begins_with(&self, tail: &str) -> bool {
        tail.len() < self.text.len()
            && self.text.is_char_boundary(tail.len())
            && match self.any_case {
                true => self.text[..tail.len()].eq_ignore_ascii_case(tail),
                false => self.text.starts_with(tail),
            }
    }
}

/// The base64 forms (both alphabets, at byte offsets 0, 1 and 2) and the hex form of
/// `secret`, without repeats.
pub(super) fn encoded_forms(secret: &str) -> Vec<Form> {
    let bytes = secret.as_bytes();
    let mut forms: Vec<Form> = Vec::new();
    for offset in 0..3 {
        for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
            let text = aligned_base64(bytes, offset, engine);
            if !text.is_empty() && !forms.iter().any(|f| f.text == text) {
                forms.push(Form { text, any_case: false });
            }
        }
    }
    forms.push(Form { text: hex::encode(bytes), any_case: true });
    forms
}

/// The characters of the base64 encoding of `bytes` placed after `offset` other
/// bytes that depend on `bytes` alone: the leading characters that hold bits of the
/// bytes before, and a trailing one that holds bits of the bytes after, are dropped.
fn aligned_base64(bytes: &[u8], offset: usize, engine: &base64::engine::GeneralPurpose) -> String {
    let mut padded = vec![0u8; offset];
    padded.extend_from_slice(bytes);
    let encoded = engine.encode(&padded);
    // Characters wholly decided by the first `n` bytes: floor(8n / 6).
    let whole = |n: usize| n * 8 / 6;
    let first = (offset * 8).div_ceil(6);
    let last = whole(padded.len());
    encoded.get(first..last).unwrap_or_default().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE};

    const KEY: &str = "sk-live-0123456789abcdef>>??";

    #[test]
    fn every_alignment_of_either_alphabet_holds_one_form() {
        let forms = encoded_forms(KEY);
        for before in ["", "x", "xy", "xyz", "{\"key\":\""] {
            for after in ["", "!", "!!", "\"}"] {
                let text = format!("{before}{KEY}{after}");
                for engine in [&STANDARD, &URL_SAFE, &STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
                    let encoded = engine.encode(text.as_bytes());
                    assert!(forms.iter().any(|f| encoded.contains(&f.text)), "{text:?} as {encoded}");
                }
            }
        }
        let hex = forms.last().expect("hex");
        assert!(hex.any_case && hex.text == hex::encode(KEY));
        assert!(hex.begins_with(&hex::encode_upper(KEY)[..10]) && !hex.begins_with("zz"));
    }
}
