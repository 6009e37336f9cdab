//! Baselines: an earlier review to compare with, so a report can say which findings
//! are new, which are unchanged, which changed, and which are gone (fixed).
//!
//! A baseline is read from a stored run's JSON report, or from a report file: the
//! JSON report, or SARIF as CI systems keep it (results carry the fingerprint in
//! `partialFingerprints`). Findings are matched by their identity, as the comparison of
//! two runs matches them (`conclave_shared::compare`): the fingerprint, which names
//! the code and not the line, so a finding whose lines moved is still `unchanged`.

use conclave_shared::{BaselineState, Finding, FindingIdentity, Severity};
use serde_json::Value;
use std::collections::{HashMap, HashSet};

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
    /// [`Finding::identity`], with another severity or stance) against the baseline,
    /// and returns the baseline's findings that are gone, marked absent.
    pub fn compare(&self, findings: &mut [Finding]) -> Vec<Finding> {
        let before: HashMap<FindingIdentity<'_>, &Finding> = self.findings.iter().map(|f| (f.identity(), f)).collect();
        for finding in findings.iter_mut() {
            finding.baseline = Some(match before.get(&finding.identity()) {
                None => BaselineState::New,
                Some(e) if e.severity != finding.severity || e.effective_stance() != finding.effective_stance() => {
                    BaselineState::Updated
                }
                Some(_) => BaselineState::Unchanged,
            });
        }
        let now: HashSet<FindingIdentity<'_>> = findings.iter().map(Finding::identity).collect();
        self.findings
            .iter()
            .filter(|f| !now.contains(&f.identity()))
            .map(|f| Finding { baseline: Some(BaselineState::Absent), ..f.clone() })
            .collect()
    }
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
             "properties": {"severity": "major", "raisedBy": "security"}},
            {"message": {"text": "gone"}, "baselineState": "absent", "partialFingerprints": {"conclaveFinding/v2": "f2"},
             "locations": [{"physicalLocation": {"artifactLocation": {"uri": "a.rs"}}}]}
        ]}]});
        let baseline = Baseline::parse("last.sarif", &sarif.to_string()).expect("sarif");
        assert_eq!(baseline.findings.len(), 1, "absent results were already fixed");
        assert_eq!(baseline.findings[0].severity, Some(Severity::Major));
        for (text, error) in
            [("{", "is not JSON"), ("{}", "has no `/review/findings`"), (r#"{"runs": 1}"#, "SARIF without")]
        {
            assert!(Baseline::parse("x", text).expect_err(text).contains(error), "{text}");
        }
    }
}
