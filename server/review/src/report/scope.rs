//! What a review covered, in the report: in an incremental review, the commits
//! reviewed now and those an earlier review reviewed, and how many earlier findings
//! were carried forward; in a full review that was asked to be incremental, why it
//! was not.

use conclave_shared::BaselineState;
use std::fmt::Write as _;

use super::review_report::ReviewReport;
use crate::incremental::{Commits, Scope, short};

/// The Markdown section, after the verdict; nothing when no scope was asked for.
pub(super) fn markdown(out: &mut String, r: &ReviewReport) {
    let Some(scope) = &r.scope else { return };
    match scope {
        Scope::Full { why } => {
            let _ = writeln!(out, "\n> **Full review:** {why}.");
        }
        Scope::Incremental { since, earlier_run, now, earlier } => {
            let _ = writeln!(out, "\n## What was reviewed\n");
            let _ = writeln!(
                out,
                "Only what is new since `{}`, which an earlier review{} reviewed.\n",
                short(since),
                earlier_run.as_deref().map(|run| format!(" (run `{run}`)")).unwrap_or_default()
            );
            commits(out, "Reviewed now", now);
            commits(out, "Reviewed earlier", earlier);
            let carried = r.findings.iter().filter(|f| f.baseline == Some(BaselineState::Unchanged)).count();
            let _ = writeln!(
                out,
                "{carried} finding(s) are unchanged since the earlier review: carried forward on code the new commits \
                 did not touch, or raised again. Gates count them as they count the others.\n"
            );
        }
    }
}

fn commits(out: &mut String, title: &str, commits: &Commits) {
    let _ = writeln!(out, "**{title}** ({} commit(s)):\n", commits.total);
    for c in &commits.listed {
        let _ = writeln!(out, "- `{}` {}", short(&c.commit), c.subject.trim());
    }
    if commits.total > commits.listed.len() {
        let _ = writeln!(out, "- … and {} more", commits.total - commits.listed.len());
    }
    out.push('\n');
}
