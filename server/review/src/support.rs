//! Support: how many distinct reviewers raised a finding, as confidence. A finding
//! that an independent reviewer also raised is far more often right than one
//! raised once. Reviewers are agents (a panel's agents run different models) and
//! samples: an agent run K times (`--samples K`) counts once per sample that raised
//! the issue.
//!
//! A reviewer supports a result finding when one of its own findings names the same
//! code (the same fingerprint), or is a near-duplicate of it: the same file, at most
//! [`NEAR_LINES`] lines away, and a description at least as similar as the
//! near-duplicate threshold, with the same stance. When the review has no reviewers
//! apart from the agents whose output is the result, each finding is supported by the
//! agent that raised it.

use conclave_shared::Finding;
use std::collections::BTreeMap;

use crate::similarity::{NEAR_DUPLICATE_THRESHOLD, NEAR_LINES, similarity};

/// Sets each result finding's `support` from the reviewers' findings `raised`.
pub fn count_support(findings: &mut [Finding], raised: &[Finding]) {
    for finding in findings.iter_mut() {
        let support = if raised.is_empty() {
            1
        } else {
            // Each agent counts once, or once per sample of it that raised the issue.
            let mut agents: BTreeMap<&str, u32> = BTreeMap::new();
            for r in raised.iter().filter(|r| supports(r, finding)) {
                let samples = r.stability.map_or(1, |s| s.raised.max(1));
                let entry = agents.entry(r.agent.as_str()).or_default();
                *entry = (*entry).max(samples);
            }
            agents.values().sum()
        };
        finding.support = Some(support);
    }
}

/// Whether reviewer finding `r` raised the same issue as `f`.
pub fn supports(r: &Finding, f: &Finding) -> bool {
    // An approval of the code does not support a concern about it, nor the reverse.
    if r.file != f.file || r.effective_stance() != f.effective_stance() {
        return false;
    }
    let same_code = r.fingerprint.is_some() && r.fingerprint == f.fingerprint;
    same_code
        || (r.line.abs_diff(f.line) <= NEAR_LINES
            && similarity(&r.description, &f.description) >= NEAR_DUPLICATE_THRESHOLD)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(agent: &str, line: u64, description: &str) -> Finding {
        Finding {
            agent: agent.into(),
            file: "a.rs".into(),
            line,
            description: description.into(),
            ..Finding::default()
        }
    }

    #[test]
    fn distinct_reviewers_of_the_same_issue_count_once_each() {
        let traversal = "the user controlled name is joined to the root without checks, allowing path traversal";
        let raised = [
            at("security", 8, traversal),
            at("security", 9, "path traversal through the user controlled name joined to the root"),
            at("correctness", 10, "name from the user is joined to the root without checks: path traversal"),
            at("conventions", 8, "the function lacks a doc comment"),
            at("correctness", 40, traversal),
        ];
        let mut findings = [at("writer", 8, traversal), at("writer", 20, "the write is not atomic")];
        count_support(&mut findings, &raised);
        assert_eq!(findings.map(|f| f.support), [Some(2), Some(0)]);
    }

    #[test]
    fn the_same_fingerprint_is_support_wherever_the_line_and_whatever_the_words() {
        let mut r = at("security", 30, "completely different words");
        r.fingerprint = Some("f".into());
        let mut f = at("writer", 8, "path traversal");
        f.fingerprint = Some("f".into());
        let mut findings = [f];
        count_support(&mut findings, &[r]);
        assert_eq!(findings[0].support, Some(1));
        let mut sampled = at("security", 30, "other words");
        sampled.fingerprint = Some("f".into());
        sampled.stability = Some(conclave_shared::Stability { raised: 2, samples: 3 });
        let mut findings_again = [findings[0].clone()];
        count_support(&mut findings_again, &[sampled, at("correctness", 8, "path traversal")]);
        assert_eq!(findings_again[0].support, Some(3), "two samples of one agent and another agent");
        let mut alone = [at("reviewer", 3, "x")];
        count_support(&mut alone, &[]);
        assert_eq!(alone[0].support, Some(1), "a single reviewer supports its own findings");
    }
}
