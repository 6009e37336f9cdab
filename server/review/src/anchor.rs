//! Anchors and fingerprints: checking a finding's quoted evidence against the file
//! under review, and naming the code a finding points at so that it is recognised
//! again after lines above it move.
//!
//! A quote is compared line by line with the file, whitespace collapsed, each quoted
//! line contained in the file line it lines up with (so a quote may be a fragment of
//! a line, or several lines). Found at the cited line, the finding is *anchored*;
//! found within [`NEAR`] lines, or in exactly one place elsewhere in the file, it is
//! *relocated* and its line corrected; otherwise it is *unanchored*. A finding whose
//! quote is missing or too short to mean anything is *unquoted*, and one whose file
//! cannot be read is *unchecked*.
//!
//! The fingerprint hashes the file, the lane (who raised it) and the normalized text
//! of the finding's line, never the line number: this is the idea of SARIF's
//! `primaryLocationLineHash`. When that text occurs more than once in the file, its
//! two neighbours are hashed too, to tell the places apart; a unique line is hashed
//! alone, so fixing the line next to it does not change it. Identical blocks of code
//! share their fingerprints.

use conclave_shared::{Anchor, Finding};
use sha2::{Digest, Sha256};
use std::cell::OnceCell;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

/// How far from the cited line a quote may be and still be taken as the place meant.
pub const NEAR: u64 = 5;

/// The fewest characters (whitespace aside) a quote needs to be checked: `}` or `);`
/// would match almost anywhere.
const MIN_QUOTE: usize = 4;

/// A file's lines, normalized once for every finding in it: one buffer holding every
/// normalized line, and where each ends, so a large file costs two allocations.
#[derive(Debug, Clone)]
pub struct SourceLines {
    buffer: String,
    ends: Vec<usize>,
    /// How often each normalized line occurs, by hash; built on first use.
    counts: OnceCell<HashMap<u64, u32>>,
}

