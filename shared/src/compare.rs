//! Comparing the findings of two runs of the same conclave: what was added, removed
//! and changed between them.
//!
//! Two findings are *the same finding* when they have the same identity
//! ([`Finding::identity`]): the same fingerprint, which names the code a finding is
//! about and not its line, so a finding whose lines moved is still the same one (the
//! rule baselines follow too). Between an earlier and a later list:
//! - a finding is **unchanged** when a finding of the other list is the same finding
//!   with the same severity, stance (absent is a concern) and description (ignoring
//!   surrounding whitespace), wherever its line now is; these pairs are matched first;
//! - of the findings left, the same findings are paired in list order, each pair
//!   **changed** (a different severity, stance or description);
//! - what is still left of the earlier list was **removed**, and of the later list
//!   **added**.
//!
//! Findings come from the runs' JSON reports (`review.findings`), so the editor and
//! anything else reading reports compare them the same way.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;

use crate::review::{Finding, FindingIdentity};

/// What changed between an earlier and a later list of findings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FindingsDiff {
    /// Findings of the later list that are not in the earlier one.
    pub added: Vec<Finding>,
    /// Findings of the earlier list that are not in the later one.
    pub removed: Vec<Finding>,
    /// The same finding with a different severity, stance or description.
    pub changed: Vec<ChangedFinding>,
    /// How many findings are the same in both.
    pub unchanged: usize,
}

/// One finding as it was and as it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChangedFinding {
    /// In the earlier run.
    pub before: Finding,
    /// In the later run.
    pub after: Finding,
}

impl ChangedFinding {
    /// Which of `severity`, `stance` and `description` differ, in that order.
    pub fn differences(&self) -> Vec<&'static str> {
        let (a, b) = (&self.before, &self.after);
        let mut out = Vec::new();
        if a.severity != b.severity {
            out.push("severity");
        }
        if a.effective_stance() != b.effective_stance() {
            out.push("stance");
        }
        if a.description.trim() != b.description.trim() {
            out.push("description");
        }
        out
    }
}

/// The subject of a finding: the lane that raised it, else its agent (see
/// [`Finding::subject`]).
pub fn subject(finding: &Finding) -> &str {
    finding.subject()
}

/// What changed from an earlier list of findings to a later one (see the module
/// docs). Added and changed findings keep the later list's order, removed ones the
/// earlier's.
pub fn diff_findings<'f>(before: &'f [Finding], after: &'f [Finding]) -> FindingsDiff {
    // The earlier findings not yet paired, by identity, in list order.
    let mut earlier: HashMap<FindingIdentity<'f>, Vec<usize>> = HashMap::new();
    for (i, finding) in before.iter().enumerate() {
        earlier.entry(finding.identity()).or_default().push(i);
    }
    let mut paired = vec![false; before.len()];
    let mut pair = |b: &'f Finding, also: &dyn Fn(&Finding) -> bool| {
        let candidates = earlier.get_mut(&b.identity())?;
        let at = candidates.iter().position(|&i| also(&before[i]))?;
        let i = candidates.remove(at);
        paired[i] = true;
        Some(i)
    };
    let mut after_left: Vec<Option<&Finding>> = after.iter().map(Some).collect();
    let mut unchanged = 0;
    for slot in &mut after_left {
        if let Some(b) = *slot
            && pair(b, &|a| same_content(a, b)).is_some()
        {
            *slot = None;
            unchanged += 1;
        }
    }
    let mut changed = Vec::new();
    for slot in &mut after_left {
        if let Some(b) = *slot
            && let Some(i) = pair(b, &|_| true)
        {
            changed.push(ChangedFinding { before: before[i].clone(), after: b.clone() });
            *slot = None;
        }
    }
    FindingsDiff {
        added: after_left.into_iter().flatten().cloned().collect(),
        removed: before.iter().zip(&paired).filter(|(_, p)| !**p).map(|(f, _)| f.clone()).collect(),
        changed,
        unchanged,
    }
}

/// The findings of a run's JSON report (`GET /api/runs/{id}/report?format=json`):
/// its `review.findings`, or `None` when the document has none (not a review report).
pub fn report_findings(report: &Value) -> Option<Vec<Finding>> {
    serde_json::from_value(report.get("review")?.get("findings")?.clone()).ok()
}

