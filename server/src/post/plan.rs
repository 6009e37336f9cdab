//! The pure part of posting a review: which findings and contradictions post, their
//! bodies with hidden markers, and how they reconcile with the comments already on
//! the pull request, as a list of writes. Both forges share it; nothing here does I/O.

use conclave_review::inert::code_span;
use conclave_review::report::{fingerprint, listed};
use conclave_shared::{Finding, FindingGroup, Stance};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use super::lines::Diff;

/// The start of every Conclave marker; a comment without one is not Conclave's.
const MARKER_START: &str = "<!-- conclave:";
/// Ends the part of a summary (a review body, a merge-request note) before its items.
pub const SUMMARY_MARKER: &str = "<!-- conclave:summary -->";

/// What an item is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// One finding of the review's result.
    Finding,
    /// Reviewers contradicting each other at one place.
    Contradiction,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Finding => "finding",
            Kind::Contradiction => "contradiction",
        }
    }
}

/// Whether a posted item is still reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Still reported by the latest review.
    Open,
    /// No longer reported: marked fixed, and never edited again unless it returns.
    Fixed,
}

/// One thing to post: a finding or a contradiction, keyed by its fingerprint.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// Finding or contradiction.
    pub kind: Kind,
    /// The fingerprint in its marker (for a contradiction, those of its sides).
    pub key: String,
    /// The file it is about.
    pub file: String,
    /// The line in the new version of the file.
    pub line: u64,
    /// Its text as an inline comment on that line.
    pub inline: String,
    /// Its text in a list outside the diff (with the place named).
    pub listed: String,
}

/// One marked part of a comment: an item's text followed by its marker.
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    /// Finding or contradiction.
    pub kind: Kind,
    /// The fingerprint.
    pub key: String,
    /// Open or fixed.
    pub state: State,
    /// The visible text, without the marker.
    pub content: String,
}

impl Section {
    /// The section as posted: its text, then its hidden marker.
    pub fn render(&self) -> String {
        let state = match self.state {
            State::Open => "open",
            State::Fixed => "fixed",
        };
        format!("{}\n\n<!-- conclave:{} fp={} state={state} -->", self.content.trim_end(), self.kind.as_str(), self.key)
    }
}

/// A Conclave comment already on the pull request: an inline comment (one section) or
/// a summary (a review body or a note: a preamble, then sections).
#[derive(Debug, Clone, PartialEq)]
pub struct Existing {
    /// The comment's (or the review's, or the note's) id.
    pub id: String,
    /// GitLab's discussion id; none on GitHub.
    pub thread: Option<String>,
    /// Whether it is a summary (sections listed with their places) or inline.
    pub summary: bool,
    /// Its body as the forge returned it.
    pub body: String,
}

/// A new inline comment.
#[derive(Debug, Clone, PartialEq)]
pub struct NewInline {
    /// The file in the new version.
    pub path: String,
    /// The file's path before the change (differs when renamed).
    pub old_path: String,
    /// The line in the new version.
    pub line: u64,
    /// The line in the old version when the line is unchanged context.
    pub old_line: Option<u64>,
    /// The body, marker included.
    pub body: String,
}

/// An edit of an existing comment.
#[derive(Debug, Clone, PartialEq)]
pub struct Edit {
    /// The comment's id.
    pub id: String,
    /// GitLab's discussion id.
    pub thread: Option<String>,
    /// Whether the comment is a summary (a GitHub review body, a GitLab note).
    pub summary: bool,
    /// The new body.
    pub body: String,
    /// Resolve (`Some(true)`) or reopen (`Some(false)`) the thread, where the forge has threads.
    pub resolve: Option<bool>,
    /// How many of its items this edit marks fixed.
    pub fixed: usize,
}

/// The writes that bring the pull request in line with the review.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    /// New comments on diff lines.
    pub inline: Vec<NewInline>,
    /// New items outside the diff, for a new summary; rendered sections.
    pub outside: Vec<String>,
    /// Edits of existing comments: changed text, fixed items, items appended to a summary.
    pub edits: Vec<Edit>,
}

impl Plan {
    /// Whether the plan writes nothing at all.
    pub fn is_empty(&self) -> bool {
        self.inline.is_empty() && self.outside.is_empty() && self.edits.is_empty()
    }
}

/// How to reconcile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Mark items no longer reported as fixed (not when the review is degraded: an
    /// agent that failed reports nothing, which is no evidence of a fix).
    pub mark_fixed: bool,
    /// Add new items outside the diff to the existing summary instead of a new one
    /// (GitLab keeps one note; GitHub adds a review per posting).
    pub append_to_summary: bool,
}

/// What posts: listed findings (neither unanchored nor dismissed) that `keep`
/// accepts (the review's `--min-support` and `--min-stability`), then one item per
/// contradiction.
pub fn items(findings: &[Finding], contradictions: &[&FindingGroup], keep: impl Fn(&Finding) -> bool) -> Vec<Item> {
    let mut items: Vec<Item> = Vec::new();
    for f in findings.iter().filter(|f| listed(f) && keep(f)) {
        let item = finding_item(f);
        if !items.iter().any(|i| i.key == item.key) {
            items.push(item);
        }
    }
    for group in contradictions {
        let item = contradiction_item(group);
        if !items.iter().any(|i| i.key == item.key) {
            items.push(item);
        }
    }
    items
}

