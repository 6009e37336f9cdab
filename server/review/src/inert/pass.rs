//! One pass of the sanitizer over a text: parsed by pulldown-cmark with offsets,
//! each unsafe construct found in the source and replaced there, everything else
//! copied as it was. A pass can reveal what the text hid (an HTML block read as
//! Markdown once escaped), so `mod.rs` repeats passes until one changes nothing.

use pulldown_cmark::{BrokenLink, CodeBlockKind, Event, LinkType, Options, Parser, Tag, TagEnd};
use std::cell::RefCell;
use std::ops::Range;

use super::code::{break_markers, inline_code, longest_run};
use super::links::LinkPolicy;
use super::text::{Edit, run_edits};

/// The Markdown GitHub and GitLab read: CommonMark with GFM's tables,
/// strikethrough, task lists, footnotes and alerts.
fn options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_GFM
}

/// `text` with this pass's edits applied.
pub(super) fn sanitize_once(text: &str, links: &LinkPolicy) -> String {
    let broken: RefCell<Vec<Range<usize>>> = RefCell::default();
    // Full and collapsed references (`[x][1]`, `[x][]`) are unmistakably links;
    // a shortcut (`[x]`) is left as written: tags such as `[SC2086]` read as one, and
    // it can resolve only through a definition, which no sanitized text keeps.
    let callback = |link: BrokenLink<'_>| {
        if matches!(link.link_type, LinkType::Reference | LinkType::Collapsed) {
            broken.borrow_mut().push(link.span);
        }
        None
    };
    let parser = Parser::new_with_broken_link_callback(text, options(), Some(callback));
    let definitions: Vec<Range<usize>> = parser.reference_definitions().iter().map(|(_, d)| d.span.clone()).collect();
    let events: Vec<(Event<'_>, Range<usize>)> = parser.into_offset_iter().collect();
    let mut edits = Vec::new();
    // Code spans written into the text are fenced longer than any backtick run it
    // reads as text, so none pairs with a lone backtick the text had.
    let fence = events
        .iter()
        .filter_map(|(event, range)| match event {
            Event::Text(_) => Some(longest_run(&text[range.clone()], '`')),
            _ => None,
        })
        .max()
        .unwrap_or(0)
        + 1;
    Walk { source: text, links, fence, edits: &mut edits, run: None, code: 0, skip_until: 0 }.events(&events);
    // A reference a definition elsewhere in a composed body could resolve, and a
    // definition another fragment's reference could use, are both made plain text.
    for span in broken.into_inner() {
        edits.push((span.clone(), escape_brackets(&text[span])));
    }
    for span in definitions {
        if let Some(open) = text[span.clone()].find('[') {
            edits.push((span.start + open..span.start + open, "\\".to_string()));
        }
    }
    apply(text, edits)
}

/// The events' walk: the run of text being gathered, the depth of code blocks, and
/// the end of a construct replaced whole.
struct Walk<'a> {
    source: &'a str,
    links: &'a LinkPolicy,
    fence: usize,
    edits: &'a mut Vec<Edit>,
    run: Option<(Range<usize>, String)>,
    code: usize,
    skip_until: usize,
}

