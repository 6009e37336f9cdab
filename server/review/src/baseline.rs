//! Baselines: an earlier review to compare with, so a report can say which findings
//! are new, which are unchanged, which changed, and which are gone (fixed).
//!
//! A baseline is read from a stored run's JSON report, or from a report file: the
//! JSON report, or SARIF as CI systems keep it (results carry the fingerprint in
//! `partialFingerprints`). Findings are matched by their identity, as the comparison of
//! two runs matches them (`conclave_shared::compare`): the fingerprint, which names
//! the code and not the line, so a finding whose lines moved is still `unchanged`.
//! A finding whose identity matches no baseline finding is then matched to a baseline
//! finding that no identity claimed and that the one rule,
//! [`SameIssue`](crate::same_issue::SameIssue), says is the same issue (nearby,
//! worded alike, its quote not pointing at other code): the most alike pairs first,
//! each baseline finding used once. The baseline's quotes were placed in an earlier
//! version of the file, so their text is compared, not their lines. So a finding
//! reworded, or raised by another lane, on code that moved a few lines is `unchanged`
//! or `updated`, not new with its old self absent.

use conclave_shared::{BaselineState, Finding, FindingIdentity, Severity};
use serde_json::Value;
use std::collections::{HashMap, HashSet};

use crate::same_issue::SameIssue;
use crate::similarity::word_hashes;

/// The SARIF `partialFingerprints` key Conclave writes.
pub const SARIF_FINGERPRINT: &str = "conclaveFinding/v2";

/// An earlier review's findings.
#[derive(Debug, Clone, PartialEq)]
pub struct Baseline {
    /// Where it came from, for the report: a run id or a file.
    pub source: String,
    /// Its findings (those with a fingerprint).
    pub findings: Vec<Finding>,
}

impl Baseline {
    /// Reads a report: the JSON report (`review.findings`) or SARIF 2.1.0. The error
    /// says what the text is missing.
    pub fn parse(source: &str, text: &str) -> Result<Baseline, String> {
        let value: Value = serde_json::from_str(text).map_err(|e| format!("{source} is not JSON: {e}"))?;
        let findings = if value.get("runs").is_some() {
            from_sarif(&value).ok_or_else(|| format!("{source} is SARIF without a `/runs/0/results` array"))?
        } else {
            let list = value.pointer("/review/findings").cloned().ok_or_else(|| {
                format!("{source} has no `/review/findings`: give a JSON or SARIF report of `conclave review`")
            })?;
            serde_json::from_value::<Vec<Finding>>(list)
                .map_err(|e| format!("{source}: `/review/findings` is not a list of findings: {e}"))?
        };
        let findings: Vec<Finding> = findings.into_iter().filter(|f| f.fingerprint.is_some()).collect();
        Ok(Baseline { source: source.to_string(), findings })
    }

    /// Marks each of `findings` new, unchanged or updated (the same finding by
    /// [`Finding::identity`], else the same issue, with another severity or stance)
    /// against the baseline, and returns the baseline's findings that are gone,
    /// marked absent.
    pub fn compare(&self, findings: &mut [Finding]) -> Vec<Finding> {
        let before: HashMap<FindingIdentity<'_>, usize> =
            self.findings.iter().enumerate().map(|(i, f)| (f.identity(), i)).collect();
        let mut matched: Vec<Option<usize>> = findings.iter().map(|f| before.get(&f.identity()).copied()).collect();
        let now: HashSet<FindingIdentity<'_>> = findings.iter().map(Finding::identity).collect();
        let mut used: Vec<bool> = self.findings.iter().map(|f| now.contains(&f.identity())).collect();
        self.match_same_issues(findings, &mut matched, &mut used);
        for (finding, earlier) in findings.iter_mut().zip(&matched) {
            finding.baseline = Some(match earlier.map(|i| &self.findings[i]) {
                None => BaselineState::New,
                Some(e) if e.severity != finding.severity || e.effective_stance() != finding.effective_stance() => {
                    BaselineState::Updated
                }
                Some(_) => BaselineState::Unchanged,
            });
        }
        self.findings
            .iter()
            .zip(used)
            .filter(|(_, used)| !used)
            .map(|(f, _)| Finding { baseline: Some(BaselineState::Absent), ..f.clone() })
            .collect()
    }

