//! Matching a review's findings to a case's golden issues: a finding matches an issue
//! in the same file within the line window whose wording the project's one
//! near-duplicate rule (`same_issue.rs`) calls the same issue, or that a judge calls
//! the same. Each issue and each finding is matched at most once, greedily: the most
//! similar pair first (then the closest lines, then the earliest finding and issue).
//!
//! Candidate pairs come from each file's issues sorted by line, so matching n findings
//! against m issues costs a sort and a binary search per finding, not n × m
//! comparisons.

use conclave_shared::Finding;
use std::collections::HashMap;

use crate::same_issue::SameIssue;
use crate::similarity::word_hashes;

/// A finding and an issue close enough to be compared: indices into the findings and
/// the issues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate {
    /// The finding.
    pub finding: usize,
    /// The issue.
    pub issue: usize,
}

/// The pairs of a finding and an issue in the same file at most `window` lines apart.
pub fn candidates(findings: &[Finding], issues: &[Finding], window: u64) -> Vec<Candidate> {
    let mut by_file: HashMap<&str, Vec<(u64, usize)>> = HashMap::new();
    for (j, issue) in issues.iter().enumerate() {
        by_file.entry(issue.file.as_str()).or_default().push((issue.line, j));
    }
    for lines in by_file.values_mut() {
        lines.sort_unstable();
    }
    let mut out = Vec::new();
    for (i, finding) in findings.iter().enumerate() {
        let Some(lines) = by_file.get(finding.file.as_str()) else { continue };
        let from = lines.partition_point(|(line, _)| *line + window < finding.line);
        for &(line, j) in lines[from..].iter().take_while(|(line, _)| *line <= finding.line.saturating_add(window)) {
            debug_assert!(line.abs_diff(finding.line) <= window);
            out.push(Candidate { finding: i, issue: j });
        }
    }
    out
}

/// Scores each candidate by the near-duplicate rule: `Some(similarity)` when the rule
/// calls the pair the same issue.
pub fn score_by_rule(
    findings: &[Finding],
    issues: &[Finding],
    pairs: &[Candidate],
    rule: &SameIssue,
) -> Vec<Option<f64>> {
    let mut finding_words: Vec<Option<Vec<u64>>> = vec![None; findings.len()];
    let mut issue_words: Vec<Option<Vec<u64>>> = vec![None; issues.len()];
    pairs
        .iter()
        .map(|c| {
            let a = finding_words[c.finding].get_or_insert_with(|| word_hashes(&findings[c.finding].description));
            let a = a.clone();
            let b = issue_words[c.issue].get_or_insert_with(|| word_hashes(&issues[c.issue].description));
            rule.score_hashed(&findings[c.finding], &a, &issues[c.issue], b)
        })
        .collect()
}

/// The one-to-one matching of scored candidates: for each finding, the issue it
/// matched and how alike they are.
pub fn assign(
    findings: &[Finding],
    issues: &[Finding],
    pairs: &[Candidate],
    scores: &[Option<f64>],
) -> Vec<Option<(usize, f64)>> {
    let mut scored: Vec<(f64, u64, usize, usize)> = pairs
        .iter()
        .zip(scores)
        .filter_map(|(c, s)| {
            s.map(|s| (s, findings[c.finding].line.abs_diff(issues[c.issue].line), c.finding, c.issue))
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)).then(a.3.cmp(&b.3)));
    let mut of_finding: Vec<Option<(usize, f64)>> = vec![None; findings.len()];
    let mut taken = vec![false; issues.len()];
    for (score, _, i, j) in scored {
        if of_finding[i].is_none() && !taken[j] {
            of_finding[i] = Some((j, score));
            taken[j] = true;
        }
    }
    of_finding
}

/// Matches by the near-duplicate rule, within `rule.window` lines.
pub fn match_by_rule(findings: &[Finding], issues: &[Finding], rule: &SameIssue) -> Vec<Option<(usize, f64)>> {
    let pairs = candidates(findings, issues, rule.window);
    let scores = score_by_rule(findings, issues, &pairs, rule);
    assign(findings, issues, &pairs, &scores)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(file: &str, line: u64, description: &str) -> Finding {
        Finding { agent: "a".into(), file: file.into(), line, description: description.into(), ..Finding::default() }
    }

    #[test]
    fn each_issue_is_matched_once_by_the_most_similar_finding_in_its_file_and_window() {
        let issues = [
            at("a.rs", 10, "off-by-one: the loop reads one past the end of the buffer"),
            at("a.rs", 40, "the error of the write is ignored"),
        ];
        let findings = [
            at("a.rs", 12, "the loop reads past the end of the buffer (off-by-one)"),
            at("a.rs", 11, "off-by-one: the loop reads one past the end of the buffer"),
            at("b.rs", 10, "off-by-one: the loop reads one past the end of the buffer"),
            at("a.rs", 30, "the error of the write is ignored"),
            at("a.rs", 43, "the error returned by the write is ignored"),
        ];
        let matched = match_by_rule(&findings, &issues, &SameIssue::default());
        assert_eq!(matched.iter().map(|m| m.map(|(j, _)| j)).collect::<Vec<_>>(), [None, Some(0), None, None, Some(1)]);
        let wide = match_by_rule(&findings, &issues, &SameIssue { window: 10, ..SameIssue::default() });
        assert_eq!(wide[3].map(|(j, _)| j), Some(1), "a wider window reaches line 30 and it is the closer wording");
        assert_eq!(wide[4], None, "the issue is taken");
    }

    #[test]
    fn candidates_are_exactly_the_pairs_within_the_window() {
        let issues: Vec<Finding> = (1..=50).map(|l| at("f.rs", l * 7, "x")).collect();
        let findings: Vec<Finding> = (1..=400).map(|l| at("f.rs", l, "x")).collect();
        let mut fast: Vec<(usize, usize)> =
            candidates(&findings, &issues, 3).into_iter().map(|c| (c.finding, c.issue)).collect();
        fast.sort_unstable();
        let mut slow = Vec::new();
        for (i, f) in findings.iter().enumerate() {
            for (j, g) in issues.iter().enumerate() {
                if f.line.abs_diff(g.line) <= 3 {
                    slow.push((i, j));
                }
            }
        }
        assert_eq!(fast, slow);
    }
}