impl Walk<'_> {
    fn events(&mut self, events: &[(Event<'_>, Range<usize>)]) {
        for (event, range) in events {
            if range.start < self.skip_until {
                continue;
            }
            match event {
                Event::Text(text) if self.code == 0 => self.gather(range.clone(), text),
                Event::Text(_) | Event::Code(_) => {
                    self.flush();
                    self.code_text(range.clone());
                }
                Event::Html(_) | Event::InlineHtml(_) => {
                    self.flush();
                    let slice = &self.source[range.clone()];
                    self.edits.push((range.clone(), slice.replace('<', "&lt;")));
                }
                Event::Start(Tag::Image { .. }) => self.replace_whole(range.clone()),
                Event::Start(Tag::Link { link_type, dest_url, .. }) => {
                    self.flush();
                    let kept =
                        matches!(link_type, LinkType::Inline | LinkType::Autolink) && self.links.allows(dest_url);
                    if !kept {
                        self.replace_whole(range.clone());
                    } else if *link_type == LinkType::Autolink {
                        // A kept autolink's text is its URL, which the policy allowed.
                        self.skip_until = range.end;
                    }
                }
                Event::Start(Tag::CodeBlock(kind)) => {
                    self.flush();
                    self.code += 1;
                    if let CodeBlockKind::Fenced(_) = kind {
                        self.close_fence(range.clone());
                    }
                }
                Event::End(TagEnd::CodeBlock) => {
                    self.code = self.code.saturating_sub(1);
                }
                _ => self.flush(),
            }
        }
        self.flush();
    }

    /// Adds a piece of text to the run it continues (directly, or after a backslash
    /// escape), or starts a new run.
    fn gather(&mut self, range: Range<usize>, text: &str) {
        if let Some((run, content)) = self.run.as_mut() {
            let joined = run.end == range.start
                || (run.end + 1 == range.start && self.source.as_bytes().get(run.end) == Some(&b'\\'));
            if joined {
                run.end = range.end;
                content.push_str(text);
                return;
            }
        }
        self.flush();
        // A run that starts with an escaped character takes its backslash along, so
        // that writing the run anew replaces the escape too.
        let bytes = self.source.as_bytes();
        let escaped =
            range.start >= 1 && bytes[range.start - 1] == b'\\' && (range.start < 2 || bytes[range.start - 2] != b'\\');
        let start = if escaped { range.start - 1 } else { range.start };
        self.run = Some((start..range.end, text.to_string()));
    }

    fn flush(&mut self) {
        if let Some((range, content)) = self.run.take() {
            run_edits(self.source, (range, &content), self.links, self.fence, self.edits);
        }
    }

    /// Code stays as it is, but for forged Conclave markers.
    fn code_text(&mut self, range: Range<usize>) {
        let slice = &self.source[range.clone()];
        if let std::borrow::Cow::Owned(broken) = break_markers(slice) {
            self.edits.push((range, broken));
        }
    }

    /// An image, or a link the policy does not keep, shown as the code of its source.
    fn replace_whole(&mut self, range: Range<usize>) {
        self.flush();
        let slice = &self.source[range.clone()];
        self.edits.push((range.clone(), inline_code(&break_markers(slice), self.fence)));
        self.skip_until = range.end;
    }

    /// A fenced code block the text leaves open would swallow whatever Conclave
    /// writes after it: it is closed where the text ends.
    fn close_fence(&mut self, range: Range<usize>) {
        let block = &self.source[range.clone()];
        let opening = block.trim_start_matches([' ', '\t']);
        let Some(mark) = opening.chars().next().filter(|c| *c == '`' || *c == '~') else { return };
        let width = opening.chars().take_while(|c| *c == mark).count();
        let mut lines = block.trim_end_matches(['\n', '\r']).lines();
        let last = lines.next_back().filter(|_| lines.next().is_some());
        let closes = |line: &str| {
            let line = line.trim_start_matches([' ', '\t', '>']).trim_end();
            line.len() >= width && line.chars().all(|c| c == mark)
        };
        if last.is_some_and(closes) {
            return;
        }
        let line_start = self.source[..range.start].rfind('\n').map_or(0, |i| i + 1);
        let prefix: String =
            self.source[line_start..range.start].chars().map(|c| if c == '>' || c == '\t' { c } else { ' ' }).collect();
        let fence = mark.to_string().repeat(width);
        let at_end = range.end >= self.source.trim_end_matches(['\n', '\r']).len();
        let closing = match (block.ends_with('\n'), at_end) {
            (true, true) => format!("{prefix}{fence}"),
            (true, false) => format!("{prefix}{fence}\n"),
            (false, true) => format!("\n{prefix}{fence}"),
            (false, false) => format!("\n{prefix}{fence}\n"),
        };
        self.edits.push((range.end..range.end, closing));
    }
}

/// A reference's source with its brackets escaped, so it reads as plain text.
fn escape_brackets(source: &str) -> String {
    let mut out = String::with_capacity(source.len() + 4);
    let mut escaped = false;
    for c in source.chars() {
        if (c == '[' || c == ']') && !escaped {
            out.push('\\');
        }
        escaped = c == '\\' && !escaped;
        out.push(c);
    }
    out
}

/// `text` with `edits` applied; of edits that overlap, the one starting first (the
/// longer, at one start) is applied, and a later pass sees to the rest.
fn apply(text: &str, mut edits: Vec<Edit>) -> String {
    edits.sort_by(|a, b| a.0.start.cmp(&b.0.start).then(b.0.end.cmp(&a.0.end)));
    let mut out = String::with_capacity(text.len() + 64);
    let mut at = 0;
    for (range, replacement) in edits {
        if range.start < at {
            continue;
        }
        out.push_str(&text[at..range.start]);
        out.push_str(&replacement);
        at = range.end;
    }
    out.push_str(&text[at..]);
    out
}