    /// Matches each finding that is still unmatched to an unused baseline finding of
    /// its file that is the same issue: the highest scores first (then the earliest
    /// findings), each baseline finding used once.
    fn match_same_issues(&self, findings: &[Finding], matched: &mut [Option<usize>], used: &mut [bool]) {
        let rule = SameIssue::default();
        // The baseline's quotes were placed in an earlier version of the file, where
        // the lines were others: without their anchors, the rule compares the quotes'
        // text, not their places.
        let mut by_file: HashMap<&str, Vec<Earlier>> = HashMap::new();
        for (index, earlier) in self.findings.iter().enumerate().filter(|(j, _)| !used[*j]) {
            by_file.entry(earlier.file.as_str()).or_default().push(Earlier {
                index,
                unplaced: Finding { anchor: None, ..earlier.clone() },
                words: word_hashes(&earlier.description),
            });
        }
        let mut candidates: Vec<(f64, usize, usize)> = Vec::new();
        for (i, finding) in findings.iter().enumerate().filter(|(i, _)| matched[*i].is_none()) {
            let Some(earlier) = by_file.get(finding.file.as_str()) else { continue };
            let words = word_hashes(&finding.description);
            for e in earlier {
                if let Some(score) = rule.score_hashed(finding, &words, &e.unplaced, &e.words) {
                    candidates.push((score, i, e.index));
                }
            }
        }
        candidates.sort_by(|a, b| b.0.total_cmp(&a.0).then((a.1, a.2).cmp(&(b.1, b.2))));
        for (_, i, j) in candidates {
            if matched[i].is_none() && !used[j] {
                matched[i] = Some(j);
                used[j] = true;
            }
        }
    }
}

/// A baseline finding no identity claimed, as the same-issue rule reads it.
struct Earlier {
    index: usize,
    unplaced: Finding,
    words: Vec<u64>,
}

