//! Runs of plain text (outside code, links and HTML): the bare URLs, `www.` links
//! and e-mail addresses GitHub and GitLab would link, and the `@` mentions they would
//! notify, each written as a code span unless it is a link the policy keeps. A run
//! whose source is not its text as read (entities such as `&#64;`, backslash
//! escapes, a lone backtick) is written anew from what it reads as, every
//! punctuation character escaped, so no entity can spell a mention or a tag.

use regex::Regex;
use std::ops::Range;
use std::sync::LazyLock;

use super::code::inline_code;
use super::links::LinkPolicy;

/// A replacement of a range of the source.
pub(super) type Edit = (Range<usize>, String);

/// What forges turn into links or notifications in plain text.
static TOKENS: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?P<url>(?i:\b(?:https?|ftp)://|\bwww\.|\b(?:mailto|xmpp):)[^\s<>`]*)",
        r"|(?P<email>[A-Za-z0-9._+\-]+@[A-Za-z0-9_\-]+(?:\.[A-Za-z0-9_\-]+)+)",
        r"|(?P<mention>@[A-Za-z0-9_][A-Za-z0-9_./\-]*)",
    ))
    .ok()
});

/// One thing in a run that forges would link or notify.
struct Token {
    /// Where it is in the run.
    range: Range<usize>,
    /// Whether it may stay as it is (a URL the policy allows).
    live: bool,
}

/// The edits that make a run of text inert: `range` of `source` reads as `content`.
pub(super) fn run_edits(source: &str, range: Range<usize>, content: &str, links: &LinkPolicy, edits: &mut Vec<Edit>) {
    let slice = &source[range.clone()];
    if reads_as_written(slice, content) {
        for token in tokens(slice, links).into_iter().filter(|t| !t.live) {
            let at = range.start + token.range.start..range.start + token.range.end;
            edits.push((at, inline_code(&slice[token.range])));
        }
        return;
    }
    let rewritten = rewrite(content, links);
    if rewritten != slice {
        edits.push((range, rewritten));
    }
}

/// Whether a run's source spells what it reads as plainly enough to be kept and
/// searched as it is: no backslash escape (a backslash before a letter, as in the
/// `\u202e` the sanitizer writes, is plain text), no entity but `&lt;`, `&gt;` and `&amp;`
/// (which the sanitizer writes itself), no backtick a code span could pair with, and
/// no `<!--` that Conclave would take for the start of its marker.
fn reads_as_written(slice: &str, content: &str) -> bool {
    let escapes = slice.as_bytes().windows(2).any(|w| w[0] == b'\\' && w[1].is_ascii_punctuation());
    if escapes || slice.ends_with('\\') || slice.contains('`') || slice.contains("<!--") {
        return false;
    }
    if !slice.contains('&') {
        return slice == content;
    }
    let mut decoded = String::with_capacity(slice.len());
    let mut rest = slice;
    while let Some(at) = rest.find('&') {
        decoded.push_str(&rest[..at]);
        rest = &rest[at..];
        let (c, len) = match () {
            _ if rest.starts_with("&lt;") => ('<', 4),
            _ if rest.starts_with("&gt;") => ('>', 4),
            _ if rest.starts_with("&amp;") => ('&', 5),
            _ => ('&', 1),
        };
        decoded.push(c);
        rest = &rest[len..];
    }
    decoded.push_str(rest);
    decoded == content
}

/// `content` written so that it reads as itself: tokens as code spans (or, for a
/// kept URL, an autolink), every other punctuation character escaped.
fn rewrite(content: &str, links: &LinkPolicy) -> String {
    let mut out = String::with_capacity(content.len() * 2);
    let mut at = 0;
    let mut leading = true;
    for token in tokens(content, links) {
        escape_into(&mut out, &content[at..token.range.start], &mut leading);
        leading = false;
        let text = &content[token.range.clone()];
        match token.live {
            true => {
                out.push('<');
                out.push_str(text);
                out.push('>');
            }
            false => out.push_str(&inline_code(text)),
        }
        at = token.range.end;
    }
    escape_into(&mut out, &content[at..], &mut leading);
    out
}

/// Plain text with each punctuation character that could start markup escaped:
/// inline markup anywhere, and what starts a block (a heading, a list item, a
/// quote, a rule) while `leading`, before the run's first letter.
fn escape_into(out: &mut String, text: &str, leading: &mut bool) {
    for c in text.chars() {
        *leading &= !c.is_alphabetic();
        match c {
            '<' => out.push_str("&lt;"),
            '&' => out.push_str("&amp;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '~' | '|' => {
                out.push('\\');
                out.push(c);
            }
            '#' | '-' | '+' | '=' | '.' | ')' | '>' if *leading => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
}

/// The URLs, addresses and mentions in `text`, each trimmed as GitHub trims an
/// autolink, and whether the policy keeps it.
fn tokens(text: &str, links: &LinkPolicy) -> Vec<Token> {
    let Some(regex) = TOKENS.as_ref() else { return Vec::new() };
    regex
        .captures_iter(text)
        .filter_map(|found| {
            if let Some(url) = found.name("url") {
                let end = url.start() + trimmed_url(url.as_str()).len();
                let live = links.allows(&text[url.start()..end]);
                return (end > url.start()).then_some(Token { range: url.start()..end, live });
            }
            if let Some(email) = found.name("email") {
                return Some(Token { range: email.range(), live: false });
            }
            let mention = found.name("mention")?;
            let len = mention.as_str().trim_end_matches(['.', '/', '-']).len();
            Some(Token { range: mention.start()..mention.start() + len, live: false })
        })
        .collect()
}

/// A bare URL without the trailing punctuation that ends a sentence, and without a
/// closing parenthesis it did not open.
fn trimmed_url(url: &str) -> &str {
    let mut url = url;
    loop {
        let before = url.len();
        url = url.trim_end_matches(['?', '!', '.', ',', ':', '*', '_', '~', '\'', '"', ';']);
        if url.ends_with(')') && url.matches(')').count() > url.matches('(').count() {
            url = &url[..url.len() - 1];
        }
        if url.len() == before {
            return url;
        }
    }
}
