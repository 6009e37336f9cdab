//! Which side of the change configured the review, in the report: the base's commit
//! and each configuration file the change edits (whose base version was used), or
//! that the caller trusted the head, which configured its own review; and the
//! dismissals the change added that were not applied, beside the findings they would
//! have hidden.

use serde_json::{Value, json};
use std::fmt::Write as _;

use super::review_report::ReviewReport;
use crate::configuration::{ConfigurationSource, short};
use crate::inert::code_span;

/// The Markdown section; nothing for a review of the working tree, or one the base
/// configured whose change edits none of its configuration.
pub(super) fn markdown(out: &mut String, r: &ReviewReport) {
    let Some(source) = r.configuration.as_ref().filter(|s| s.notable()) else { return };
    let _ = writeln!(out, "## Configuration\n");
    match (source.from_base(), &source.commit) {
        (true, Some(commit)) => {
            let _ = writeln!(
                out,
                "Read from the base side of the change (commit `{}`): the conclave, its schemas, the rules files \
                 and the dismissals are the base's, and the change's own edits to them were not applied.\n",
                short(commit)
            );
        }
        _ => {
            let _ = writeln!(
                out,
                "**The change configured its own review:** the head was trusted, so its conclave, schemas, rules \
                 files and dismissals were read as the change leaves them.\n"
            );
        }
    }
    if !source.edited.is_empty() {
        let verdict = if source.from_base() { "the base's version was used" } else { "the change's version was used" };
        let _ = writeln!(out, "**Configuration files this change edits** ({verdict}):\n");
        for edit in &source.edited {
            let commands = match edit.commands.as_slice() {
                [] => String::new(),
                ids => format!("; adds or changes command node(s) {}", quoted(ids)),
            };
            let _ = writeln!(out, "- {} ({}, {}{commands})", code_span(&edit.path), edit.status, edit.kind.describe());
        }
        out.push('\n');
    }
    if !r.dismissals_not_applied.is_empty() {
        let _ = writeln!(
            out,
            "**Dismissals added by this change, not applied** ({}): a change cannot dismiss its own findings; \
             these stay, and gates count them.\n",
            r.dismissals_not_applied.len()
        );
        for n in &r.dismissals_not_applied {
            let _ = writeln!(
                out,
                "- {} line {} (`{}`): dismissal added by this change, not applied (its reason: {})",
                code_span(&n.file),
                n.line,
                n.fingerprint,
                one_line(&n.reason)
            );
        }
        out.push('\n');
    }
}

/// The JSON envelope's `review.configuration`; `None` when the Markdown says nothing.
pub(super) fn json(r: &ReviewReport) -> Option<Value> {
    let source: &ConfigurationSource = r.configuration.as_ref().filter(|s| s.notable())?;
    let not_applied: Vec<Value> = r
        .dismissals_not_applied
        .iter()
        .map(|n| {
            json!({"fingerprint": n.fingerprint, "file": n.file, "line": n.line, "reason": n.reason,
                   "author": n.author, "why": "dismissal added by this change, not applied"})
        })
        .collect();
    let mut value = json!(source);
    if let (false, Some(object)) = (not_applied.is_empty(), value.as_object_mut()) {
        object.insert("dismissals_not_applied".into(), Value::Array(not_applied));
    }
    Some(value)
}

fn quoted(ids: &[String]) -> String {
    ids.iter().map(|id| code_span(id)).collect::<Vec<_>>().join(", ")
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