/// The findings of a SARIF log written by Conclave (or any tool, given its results
/// carry Conclave's fingerprint key).
fn from_sarif(sarif: &Value) -> Option<Vec<Finding>> {
    let results = sarif.pointer("/runs/0/results")?.as_array()?;
    Some(
        results
            .iter()
            .filter(|r| r.get("baselineState").and_then(Value::as_str) != Some("absent"))
            .filter_map(|r| {
                let fingerprint =
                    r.pointer(&format!("/partialFingerprints/{}", SARIF_FINGERPRINT.replace('/', "~1")))?;
                let location = r.pointer("/locations/0/physicalLocation")?;
                let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
                Some(Finding {
                    agent: text(r.pointer("/properties/agent")).unwrap_or_default(),
                    raised_by: text(r.pointer("/properties/raisedBy")),
                    file: text(location.pointer("/artifactLocation/uri"))?,
                    line: location.pointer("/region/startLine").and_then(Value::as_u64).unwrap_or(1),
                    severity: r.pointer("/properties/severity").and_then(Value::as_str).and_then(Severity::parse),
                    description: text(r.pointer("/message/text")).unwrap_or_default(),
                    // The quote, for the same-issue rule.
                    evidence: text(r.pointer("/properties/evidence")),
                    fingerprint: Some(fingerprint.as_str()?.to_string()),
                    ..Finding::default()
                })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn finding(fp: &str, severity: Severity) -> Finding {
        Finding {
            file: "a.rs".into(),
            line: 3,
            severity: Some(severity),
            fingerprint: Some(fp.into()),
            ..Finding::default()
        }
    }

    #[test]
    fn findings_are_new_unchanged_updated_and_the_missing_absent() {
        let baseline = Baseline {
            source: "r1".into(),
            findings: vec![finding("a", Severity::Major), finding("b", Severity::Minor), finding("c", Severity::Nit)],
        };
        let mut now = vec![finding("a", Severity::Major), finding("b", Severity::Blocker), finding("d", Severity::Nit)];
        let absent = baseline.compare(&mut now);
        let states: Vec<_> = now.iter().map(|f| f.baseline).collect();
        use BaselineState::*;
        assert_eq!(states, [Some(Unchanged), Some(Updated), Some(New)]);
        assert_eq!(absent.len(), 1);
        assert_eq!((absent[0].fingerprint.as_deref(), absent[0].baseline), (Some("c"), Some(Absent)));
    }

    fn quoted(fp: &str, line: u64, evidence: &str, description: &str) -> Finding {
        Finding {
            file: "src/db.go".into(),
            line,
            evidence: Some(evidence.into()),
            anchor: Some(conclave_shared::Anchor::Anchored),
            description: description.into(),
            ..finding(fp, Severity::Major)
        }
    }

    #[test]
    fn a_finding_reworded_on_moved_code_is_the_same_issue_and_each_earlier_one_matches_once() {
        let said = "The error from db.QueryContext is discarded, so a failed query returns an empty list";
        let baseline = Baseline {
            source: "r1".into(),
            findings: vec![
                quoted("old-query", 40, "rows, _ := db.QueryContext(ctx, q)", said),
                quoted(
                    "old-scan",
                    43,
                    "rows.Scan(&u.ID)",
                    "The error from rows.Scan is discarded, so a failed scan is appended",
                ),
            ],
        };
        // The code moved down two lines (its quotes anchored on other lines of another
        // version) and another lane raised the issue now (so another fingerprint), once
        // reworded and once in the same words.
        let reworded = "db.QueryContext's error is discarded: a failed query gives an empty list, not an error";
        let mut now = vec![
            quoted("new-query", 42, "rows, _ := db.QueryContext(ctx, q)", reworded),
            Finding { severity: Some(Severity::Blocker), ..quoted("new-query-2", 42, "db.QueryContext(ctx, q)", said) },
            quoted(
                "new-close",
                44,
                "defer rows.Close()",
                "The error from rows.Close is discarded, so a failed query is hidden",
            ),
        ];
        let absent = baseline.compare(&mut now);
        let states: Vec<_> = now.iter().map(|f| f.baseline).collect();
        use BaselineState::*;
        assert_eq!(states, [Some(New), Some(Updated), Some(New)], "the closest wording takes the earlier finding");
        assert_eq!(absent.iter().map(|f| f.fingerprint.as_deref()).collect::<Vec<_>>(), [Some("old-scan")]);
        let mut alone = vec![now[0].clone()];
        assert!(baseline.compare(&mut alone).len() == 1 && alone[0].baseline == Some(Unchanged), "reworded");
        let mut edited = vec![quoted("new-query", 42, "rows, _ := db.QueryContext(ctx, q, orgID)", said)];
        baseline.compare(&mut edited);
        assert_eq!(edited[0].baseline, Some(New), "a quote of other code is another issue, however alike the words");
    }

    #[test]
    fn json_and_sarif_reports_are_read_and_anything_else_is_refused() {
        let json = json!({"review": {"findings": [
            {"agent": "w", "file": "a.rs", "line": 3, "description": "d", "fingerprint": "f1"},
            {"agent": "w", "file": "a.rs", "line": 4, "description": "no fingerprint"}
        ]}});
        let baseline = Baseline::parse("report.json", &json.to_string()).expect("json");
        assert_eq!(baseline.findings.len(), 1);
        let sarif = json!({"version": "2.1.0", "runs": [{"results": [
            {"message": {"text": "d"}, "partialFingerprints": {"conclaveFinding/v2": "f1"},
             "locations": [{"physicalLocation": {"artifactLocation": {"uri": "a.rs"}, "region": {"startLine": 3}}}],
             "properties": {"severity": "major", "raisedBy": "security", "evidence": "root.join(name)", "anchor": "relocated"}},
            {"message": {"text": "gone"}, "baselineState": "absent", "partialFingerprints": {"conclaveFinding/v2": "f2"},
             "locations": [{"physicalLocation": {"artifactLocation": {"uri": "a.rs"}}}]}
        ]}]});
        let baseline = Baseline::parse("last.sarif", &sarif.to_string()).expect("sarif");
        assert_eq!(baseline.findings.len(), 1, "absent results were already fixed");
        assert_eq!(baseline.findings[0].severity, Some(Severity::Major));
        assert_eq!(baseline.findings[0].evidence.as_deref(), Some("root.join(name)"));
        for (text, error) in
            [("{", "is not JSON"), ("{}", "has no `/review/findings`"), (r#"{"runs": 1}"#, "SARIF without")]
        {
            assert!(Baseline::parse("x", text).expect_err(text).contains(error), "{text}");
        }
    }
}