impl SourceLines {
    /// Splits and normalizes `text`.
    pub fn new(text: &str) -> SourceLines {
        let mut buffer = String::with_capacity(text.len());
        let mut ends = Vec::new();
        for line in text.lines() {
            push_normalized(&mut buffer, line);
            ends.push(buffer.len());
            // Lines are kept apart so that a search of the whole buffer never matches
            // across two of them (a quote line has no newline).
            buffer.push('\n');
        }
        SourceLines { buffer, ends, counts: OnceCell::new() }
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    /// Normalized line `i` (0-based).
    fn line(&self, i: usize) -> Option<&str> {
        let end = *self.ends.get(i)?;
        let start = if i == 0 { 0 } else { self.ends[i - 1] + 1 };
        self.buffer.get(start..end)
    }

    /// Where the quote `quote` (already split and normalized) starts, if it starts at
    /// `start` (0-based).
    fn matches_at(&self, quote: &[String], start: usize) -> bool {
        start + quote.len() <= self.len()
            && quote.iter().enumerate().all(|(k, q)| self.line(start + k).is_some_and(|line| line.contains(q.as_str())))
    }

    /// Every start of `quote` in the file: one search of the whole buffer for its
    /// first line, then the rest checked where that was found.
    fn starts_of(&self, quote: &[String]) -> Vec<usize> {
        let Some(first) = quote.first() else { return Vec::new() };
        let mut starts: Vec<usize> = self
            .buffer
            .match_indices(first.as_str())
            .map(|(at, _)| self.ends.partition_point(|&end| end < at))
            .filter(|&i| self.matches_at(quote, i))
            .collect();
        starts.dedup();
        starts
    }

    /// The context a fingerprint hashes: the line (1-based) alone when its text is
    /// unique in the file, so that edits next to it (often the fix of a neighbouring
    /// finding) leave it alone; with its neighbours when the same text occurs again.
    fn context(&self, line: u64) -> Option<String> {
        let at = usize::try_from(line).ok()?.checked_sub(1)?;
        let here = self.line(at)?;
        if self.occurrences(here) == 1 {
            return Some(here.to_string());
        }
        let get = |i: Option<usize>| i.and_then(|i| self.line(i)).unwrap_or("");
        Some(format!("{}\n{here}\n{}", get(at.checked_sub(1)), get(at.checked_add(1))))
    }

    /// How many lines of the file read `text` (normalized).
    fn occurrences(&self, text: &str) -> u32 {
        let counts = self.counts.get_or_init(|| {
            let mut counts = HashMap::new();
            for i in 0..self.len() {
                *counts.entry(hash_of(self.line(i).unwrap_or(""))).or_insert(0) += 1;
            }
            counts
        });
        counts.get(&hash_of(text)).copied().unwrap_or(0)
    }
}

/// Checks each finding's quote against its file, corrects relocated lines, and gives
/// every finding its fingerprint. `read` returns a file's text by its repository
/// path, or `None` when it cannot be read; each file is read once.
pub fn anchor_findings(findings: &mut [Finding], mut read: impl FnMut(&str) -> Option<String>) {
    let mut files: HashMap<String, Option<SourceLines>> = HashMap::new();
    for finding in findings {
        let source =
            files.entry(finding.file.clone()).or_insert_with(|| read(&finding.file).map(|t| SourceLines::new(&t)));
        anchor_finding(finding, source.as_ref());
    }
}

/// Checks one finding against its file's lines (`None`: the file is unreadable).
pub fn anchor_finding(finding: &mut Finding, source: Option<&SourceLines>) {
    let quote = finding.evidence.as_deref().map(quote_lines).unwrap_or_default();
    let anchor = match source {
        None => Anchor::Unchecked,
        Some(_) if quote.is_empty() => Anchor::Unquoted,
        Some(source) => match locate(source, &quote, finding.line) {
            Located::Here => Anchor::Anchored,
            Located::At(line) => {
                finding.cited_line = Some(finding.line);
                finding.line = line;
                Anchor::Relocated
            }
            Located::Nowhere => Anchor::Unanchored,
        },
    };
    finding.anchor = Some(anchor);
    finding.fingerprint = Some(fingerprint(finding, source));
}

/// The fingerprint of `finding` at its (possibly corrected) line.
pub fn fingerprint(finding: &Finding, source: Option<&SourceLines>) -> String {
    let lane = finding.raised_by.as_deref().unwrap_or(&finding.agent);
    // Without the file's text, what the agent quoted or said is the best content.
    let content = source.and_then(|s| s.context(finding.line)).unwrap_or_else(|| match &finding.evidence {
        Some(quote) => format!("quote:{}", quote_lines(quote).join("\n")),
        None => format!("said:{}", normalize(&finding.description)),
    });
    let mut hash = Sha256::new();
    for part in [finding.file.as_str(), lane, content.as_str()] {
        hash.update(part.as_bytes());
        hash.update([0]);
    }
    let digest = format!("{:x}", hash.finalize());
    digest[..32].to_string()
}

enum Located {
    Here,
    At(u64),
    Nowhere,
}

/// Where `quote` is relative to the cited line (1-based).
fn locate(source: &SourceLines, quote: &[String], cited: u64) -> Located {
    let cited_at = cited.saturating_sub(1) as usize;
    // A quote of several lines is anchored when the cited line is one of them.
    let first = cited_at.saturating_sub(quote.len() - 1);
    if (first..=cited_at).any(|start| source.matches_at(quote, start)) {
        return Located::Here;
    }
    for distance in 1..=NEAR as usize {
        let candidates = [cited_at.checked_sub(distance), cited_at.checked_add(distance)];
        if let Some(start) = candidates.into_iter().flatten().find(|&s| source.matches_at(quote, s)) {
            return Located::At(start as u64 + 1);
        }
    }
    match source.starts_of(quote).as_slice() {
        [only] => Located::At(*only as u64 + 1),
        _ => Located::Nowhere,
    }
}

/// A quote as lines to look for: code fences, surrounding backticks and quotes, and
/// blank lines dropped, whitespace collapsed. Empty when too short to check.
/// A quote's lines, trimmed of the markup models wrap code in and with whitespace
/// collapsed; empty when the quote is too short to mean anything.
pub(crate) fn quote_lines(quote: &str) -> Vec<String> {
    let lines: Vec<String> = quote
        .lines()
        .filter(|l| !l.trim_start().starts_with("```"))
        .map(|l| normalize(l.trim().trim_matches(|c| c == '`' || c == '"' || c == '\'')))
        .filter(|l| !l.is_empty())
        .collect();
    let meaningful: usize = lines.iter().map(|l| l.chars().filter(|c| !c.is_whitespace()).count()).sum();
    if meaningful < MIN_QUOTE { Vec::new() } else { lines }
}

fn hash_of(text: &str) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut hasher);
    hasher.finish()
}

