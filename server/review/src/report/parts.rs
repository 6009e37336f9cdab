//! A change reviewed in parts, in the report: how many parts and which files each
//! held (from the run input), the hunks left out because each alone was larger than
//! a part, and the parts a reviewer failed on (from its merged output). Left-out
//! hunks and failed parts make the review degraded; files beyond the cap on parts
//! are listed as not reviewed (`omitted`) and do not, as files over the cap never did:
//! the cap is the user's choice of cost.

use conclave_shared::{NodeOutput, RunRecord};
use serde::Serialize;
use serde_json::Value;
use std::fmt::Write as _;

use crate::diff::{LEFT_OUT_KEY, LeftOutHunk, Part};

/// One part of the change: which it is and the files it held.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PartFiles {
    /// `2 of 5`.
    pub part: String,
    /// The paths of its files.
    pub files: Vec<String>,
}

/// What the report says of a change reviewed in parts; empty for one that fit.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PartsRead {
    /// The parts, when there were two or more.
    pub parts: Vec<PartFiles>,
    /// Hunks no part held: each alone larger than a part.
    pub left_out: Vec<LeftOutHunk>,
    /// The parts a reviewer gave no answer for: `agent `x`: part 2 of 3: why`.
    pub failed: Vec<String>,
}

impl PartsRead {
    /// Read back from a stored review run: its input's parts and left-out hunks,
    /// and its reviewers' outputs.
    pub fn of_run(record: &RunRecord) -> PartsRead {
        let input = &record.input;
        let parts: Vec<Part> = input
            .get(conclave_engine::PARTS_FIELD)
            .and_then(|p| serde_json::from_value(p.clone()).ok())
            .unwrap_or_default();
        let left_out = input.get(LEFT_OUT_KEY).and_then(|l| serde_json::from_value(l.clone()).ok()).unwrap_or_default();
        let failed = record
            .nodes
            .iter()
            .filter_map(|n| match &n.output {
                Some(NodeOutput::Json(output)) => Some((n, output.get("parts")?.get("failed")?.as_array()?)),
                _ => None,
            })
            .flat_map(|(n, list)| {
                list.iter().filter_map(Value::as_str).map(|why| format!("agent `{}`: {why}", n.node_id))
            })
            .collect();
        PartsRead {
            parts: parts
                .into_iter()
                .map(|p| PartFiles { part: p.part, files: p.files.into_iter().map(|f| f.path).collect() })
                .collect(),
            left_out,
            failed,
        }
    }

    /// Whether the change fit in one call and nothing was left out.
    pub fn is_empty(&self) -> bool {
        self.parts.is_empty() && self.left_out.is_empty() && self.failed.is_empty()
    }

    /// Why the parts make the review degraded: hunks not reviewed, parts a reviewer
    /// failed on.
    pub fn degraded(&self) -> Vec<String> {
        let hunks = self.left_out.iter().map(|h| {
            format!(
                "a hunk of `{}` (lines {}-{}, {} bytes) is larger than one request can take and was not reviewed",
                h.path, h.lines.0, h.lines.1, h.diff_bytes
            )
        });
        let failed = self.failed.iter().map(|f| format!("{f} (that part's findings are missing)"));
        hunks.chain(failed).collect()
    }
}

/// The Markdown section of a change reviewed in parts, and of hunks left out.
pub(super) fn markdown(out: &mut String, read: &PartsRead) {
    if !read.parts.is_empty() {
        let _ = writeln!(out, "## Reviewed in {} parts\n", read.parts.len());
        out.push_str(
            "The change is larger than one request can take: each reviewer reviewed every part on its own.\n\n",
        );
        for part in &read.parts {
            let files: Vec<String> = part.files.iter().map(|f| format!("`{f}`")).collect();
            let _ = writeln!(out, "- Part {}: {}", part.part, files.join(", "));
        }
        out.push('\n');
    }
    if !read.left_out.is_empty() {
        let _ = writeln!(out, "## Hunks not reviewed ({})\n", read.left_out.len());
        out.push_str("Each alone is larger than one request can take.\n\n");
        for h in &read.left_out {
            let _ = writeln!(out, "- `{}` lines {}-{} ({} bytes)", h.path, h.lines.0, h.lines.1, h.diff_bytes);
        }
        out.push('\n');
    }
}
