//! `If-Match` (RFC 9110, section 13.1.1): `*`, or a list of entity tags of which one
//! must be the current ETag by the strong comparison (weak tags never match); and
//! `If-None-Match` (section 13.1.2), by the weak comparison, for revalidating files.
//!
//! Read here rather than with the `headers` crate: its entity-tag parser asserts,
//! in debug builds, that a tag holds no space, so a client sending `If-Match: "a b"`
//! would panic a debug server. Here anything malformed is a typed error, which the
//! API answers as a failed precondition: it names no version of the resource.

use axum::http::HeaderMap;
use axum::http::header::{IF_MATCH, IF_NONE_MATCH};

/// A request's `If-Match`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IfMatch {
    /// `*`: any current version.
    Any,
    /// These entity tags, as sent (quotes and `W/` included).
    Tags(Vec<String>),
}

/// An `If-Match` that is neither `*` nor a list of entity tags.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the If-Match header is not `*` or a list of quoted entity tags")]
pub struct Malformed;

impl IfMatch {
    /// The `If-Match` of `headers` (all its lines, as one list), `None` without one.
    pub fn of(headers: &HeaderMap) -> Result<Option<IfMatch>, Malformed> {
        let mut lines = headers.get_all(IF_MATCH).iter().peekable();
        if lines.peek().is_none() {
            return Ok(None);
        }
        let mut tags = Vec::new();
        let mut any = false;
        for line in lines {
            for element in elements(line.as_bytes())? {
                match element {
                    Element::Any => any = true,
                    Element::Tag(tag) => tags.push(tag),
                }
            }
        }
        match (any, tags.is_empty()) {
            (true, true) => Ok(Some(IfMatch::Any)),
            (false, false) => Ok(Some(IfMatch::Tags(tags))),
            // `*` among tags, or an empty list.
            _ => Err(Malformed),
        }
    }

    /// Whether a resource whose strong ETag is `current` (quoted) passes.
    pub fn passes(&self, current: &str) -> bool {
        match self {
            IfMatch::Any => true,
            // A weak tag starts with `W/`, so it never equals a strong one.
            IfMatch::Tags(tags) => tags.iter().any(|tag| tag == current),
        }
    }
}

/// Whether the request's `If-None-Match` names the representation whose strong ETag
/// is `current` (quoted), or is `*`: then a GET or HEAD answers 304 Not Modified. The
/// comparison is weak, so `W/"x"` names `"x"`. A malformed header names nothing, so
/// the whole representation is sent.
pub fn none_match_names(headers: &HeaderMap, current: &str) -> bool {
    let mut named = false;
    for line in headers.get_all(IF_NONE_MATCH) {
        let Ok(elements) = elements(line.as_bytes()) else { return false };
        named |= elements.iter().any(|element| match element {
            Element::Any => true,
            Element::Tag(tag) => tag.strip_prefix("W/").unwrap_or(tag) == current,
        });
    }
    named
}

enum Element {
    Any,
    Tag(String),
}

/// The elements of one header line: `*` or entity tags, separated by commas and
/// optional white space (empty elements are allowed, as in every HTTP list).
fn elements(line: &[u8]) -> Result<Vec<Element>, Malformed> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < line.len() {
        match line[at] {
            b' ' | b'\t' | b',' => {
                at += 1;
                continue;
            }
            b'*' => {
                out.push(Element::Any);
                at += 1;
            }
            _ => {
                let end = tag_end(line, at).ok_or(Malformed)?;
                out.push(Element::Tag(String::from_utf8_lossy(&line[at..end]).into_owned()));
                at = end;
            }
        }
        // After an element, only white space before the next comma.
        while at < line.len() && matches!(line[at], b' ' | b'\t') {
            at += 1;
        }
        if at < line.len() && line[at] != b',' {
            return Err(Malformed);
        }
    }
    Ok(out)
}

/// Where the entity tag starting at `start` ends: `[W/]"etagc*"`, where etagc is any
/// visible character but `"`, or obs-text.
fn tag_end(line: &[u8], start: usize) -> Option<usize> {
    let open = if line[start..].starts_with(b"W/") { start + 2 } else { start };
    if line.get(open) != Some(&b'"') {
        return None;
    }
    let close = open + 1 + line[open + 1..].iter().position(|&c| c == b'"')?;
    let etagc = |c: u8| c == 0x21 || (0x23..=0x7e).contains(&c) || c >= 0x80;
    line[open + 1..close].iter().all(|&c| etagc(c)).then_some(close + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn names(lines: &[&str], current: &str) -> bool {
        let mut headers = HeaderMap::new();
        for line in lines {
            headers.append(IF_NONE_MATCH, HeaderValue::from_str(line).expect("a header value"));
        }
        none_match_names(&headers, current)
    }

    #[test]
    fn if_none_match_compares_weakly_over_every_line() {
        assert!(names(&["\"a\""], "\"a\""));
        assert!(names(&["W/\"a\""], "\"a\""), "weak comparison");
        assert!(names(&["\"b\", \"a\""], "\"a\""));
        assert!(names(&["\"b\"", "\"a\""], "\"a\""), "several lines are one list");
        assert!(names(&["*"], "\"a\""));
        assert!(!names(&["\"b\""], "\"a\""));
        assert!(!names(&[], "\"a\""));
        assert!(!names(&["a"], "a"), "an unquoted tag is malformed and names nothing");
    }
}