fn finding_item(f: &Finding) -> Item {
    let severity = f.severity.map_or("finding", |s| s.as_str());
    let stance = if f.effective_stance() == Stance::Approval { " (approval)" } else { "" };
    let lane = f.raised_by.as_deref().unwrap_or(&f.agent);
    let support = f.support.map(|s| format!(" · raised by {s} reviewer(s)")).unwrap_or_default();
    let text = format!("**{severity}**{stance} · {lane}{support}\n\n{}", f.description.trim());
    Item {
        kind: Kind::Finding,
        key: fingerprint(f),
        file: f.file.clone(),
        line: f.line,
        listed: format!("{} line {}: {text}", code_span(&f.file), f.line),
        inline: text,
    }
}

fn contradiction_item(group: &FindingGroup) -> Item {
    let mut keys: Vec<String> = group.findings.iter().map(fingerprint).collect();
    keys.sort();
    keys.dedup();
    let sides: Vec<String> = group
        .findings
        .iter()
        .map(|f| {
            let stance = if f.effective_stance() == Stance::Approval { "approval" } else { "concern" };
            let severity = f.severity.map_or("unrated", |s| s.as_str());
            let lane = f.raised_by.as_deref().unwrap_or(&f.agent);
            format!("- **{lane}** ({severity}, {stance}): {}", f.description.trim())
        })
        .collect();
    let text = format!("**Reviewers contradict each other here.** {}\n\n{}", group.summary.trim(), sides.join("\n"));
    Item {
        kind: Kind::Contradiction,
        key: keys.join("+"),
        file: group.file.clone(),
        line: group.line,
        listed: format!("{} line {}: {text}", code_span(&group.file), group.line),
        inline: text,
    }
}

/// The preamble of a summary (up to its marker, or nothing) and its sections.
pub fn split(body: &str) -> (String, Vec<Section>) {
    let (preamble, mut rest) = match body.find(SUMMARY_MARKER) {
        Some(at) => (body[..at + SUMMARY_MARKER.len()].to_string(), &body[at + SUMMARY_MARKER.len()..]),
        None => (String::new(), body),
    };
    let mut sections = Vec::new();
    while let Some(start) = rest.find(MARKER_START) {
        let Some(len) = rest[start..].find("-->") else { break };
        let marker = &rest[start + MARKER_START.len()..start + len];
        if let Some((kind, key, state)) = parse_marker(marker) {
            sections.push(Section { kind, key, state, content: rest[..start].trim().to_string() });
        }
        rest = &rest[start + len + 3..];
    }
    (preamble, sections)
}

/// `finding fp=KEY state=open` → its parts.
fn parse_marker(marker: &str) -> Option<(Kind, String, State)> {
    let mut words = marker.split_whitespace();
    let kind = match words.next()? {
        "finding" => Kind::Finding,
        "contradiction" => Kind::Contradiction,
        _ => return None,
    };
    let (mut key, mut state) = (None, State::Open);
    for word in words {
        match word.split_once('=') {
            Some(("fp", value)) if !value.is_empty() => key = Some(value.to_string()),
            Some(("state", "fixed")) => state = State::Fixed,
            _ => {}
        }
    }
    Some((kind, key?, state))
}

/// A summary's body: its preamble, then its sections.
pub fn join(preamble: &str, sections: &[Section]) -> String {
    let mut parts: Vec<String> = Vec::new();
    if !preamble.trim().is_empty() {
        parts.push(preamble.trim().to_string());
    }
    parts.extend(sections.iter().map(Section::render));
    parts.join("\n\n")
}

/// The text of an item that is no longer reported: a clear first line, then what it said.
pub fn fixed_text(content: &str) -> String {
    format!(
        "**Fixed**: Conclave's latest review no longer reports this.\n\n<details><summary>What it said</summary>\n\n{}\n\n</details>",
        content.trim()
    )
}

/// Reconciles the items with the comments already posted: new items become new
/// comments (inline where the diff has their line, else outside it); posted ones are
/// edited only when their text changed; posted ones no longer reported are marked
/// fixed once.
pub fn plan(items: &[Item], diff: &Diff, existing: &[Existing], options: Options) -> Plan {
    plan_keeping(items, diff, existing, options, &BTreeSet::new())
}

