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
        // No word boundary before a scheme: GitHub links `_https://…` too.
        r"(?P<url>(?i:(?:https?|ftp)://|www\.|(?:mailto|xmpp):)[^\s<]*)",
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
    /// Where the text a forge's autolink would take ends (before trimming the
    /// punctuation that ends a sentence): if the run ends there too, the autolink
    /// would carry on into whatever follows.
    reach: usize,
}

/// The edits that make a run of text inert: `range` of `source` reads as `content`;
/// code spans written have fences of at least `fence` backticks.
pub(super) fn run_edits(
    source: &str,
    (range, content): (Range<usize>, &str),
    links: &LinkPolicy,
    fence: usize,
    edits: &mut Vec<Edit>,
) {
    let slice = &source[range.clone()];
    if reads_as_written(slice, content) {
        for token in tokens(slice, links) {
            let at = range.start + token.range.start..range.start + token.range.end;
            // A kept URL that runs into the next construct (a code span, a link)
            // would be linked through it by GitHub, which reads that construct
            // otherwise: it is shown as code instead.
            let reach = range.start + token.reach;
            let runs_on = reach == range.end && source[reach..].starts_with(|c: char| !c.is_whitespace());
            if token.live && !runs_on {
                continue;
            }
            let code = inline_code(&slice[token.range], fence);
            edits.push((at.clone(), apart(source, at, code)));
        }
        return;
    }
    let rewritten = apart(source, range.clone(), rewrite(content, links, fence));
    if rewritten != slice {
        edits.push((range, rewritten));
    }
}

/// `replacement` of `at` with a space on a side where a code span it starts or ends
/// with would touch a backtick of the source, which would join the two fences.
fn apart(source: &str, at: Range<usize>, replacement: String) -> String {
    let before = replacement.starts_with('`') && source[..at.start].ends_with('`');
    let after = replacement.ends_with('`') && source[at.end..].starts_with('`');
    match (before, after) {
        (false, false) => replacement,
        (true, false) => format!(" {replacement}"),
        (false, true) => format!("{replacement} "),
        (true, true) => format!(" {replacement} "),
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
fn rewrite(content: &str, links: &LinkPolicy, fence: usize) -> String {
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
            false => out.push_str(&inline_code(text, fence)),
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
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(captures) = regex.captures_at(text, from) {
        let Some(whole) = captures.get(0) else { break };
        let token = if let Some(url) = captures.name("url") {
            // GitHub's autolink reads the source up to a space or `<`, an entity
            // such as `&lt;` included; a URL cut at one is shown as code, and what
            // follows the cut is searched again.
            let cut = url.as_str().split("&lt;").next().unwrap_or_default();
            let end = url.start() + trimmed_url(cut).len();
            let live = cut.len() == url.len() && links.allows(&text[url.start()..end]);
            Token { range: url.start()..end.max(url.start() + 1), live, reach: url.end() }
        } else if let Some(email) = captures.name("email") {
            Token { range: email.range(), live: false, reach: email.end() }
        } else {
            let len = whole.as_str().trim_end_matches(['.', '/', '-']).len();
            Token { range: whole.start()..whole.start() + len, live: false, reach: whole.end() }
        };
        from = token.range.end.max(whole.start() + 1);
        found.push(token);
    }
    found
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
