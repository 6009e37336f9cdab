//! The change's impact in the report, under "What was reviewed": how many changed
//! functions, callers and tests the reviewers were given, what the caps left out,
//! and the changed files that could not be parsed (or why no impact was given).

use serde_json::{Map, Value, json};
use std::fmt::Write as _;

use super::review_report::ReviewReport;
use crate::impact::ImpactRecord;

/// The Markdown paragraph, under the heading an incremental review already wrote or
/// its own; nothing for a review whose changed files hold no code.
pub(super) fn markdown(out: &mut String, r: &ReviewReport) {
    let Some(record) = r.impact.as_ref().filter(|record| worth_saying(record)) else { return };
    if !r.incremental() {
        let _ = writeln!(out, "\n## What was reviewed\n");
    }
    let _ = writeln!(out, "{}", sentence(record));
}

/// `review.impact` in the JSON report: the record as the run input has it.
pub(super) fn json(review: &mut Map<String, Value>, r: &ReviewReport) {
    if let Some(record) = &r.impact {
        review.insert("impact".into(), json!(record));
    }
}

fn worth_saying(record: &ImpactRecord) -> bool {
    record.off.is_some() || record.files > 0 || record.skipped.keys().any(|k| k != "language")
}

/// What the reviewers were given, in one paragraph.
fn sentence(record: &ImpactRecord) -> String {
    if let Some(why) = &record.off {
        return format!("**Impact:** not given to the reviewers: {why}.");
    }
    let (given, found) = (record.given, record.found);
    let mut text = if found.functions == 0 {
        format!("**Impact:** no changed function or method was found in the {} changed file(s) parsed.", record.files)
    } else {
        format!(
            "**Impact:** the reviewers were given {} changed function(s) with {} caller(s) and {} test(s) that use them",
            given.functions, given.callers, given.tests
        )
    };
    if found.functions > 0 {
        let cut = (found.functions - given.functions, found.callers - given.callers, found.tests - given.tests);
        if cut == (0, 0, 0) {
            text.push_str(" (all that were found).");
        } else {
            let _ = write!(
                text,
                "; the caps ({} callers and tests, {} bytes) left out {} function(s), {} caller(s) and {} test(s) of \
                 the {} function(s), {} caller(s) and {} test(s) found.",
                record.max_entries, record.max_bytes, cut.0, cut.1, cut.2, found.functions, found.callers, found.tests
            );
        }
    }
    let skipped: Vec<String> = record.skipped.iter().map(|(why, n)| format!("{n} {}", skip_words(why))).collect();
    if !skipped.is_empty() {
        let total: u32 = record.skipped.values().sum();
        let _ = write!(text, " {total} changed file(s) were not parsed: {}.", skipped.join(", "));
    }
    text
}

fn skip_words(reason: &str) -> &str {
    match reason {
        "language" => "in a language without a grammar",
        "binary" => "binary",
        "invalid_utf8" => "not valid UTF-8",
        "too_large" => "too large",
        "parse_error" => "the grammar could not parse",
        "unreadable" => "unreadable",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::impact::Counts;

    #[test]
    fn the_paragraph_says_what_was_given_cut_and_skipped() {
        let mut record = ImpactRecord {
            found: Counts { functions: 6, callers: 50, tests: 4 },
            given: Counts { functions: 5, callers: 38, tests: 2 },
            max_entries: 40,
            max_bytes: 8192,
            files: 7,
            ..ImpactRecord::default()
        };
        record.skipped.insert("binary".into(), 1);
        record.skipped.insert("language".into(), 2);
        assert_eq!(
            sentence(&record),
            "**Impact:** the reviewers were given 5 changed function(s) with 38 caller(s) and 2 test(s) that use \
             them; the caps (40 callers and tests, 8192 bytes) left out 1 function(s), 12 caller(s) and 2 test(s) of \
             the 6 function(s), 50 caller(s) and 4 test(s) found. 3 changed file(s) were not parsed: 1 binary, 2 in \
             a language without a grammar."
        );
        let off = ImpactRecord { off: Some("turned off".into()), ..ImpactRecord::default() };
        assert_eq!(sentence(&off), "**Impact:** not given to the reviewers: turned off.");
        let docs_only = ImpactRecord { skipped: [("language".to_string(), 3)].into(), ..ImpactRecord::default() };
        assert!(!worth_saying(&docs_only), "a change without code says nothing about impact");
    }
}
