//! The repository's rules in the report: which rules files the reviewers were given
//! (with their size, whether they were cut, and the globs that matched), and which
//! were refused or left out, and why.

use std::fmt::Write as _;

use super::review_report::ReviewReport;

/// The Markdown section; nothing when the review had no rules files.
pub(super) fn markdown(out: &mut String, r: &ReviewReport) {
    let rules = &r.rules;
    if rules.is_empty() {
        return;
    }
    let _ = writeln!(out, "## Repository rules\n");
    if rules.applied.is_empty() {
        let _ = writeln!(out, "The reviewers were given no rules file.\n");
    } else {
        let _ = writeln!(out, "The reviewers were given these rules files, in this order:\n");
    }
    for file in &rules.applied {
        let mut about = vec![format!("{} bytes", file.bytes)];
        if file.truncated {
            about.push(format!("cut to its first {} bytes", crate::rules::FILE_CAP));
        }
        if !file.globs.is_empty() {
            let globs: Vec<String> = file.globs.iter().map(|g| format!("`{g}`")).collect();
            about.push(format!("for the changes matching {}", globs.join(", ")));
        }
        if file.given {
            about.push("given for this review".into());
        }
        match (file.changed, r.configuration.as_ref().is_some_and(|c| c.from_base())) {
            (true, true) => about.push("**edited by this change**; the reviewers were given the base's version".into()),
            (true, false) => {
                about.push("**edited by this change**, which is reviewed under the rules as it leaves them".into())
            }
            _ => {}
        }
        let _ = writeln!(out, "- `{}` ({})", file.path, about.join("; "));
    }
    if !rules.applied.is_empty() {
        out.push('\n');
    }
    if !rules.refused.is_empty() {
        let _ = writeln!(out, "**Not given to the reviewers** ({}):\n", rules.refused.len());
        for refused in &rules.refused {
            let _ = writeln!(out, "- `{}`: {}", refused.path, refused.why);
        }
        out.push('\n');
    }
}