/// Whitespace collapsed to single spaces, trimmed.
fn normalize(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    push_normalized(&mut out, line);
    out
}

/// Appends `line` with its whitespace collapsed to single spaces and trimmed. ASCII
/// whitespace only, byte by byte: this runs over every line of every file a finding
/// cites, and quotes go through the same function, so the two always agree.
fn push_normalized(out: &mut String, line: &str) {
    let mut pending_space = false;
    let mut start = None;
    for (i, b) in line.bytes().enumerate() {
        if b.is_ascii_whitespace() {
            if let Some(s) = start.take() {
                if pending_space {
                    out.push(' ');
                }
                out.push_str(&line[s..i]);
                pending_space = true;
            }
        } else if start.is_none() {
            start = Some(i);
        }
    }
    if let Some(s) = start {
        if pending_space {
            out.push(' ');
        }
        out.push_str(&line[s..]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(line: u64, evidence: Option<&str>) -> Finding {
        Finding {
            agent: "security".into(),
            file: "src/upload.rs".into(),
            line,
            description: "the path comes from the user".into(),
            evidence: evidence.map(str::to_string),
            ..Finding::default()
        }
    }

    const FILE: &str = "fn upload(req: Request) {\n    let name = req.param(\"name\");\n    let path = root.join(name);\n    std::fs::write(&path, req.body())?;\n}\n";

    fn anchored(line: u64, evidence: Option<&str>, text: &str) -> Finding {
        let mut f = finding(line, evidence);
        anchor_finding(&mut f, Some(&SourceLines::new(text)));
        f
    }

    #[test]
    fn a_quote_at_the_cited_line_is_anchored() {
        let f = anchored(3, Some("let path = root.join(name);"), FILE);
        assert_eq!((f.anchor, f.line, f.cited_line), (Some(Anchor::Anchored), 3, None));
    }

    #[test]
    fn whitespace_fences_and_backticks_do_not_matter() {
        let f = anchored(3, Some("```rust\n`let  path =\troot.join(name);`\n```"), FILE);
        assert_eq!(f.anchor, Some(Anchor::Anchored));
        let text = "fn f() {\n\tlet naïve  =  \"ünïcode\";\n}\n";
        assert_eq!(anchored(2, Some("naïve = \"ünïcode\""), text).anchor, Some(Anchor::Anchored));
    }

    #[test]
    fn a_quote_three_lines_away_is_relocated_and_the_line_corrected() {
        let text = format!("{}\n\n\n\n{FILE}", "// header");
        // The quote is now on line 7; the agent cited line 4.
        let f = anchored(4, Some("root.join(name)"), &text);
        assert_eq!((f.anchor, f.line, f.cited_line), (Some(Anchor::Relocated), 7, Some(4)));
    }

    #[test]
    fn an_invented_quote_is_unanchored() {
        let f = anchored(3, Some("sanitize(name).unwrap()"), FILE);
        assert_eq!((f.anchor, f.line), (Some(Anchor::Unanchored), 3));
    }

    #[test]
    fn a_quote_repeated_far_away_is_unanchored_but_a_unique_one_is_found() {
        let far = format!("{FILE}{}", "\n".repeat(40));
        let repeated = format!("{far}let path = root.join(name);\n{far}let path = root.join(name);\n");
        assert_eq!(anchored(30, Some("let path = root.join(name);"), &repeated).anchor, Some(Anchor::Unanchored));
        let f = anchored(30, Some("std::fs::write(&path, req.body())"), &far);
        assert_eq!((f.anchor, f.line), (Some(Anchor::Relocated), 4));
    }

    #[test]
    fn a_quote_of_several_lines_is_anchored_on_any_of_them() {
        let quote = "let name = req.param(\"name\");\nlet path = root.join(name);";
        assert_eq!(anchored(2, Some(quote), FILE).anchor, Some(Anchor::Anchored));
        assert_eq!(anchored(3, Some(quote), FILE).anchor, Some(Anchor::Anchored));
    }

    #[test]
    fn missing_or_trivial_quotes_are_unquoted_and_unreadable_files_unchecked() {
        assert_eq!(anchored(3, None, FILE).anchor, Some(Anchor::Unquoted));
        assert_eq!(anchored(5, Some(" } "), FILE).anchor, Some(Anchor::Unquoted));
        let mut f = finding(3, Some("root.join(name)"));
        anchor_finding(&mut f, None);
        assert_eq!(f.anchor, Some(Anchor::Unchecked));
        assert_eq!(f.fingerprint.as_deref().map(str::len), Some(32));
    }

    #[test]
    fn the_fingerprint_survives_five_lines_of_drift_and_tells_places_apart() {
        let before = anchored(3, Some("root.join(name)"), FILE);
        let moved = format!("use std::fs;\nuse std::path::Path;\n\n// Uploads.\n\n{FILE}");
        let after = anchored(8, Some("root.join(name)"), &moved);
        assert_eq!(after.anchor, Some(Anchor::Anchored));
        assert_eq!(before.fingerprint, after.fingerprint, "only the line number changed");
        let elsewhere = anchored(4, Some("std::fs::write"), FILE);
        assert_ne!(before.fingerprint, elsewhere.fingerprint);
        let next_fixed = FILE.replace("std::fs::write(&path, req.body())?;", "atomic_write(&path, req.body())?;");
        assert_eq!(
            anchored(3, Some("root.join(name)"), &next_fixed).fingerprint,
            before.fingerprint,
            "a neighbour changed"
        );
        let twice = format!("{FILE}{}", FILE.replace("req.param(\"name\")", "req.param(\"file\")"));
        let (first, second) =
            (anchored(3, Some("root.join(name)"), &twice), anchored(8, Some("root.join(name)"), &twice));
        assert_eq!((first.anchor, second.anchor), (Some(Anchor::Anchored), Some(Anchor::Anchored)));
        assert_ne!(first.fingerprint, second.fingerprint, "repeated code is told apart by its neighbours");
        let mut other_lane = finding(3, Some("root.join(name)"));
        other_lane.raised_by = Some("correctness".into());
        anchor_finding(&mut other_lane, Some(&SourceLines::new(FILE)));
        assert_ne!(before.fingerprint, other_lane.fingerprint, "the lane is part of it");
    }

    #[test]
    fn each_file_is_read_once() {
        let mut findings = vec![finding(3, Some("root.join(name)")), finding(4, Some("std::fs::write"))];
        let mut reads = 0;
        anchor_findings(&mut findings, |_| {
            reads += 1;
            Some(FILE.to_string())
        });
        assert_eq!(reads, 1);
        assert!(findings.iter().all(|f| f.anchor == Some(Anchor::Anchored)));
    }
}