/// [`plan`], leaving the posted items of the `dismissed` fingerprints as they are:
/// a dismissed finding is not reported, and is not fixed either.
pub fn plan_keeping(
    items: &[Item],
    diff: &Diff,
    existing: &[Existing],
    options: Options,
    dismissed: &BTreeSet<String>,
) -> Plan {
    let current: BTreeMap<&str, &Item> = items.iter().map(|i| (i.key.as_str(), i)).collect();
    let mut posted: BTreeSet<String> = BTreeSet::new();
    let mut plan = Plan::default();
    let mut summary_to_extend: Option<(usize, Option<Edit>)> = None;
    for (index, comment) in existing.iter().enumerate() {
        let edit = reconcile(comment, &current, &mut posted, options.mark_fixed, dismissed);
        if comment.summary && options.append_to_summary && summary_to_extend.is_none() {
            summary_to_extend = Some((index, edit));
        } else {
            plan.edits.extend(edit);
        }
    }
    for item in items.iter().filter(|i| !posted.contains(&i.key)) {
        let open = |content: &str| Section {
            kind: item.kind,
            key: item.key.clone(),
            state: State::Open,
            content: content.to_string(),
        };
        match diff.place(&item.file, item.line) {
            Some((old_path, old_line)) => plan.inline.push(NewInline {
                path: item.file.clone(),
                old_path: old_path.to_string(),
                line: item.line,
                old_line,
                body: open(&item.inline).render(),
            }),
            None => plan.outside.push(open(&item.listed).render()),
        }
    }
    if let Some((index, edit)) = summary_to_extend {
        let comment = &existing[index];
        let mut body = edit.as_ref().map_or_else(|| comment.body.clone(), |e| e.body.clone());
        for section in plan.outside.drain(..) {
            body = format!("{}\n\n{section}", body.trim_end());
        }
        if !same_text(&body, &comment.body) {
            let fixed = edit.map_or(0, |e| e.fixed);
            plan.edits.push(Edit { body, fixed, ..edit_of(comment) });
        }
    }
    plan
}

/// The edit of one posted comment, if its text must change.
fn reconcile(
    comment: &Existing,
    current: &BTreeMap<&str, &Item>,
    posted: &mut BTreeSet<String>,
    mark_fixed: bool,
    dismissed: &BTreeSet<String>,
) -> Option<Edit> {
    let (preamble, sections) = split(&comment.body);
    let (mut fixed, mut reopened) = (0, false);
    let mut updated = Vec::with_capacity(sections.len());
    for section in sections {
        if !posted.insert(section.key.clone()) {
            // Posted twice (by hand, or by an older version): the first copy speaks for it.
            updated.push(section);
            continue;
        }
        match current.get(section.key.as_str()) {
            Some(item) => {
                reopened |= section.state == State::Fixed;
                let content = if comment.summary { &item.listed } else { &item.inline };
                updated.push(Section { state: State::Open, content: content.clone(), ..section });
            }
            None if mark_fixed && section.state == State::Open && !dismissed.contains(&section.key) => {
                fixed += 1;
                updated.push(Section { state: State::Fixed, content: fixed_text(&section.content), ..section });
            }
            None => updated.push(section),
        }
    }
    let body = join(&preamble, &updated);
    if same_text(&body, &comment.body) {
        return None;
    }
    let all_fixed = updated.iter().all(|s| s.state == State::Fixed);
    let resolve = match (comment.summary, fixed > 0 && all_fixed, reopened) {
        (true, _, _) => None,
        (false, true, _) => Some(true),
        (false, false, true) => Some(false),
        _ => None,
    };
    Some(Edit { body, resolve, fixed, ..edit_of(comment) })
}

/// Whether two bodies say the same (forges may store line ends as CRLF and trim).
fn same_text(a: &str, b: &str) -> bool {
    a.replace("\r\n", "\n").trim() == b.replace("\r\n", "\n").trim()
}

fn edit_of(comment: &Existing) -> Edit {
    Edit {
        id: comment.id.clone(),
        thread: comment.thread.clone(),
        summary: comment.summary,
        body: comment.body.clone(),
        resolve: None,
        fixed: 0,
    }
}

/// A new summary: its title, the summary marker, then its sections.
pub fn summary(title: &str, sections: &[String]) -> String {
    let mut body = format!("{title}\n{SUMMARY_MARKER}");
    for section in sections {
        body = format!("{body}\n\n{section}");
    }
    body
}

/// What a posting wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Posted {
    /// New comments on diff lines.
    pub inline: usize,
    /// New items outside the diff (in a review body or the summary note).
    pub outside: usize,
    /// Comments edited (changed text, items marked fixed or added to the summary).
    pub edited: usize,
    /// Items marked fixed.
    pub fixed: usize,
    /// `/conclave dismiss` replies answered.
    pub answered: usize,
}

impl fmt::Display for Posted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == Posted::default() {
            return f.write_str("nothing new to post");
        }
        write!(
            f,
            "{} new comment(s) on the diff, {} outside it, {} comment(s) edited ({} item(s) marked fixed)",
            self.inline, self.outside, self.edited, self.fixed
        )?;
        match self.answered {
            0 => Ok(()),
            n => write!(f, ", {n} `/conclave dismiss` reply(ies) answered"),
        }
    }
}

impl From<&Plan> for Posted {
    fn from(plan: &Plan) -> Posted {
        Posted {
            inline: plan.inline.len(),
            outside: plan.outside.len(),
            edited: plan.edits.len(),
            fixed: plan.edits.iter().map(|e| e.fixed).sum(),
            answered: 0,
        }
    }
}

/// Whether a comment's body is Conclave's (it carries a marker).
pub fn is_conclave(body: &str) -> bool {
    body.contains(MARKER_START)
}
