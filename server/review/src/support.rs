//! Support: how many distinct reviewers raised a finding, as confidence. A finding
//! that an independent reviewer also raised is far more often right than one
//! raised once. Reviewers are agents (a panel's agents run different models) and
//! samples: an agent run K times (`--samples K`) counts once per sample that raised
//! the issue.
//!
//! A reviewer supports a result finding when one of its own findings is the same
//! issue by the one rule, [`same_issue`](crate::same_issue): the same fingerprint, or
//! the same file, stance and nearby lines, alike words, and quotes that do not point
//! at different code. When the review has no reviewers apart from the agents whose
//! output is the result, each finding is supported by the agent that raised it.

use conclave_shared::Finding;
use std::collections::BTreeMap;

use crate::same_issue::SameIssue;
use crate::similarity::word_hashes;

/// Sets each result finding's `support` from the reviewers' findings `raised`.
pub fn count_support(findings: &mut [Finding], raised: &[Finding]) {
    let rule = SameIssue::default();
    // Each reviewer finding is compared with every result finding: its words once.
    let raised_words: Vec<Vec<u64>> = raised.iter().map(|r| word_hashes(&r.description)).collect();
    for finding in findings.iter_mut() {
        let support = if raised.is_empty() {
            1
        } else {
            let words = word_hashes(&finding.description);
            // Each agent counts once, or once per sample of it that raised the issue.
            let mut agents: BTreeMap<&str, u32> = BTreeMap::new();
            for (r, _) in raised
                .iter()
                .zip(&raised_words)
                .filter(|(r, r_words)| rule.score_hashed(r, r_words, finding, &words).is_some())
            {
                let samples = r.stability.map_or(1, |s| s.raised.max(1));
                let entry = agents.entry(r.agent.as_str()).or_default();
                *entry = (*entry).max(samples);
            }
            agents.values().sum()
        };
        finding.support = Some(support);
    }
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
    fn a_reviewer_quoting_other_code_nearby_does_not_support() {
        let quoting = |agent: &str, line: u64, evidence: &str, description: &str| Finding {
            evidence: Some(evidence.into()),
            ..at(agent, line, description)
        };
        let raised = [
            quoting("security", 9, "os.Remove(tmp)", "the error from os.Remove(tmp) is ignored and lost"),
            quoting("correctness", 8, "f.Close()", "ignoring the error of f.Close() loses it"),
        ];
        let mut findings = [quoting("writer", 8, "defer f.Close()", "the error from f.Close() is ignored and lost")];
        count_support(&mut findings, &raised);
        assert_eq!(findings[0].support, Some(1), "only the reviewer that quoted the same call");
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
