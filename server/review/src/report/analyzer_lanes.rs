//! Analyzer lanes in a review report: their findings read from the run (they count
//! as reviewers in support, one per lane), the lanes' decisions read from the run
//! input (which ran, which were off and why, which failed), the analyzer findings the
//! result left out added to it, and the Markdown section that says all this.
//!
//! An analyzer's finding is a fact about the code, but the Writer that merges the
//! reviewers (often a small local model) may drop it. So the report adds back every
//! finding of a lane that ran which is on a changed line, is not the same issue as a
//! result finding (the rule of `same_issue.rs`, or a result finding within a few lines
//! that names the analyzer's rule id, such as `SC2086`) and was not refuted by a
//! verifier; it keeps the lane as its `raisedBy`.

use conclave_shared::{Finding, NodeKind, NodeState, RunRecord};
use serde_json::Value;
use std::fmt::Write as _;

use super::review_report::ReviewReport;
use crate::analyzers::AnalyzerLane;
use crate::findings::read_findings;
use crate::same_issue::same_issue;
use crate::similarity::NEAR_LINES;

/// The findings of the run's analyzer commands (command nodes whose output is read
/// as findings), attributed to their node.
pub(super) fn raised_by_analyzers(record: &RunRecord) -> Vec<Finding> {
    record
        .nodes
        .iter()
        .filter(|n| {
            let node = record.conclave.node(&n.node_id);
            node.is_some_and(|node| {
                node.kind == NodeKind::Command && node.command.as_ref().is_some_and(|c| c.parse.findings_shaped())
            })
        })
        .filter_map(|n| Some(read_findings(&n.node_id, &n.output.as_ref()?.to_input_value(), "findings")))
        .flatten()
        .collect()
}

/// The lanes the review decided on (from the run input), each with whether it
/// failed and how many findings it raised.
pub(super) fn lanes_of(record: &RunRecord, raised: &[Finding]) -> Vec<AnalyzerLane> {
    let mut lanes = AnalyzerLane::from_run_input(&record.input);
    for lane in &mut lanes {
        let summary = record.nodes.iter().find(|n| n.node_id == lane.name);
        if let Some(failed) = summary.filter(|n| n.state == NodeState::Failed) {
            lane.failed = Some(failed.error.clone().unwrap_or_else(|| "no reason given".into()));
        }
        lane.raised = raised.iter().filter(|f| f.agent == lane.name).count();
    }
    lanes
}

/// Adds to the result the findings of analyzer lanes that it left out (see the
/// module header); `input` is the run input, whose `files` say the changed lines.
/// A result finding at an analyzer finding's line that has no quote takes the
/// analyzer's (its line's text), so that it is anchored too. Call it before the
/// findings are anchored, after the analyzers' lines are quoted.
pub fn carry_dropped(report: &mut ReviewReport, input: &Value) {
    let refuted: Vec<(String, u64)> = report
        .result
        .get("refuted")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| Some((r.get("file")?.as_str()?.to_string(), r.get("line")?.as_u64()?)))
        .collect();
    let ran: Vec<String> = report.analyzers.iter().filter(|l| l.runs()).map(|l| l.name.clone()).collect();
    for finding in report.raised.iter().filter(|f| ran.contains(&f.agent)) {
        let mut kept = false;
        for result in report.findings.iter_mut().filter(|r| same_as(r, finding)) {
            kept = true;
            if result.evidence.is_none() && result.file == finding.file && result.line == finding.line {
                result.evidence.clone_from(&finding.evidence);
            }
        }
        let is_refuted = refuted.iter().any(|(file, line)| *file == finding.file && *line == finding.line);
        if kept || is_refuted || !on_changed_line(input, finding) {
            continue;
        }
        let mut carried = finding.clone();
        carried.raised_by = Some(finding.agent.clone());
        report.findings.push(carried);
        if let Some(lane) = report.analyzers.iter_mut().find(|l| l.name == finding.agent) {
            lane.added += 1;
        }
    }
}

/// Whether the result finding `result` stands for the analyzer's `finding`: the same
/// issue by the one rule, a finding nearby naming its rule id, or one at its line
/// naming the analyzer in `raisedBy`.
fn same_as(result: &Finding, finding: &Finding) -> bool {
    let names_lane = result.raised_by.as_deref().is_some_and(|by| by.split(',').any(|b| b.trim() == finding.agent));
    (names_lane && result.file == finding.file && result.line == finding.line)
        || names_the_rule(result, finding)
        || same_issue(result, finding)
}

/// Whether `result` is near `finding` and names its rule id (`[SC2086] ...`).
fn names_the_rule(result: &Finding, finding: &Finding) -> bool {
    let Some(rule) = finding.description.strip_prefix('[').and_then(|d| d.split_once(']')).map(|(r, _)| r) else {
        return false;
    };
    result.file == finding.file && result.line.abs_diff(finding.line) <= NEAR_LINES && result.description.contains(rule)
}

/// Whether the finding is on a line the change added or changed (a review without
/// the list of changed files keeps every finding).
fn on_changed_line(input: &Value, finding: &Finding) -> bool {
    let Some(files) = input.get("files").and_then(Value::as_array) else { return true };
    files.iter().filter(|f| f.get("path").and_then(Value::as_str) == Some(finding.file.as_str())).any(|f| {
        f.get("changed_lines").and_then(Value::as_array).into_iter().flatten().any(|range| {
            let bound = |i: usize| range.get(i).and_then(Value::as_u64);
            matches!((bound(0), bound(1)), (Some(from), Some(to)) if (from..=to).contains(&finding.line))
        })
    })
}

/// The Markdown section: each lane, whether it ran (with its findings and those
/// added to the result), failed, or was off and why.
pub(super) fn render_markdown(out: &mut String, report: &ReviewReport) {
    if report.analyzers.is_empty() {
        return;
    }
    let _ = writeln!(out, "## Analyzers\n");
    for lane in &report.analyzers {
        let state = match (&lane.failed, lane.why_off()) {
            (Some(error), _) => format!("failed, the review went on without it: {}", error.trim()),
            (None, Some(why)) => format!("off: {why}"),
            (None, None) => {
                let mut ran = format!("ran on {} file(s), {} finding(s)", lane.file_count, lane.raised);
                if lane.added > 0 {
                    let _ = write!(ran, ", {} of them added to the result, which had left them out", lane.added);
                }
                ran
            }
        };
        let _ = writeln!(out, "- `{}` (`{}`): {state}", lane.name, lane.program);
    }
    out.push('\n');
}
