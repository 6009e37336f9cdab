//! Invisible and bidirectional control characters (the Trojan Source set and its
//! kin): which characters they are, and text with each of them shown escaped as
//! `\u202e`. The server's sanitizer, the editor's run views and the analyzer lane
//! that reports them all read this one set.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` is invisible or reorders text when shown: bidirectional controls,
/// zero-width characters, invisible operators, tag characters, fillers, other
/// format and control characters. Tab, line feed and carriage return are not: they
/// lay text out and are seen as such.
pub fn is_invisible(c: char) -> bool {
    matches!(
        c,
        // C0 and C1 controls, DEL.
        '\u{0}'..='\u{8}' | '\u{B}' | '\u{C}' | '\u{E}'..='\u{1F}' | '\u{7F}'..='\u{9F}'
        // Soft hyphen, combining grapheme joiner, Arabic letter mark.
        | '\u{AD}' | '\u{34F}' | '\u{61C}'
        // Hangul and Khmer fillers, Mongolian vowel separator.
        | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}' | '\u{180B}'..='\u{180F}' | '\u{3164}' | '\u{FFA0}'
        // Zero-width space, non-joiner, joiner, left-to-right and right-to-left marks.
        | '\u{200B}'..='\u{200F}'
        // Line and paragraph separators, bidirectional embeddings and overrides.
        | '\u{2028}'..='\u{202E}'
        // Word joiner, invisible operators, bidirectional isolates, deprecated format characters.
        | '\u{2060}'..='\u{206F}'
        // Byte order mark (zero-width no-break space), interlinear annotations.
        | '\u{FEFF}' | '\u{FFF9}'..='\u{FFFB}'
        // Musical formatting characters, shorthand format controls.
        | '\u{1D173}'..='\u{1D17A}' | '\u{1BCA0}'..='\u{1BCA3}'
        // Tag characters, and the variation selectors beyond the emoji ones, which can
        // carry hidden bytes.
        | '\u{E0000}'..='\u{E007F}' | '\u{E0100}'..='\u{E01EF}'
    )
}

/// Whether `text` holds any invisible character.
pub fn has_invisible(text: &str) -> bool {
    text.chars().any(is_invisible)
}

/// `text` with every invisible character written as an escape: `\u202e` (four hex
/// digits), or `\u{e0041}` beyond the basic plane. Text without one is returned as
/// it is, and escaping twice gives what escaping once gave.
pub fn escape_invisible(text: &str) -> Cow<'_, str> {
    if !has_invisible(text) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_invisible(c) {
            out.push_str(&escaped(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// One invisible character's escape.
pub fn escaped(c: char) -> String {
    let mut out = String::with_capacity(10);
    let code = c as u32;
    if code <= 0xFFFF {
        let _ = write!(out, "\\u{code:04x}");
    } else {
        let _ = write!(out, "\\u{{{code:x}}}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bidirectional_and_zero_width_characters_are_escaped_and_layout_is_kept() {
        assert_eq!(escape_invisible("a\u{202E}b"), "a\\u202eb");
        assert_eq!(escape_invisible("@\u{200B}everyone"), "@\\u200beveryone");
        assert_eq!(escape_invisible("tag\u{E0041}"), "tag\\u{e0041}");
        assert_eq!(escape_invisible("\u{FEFF}\u{61C}\u{AD}\u{2066}"), "\\ufeff\\u061c\\u00ad\\u2066");
        assert!(matches!(escape_invisible("tabs\tand\nlines\r\n é ❤️"), Cow::Borrowed(_)));
        let once = escape_invisible("x\u{2069}\u{180E}").into_owned();
        assert_eq!(escape_invisible(&once), once.as_str(), "escaping is idempotent");
    }

    #[test]
    fn every_listed_range_is_invisible() {
        let ranges = [
            (0x202A, 0x202E),
            (0x2066, 0x2069),
            (0x200B, 0x200F),
            (0x2060, 0x2064),
            (0xFEFF, 0xFEFF),
            (0x061C, 0x061C),
            (0x180E, 0x180E),
            (0x00AD, 0x00AD),
            (0xE0000, 0xE007F),
        ];
        for (from, to) in ranges {
            for code in from..=to {
                let c = char::from_u32(code).expect("a character");
                assert!(is_invisible(c), "U+{code:04X}");
            }
        }
        assert!(!is_invisible('a') && !is_invisible(' ') && !is_invisible('\n') && !is_invisible('\u{FE0F}'));
    }
}