fn same_content(a: &Finding, b: &Finding) -> bool {
    a.severity == b.severity
        && a.effective_stance() == b.effective_stance()
        && a.description.trim() == b.description.trim()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::review::{Severity, Stance};
    use serde_json::json;

    fn finding(lane: &str, line: u64, severity: Severity, description: &str) -> Finding {
        Finding {
            agent: "writer".into(),
            raised_by: Some(lane.into()),
            file: "src/upload.rs".into(),
            line,
            severity: Some(severity),
            stance: None,
            description: description.into(),
            ..Default::default()
        }
    }

    fn fingerprinted(fingerprint: &str, line: u64, severity: Severity) -> Finding {
        Finding { fingerprint: Some(fingerprint.into()), ..finding("security", line, severity, "path traversal") }
    }

    #[test]
    fn a_finding_whose_lines_moved_is_the_same_finding() {
        let before = vec![fingerprinted("f1", 3, Severity::Blocker), fingerprinted("f2", 9, Severity::Minor)];
        let after = vec![fingerprinted("f1", 14, Severity::Blocker), fingerprinted("f2", 20, Severity::Major)];
        let diff = diff_findings(&before, &after);
        assert_eq!(diff.unchanged, 1, "moved eleven lines down, same content: unchanged ({diff:?})");
        assert_eq!(diff.changed, vec![ChangedFinding { before: before[1].clone(), after: after[1].clone() }]);
        assert_eq!(diff.changed[0].differences(), vec!["severity"], "the line is not a difference");
        assert!(diff.added.is_empty() && diff.removed.is_empty(), "not removed and added: {diff:?}");
    }

    #[test]
    fn other_code_at_the_same_line_is_another_finding() {
        let before = vec![fingerprinted("f1", 3, Severity::Blocker)];
        let after = vec![fingerprinted("f9", 3, Severity::Blocker)];
        let diff = diff_findings(&before, &after);
        assert_eq!((diff.added, diff.removed), (after.clone(), before.clone()));
        assert_eq!((diff.changed.len(), diff.unchanged), (0, 0));
    }

    #[test]
    fn identical_lists_have_no_differences() {
        let list = vec![finding("security", 3, Severity::Blocker, "path traversal")];
        assert_eq!(diff_findings(&list, &list), FindingsDiff { unchanged: 1, ..FindingsDiff::default() });
    }

    #[test]
    fn a_new_place_is_added_and_a_gone_one_removed() {
        let before = vec![finding("security", 3, Severity::Blocker, "a"), finding("style", 9, Severity::Nit, "b")];
        let after = vec![finding("security", 3, Severity::Blocker, "a"), finding("style", 10, Severity::Nit, "b")];
        let diff = diff_findings(&before, &after);
        assert_eq!(diff.added, vec![after[1].clone()], "another line is another finding");
        assert_eq!(diff.removed, vec![before[1].clone()]);
        assert_eq!((diff.changed.len(), diff.unchanged), (0, 1));
    }

    #[test]
    fn same_place_and_subject_with_other_severity_stance_or_description_is_changed() {
        let before = vec![
            finding("security", 3, Severity::Blocker, "path traversal"),
            finding("tests", 4, Severity::Minor, "no test"),
            finding("style", 5, Severity::Nit, "naming"),
        ];
        let mut approval = before[1].clone();
        approval.stance = Some(Stance::Approval);
        let after = vec![
            finding("security", 3, Severity::Major, "path traversal"),
            approval.clone(),
            finding("style", 5, Severity::Nit, "naming, and a typo"),
        ];
        let diff = diff_findings(&before, &after);
        let differences: Vec<Vec<&str>> = diff.changed.iter().map(ChangedFinding::differences).collect();
        assert_eq!(differences, vec![vec!["severity"], vec!["stance"], vec!["description"]]);
        assert_eq!(diff.changed[0].before, before[0]);
        assert_eq!(diff.changed[1].after, approval);
        assert!(diff.added.is_empty() && diff.removed.is_empty() && diff.unchanged == 0, "{diff:?}");
    }

    #[test]
    fn another_subject_at_the_same_place_is_another_finding() {
        let before = vec![finding("security", 3, Severity::Blocker, "x")];
        let after = vec![finding("correctness", 3, Severity::Major, "x")];
        let diff = diff_findings(&before, &after);
        assert_eq!((diff.added.len(), diff.removed.len(), diff.changed.len()), (1, 1, 0));
    }

    #[test]
    fn without_a_lane_the_agent_is_the_subject_and_absent_stance_is_a_concern() {
        let mut before = finding("x", 1, Severity::Minor, "same");
        before.raised_by = None;
        before.agent = "security".into();
        let mut after = before.clone();
        after.stance = Some(Stance::Concern);
        after.description = " same\n".into();
        assert_eq!(diff_findings(&[before.clone()], &[after]).unchanged, 1);
        let mut other_agent = before.clone();
        other_agent.agent = "style".into();
        assert_eq!(diff_findings(&[before], &[other_agent]).added.len(), 1);
    }

    #[test]
    fn exact_matches_are_paired_before_changes_so_repeats_pair_up_well() {
        let before =
            vec![finding("security", 3, Severity::Minor, "one"), finding("security", 3, Severity::Major, "two")];
        let after =
            vec![finding("security", 3, Severity::Major, "two"), finding("security", 3, Severity::Blocker, "one")];
        let diff = diff_findings(&before, &after);
        assert_eq!(diff.unchanged, 1);
        assert_eq!(diff.changed, vec![ChangedFinding { before: before[0].clone(), after: after[1].clone() }]);
    }

    #[test]
    fn findings_are_read_from_a_json_report() {
        let report = json!({"status": "succeeded", "review": {"findings": [
            {"agent": "writer", "raised_by": "security", "file": "a.rs", "line": 2, "severity": "blocker", "description": "d"}
        ]}});
        let findings = report_findings(&report).expect("findings");
        assert_eq!(
            findings,
            vec![Finding {
                agent: "writer".into(),
                raised_by: Some("security".into()),
                file: "a.rs".into(),
                line: 2,
                severity: Some(Severity::Blocker),
                stance: None,
                description: "d".into(),
                ..Default::default()
            }]
        );
        assert_eq!(report_findings(&json!({"status": "succeeded"})), None);
    }
}
