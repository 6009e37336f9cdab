//! `--judge CONCLAVE`: a conclave decides whether a finding and a golden issue are
//! the same, instead of the wording rule. Each candidate pair (the same file, within
//! the window) is one run of the judge with the input `{"issue": {file, line,
//! description, severity}, "finding": {file, line, description, severity,
//! evidence}}`; its result must hold a boolean `same` (at its top, or in the output
//! of the agent feeding its output node), which its agent's output schema declares.
//! A pair judged the same scores 1; matching is then one-to-one as with the rule.

use conclave_catalog::{CheckedConclave, load_by_id, load_conclave};
use conclave_engine::{Engine, RunOptions};
use conclave_shared::{Finding, RunStatus};
use serde_json::{Value, json};
use std::collections::HashMap;

use super::matching::{assign, candidates};
use super::score::{Reviewed, golden_findings};
use crate::pipeline::{Catalog, ConclaveChoice};

/// Verdicts by case, issue index and finding (`file:line:description`).
pub type Verdicts = HashMap<(String, usize, String), bool>;

/// A loaded judge conclave.
#[derive(Debug)]
pub struct Judge {
    /// Its id.
    pub id: String,
    conclave: CheckedConclave,
}

fn key(f: &Finding) -> String {
    format!("{}:{}:{}", f.file, f.line, f.description)
}

impl Judge {
    /// Loads and checks the judge: one of its agents answers an object with a boolean `same`.
    pub fn load(choice: &ConclaveChoice, catalog: Catalog<'_>) -> Result<Judge, String> {
        let conclave = match choice {
            ConclaveChoice::Id(id) => load_by_id(id, catalog.dir, catalog.context),
            ConclaveChoice::PathOrId(given) => load_conclave(given, catalog.dir, catalog.context),
            ConclaveChoice::Default => return Err("the judge must be a conclave file or id".into()),
        }
        .map_err(|e| format!("the judge conclave: {e}"))?;
        let id = conclave.conclave().id.clone();
        let answers_same = conclave.conclave().nodes.iter().any(|n| {
            conclave.output(&n.id).is_some_and(|o| o.schema.pointer("/properties/same/type") == Some(&json!("boolean")))
        });
        if !answers_same {
            return Err(format!(
                "the judge conclave {id}: no agent of it has an output schema with a boolean `same` property; give the judge's \
                 agent an output schema such as {{\"type\": \"object\", \"properties\": {{\"same\": {{\"type\": \
                 \"boolean\"}}}}, \"required\": [\"same\"]}}"
            ));
        }
        Ok(Judge { id, conclave })
    }

    /// Judges every candidate pair of every node's findings of every case.
    pub async fn judge_all(&self, reviewed: &[Reviewed], window: u64, engine: &Engine) -> Result<Verdicts, String> {
        let mut verdicts = Verdicts::new();
        for r in reviewed {
            let Some(report) = &r.report else { continue };
            let issues = golden_findings(&r.case);
            // Only concerns are scored; an approval claims no defect.
            let findings: Vec<Finding> = report
                .findings
                .iter()
                .chain(&report.raised)
                .filter(|f| f.effective_stance() == conclave_shared::Stance::Concern)
                .cloned()
                .collect();
            for c in candidates(&findings, &issues, window) {
                let entry = (r.case.id.clone(), c.issue, key(&findings[c.finding]));
                if verdicts.contains_key(&entry) {
                    continue;
                }
                let same = self.ask(&findings[c.finding], &issues[c.issue], engine).await?;
                verdicts.insert(entry, same);
            }
        }
        Ok(verdicts)
    }

    async fn ask(&self, finding: &Finding, issue: &Finding, engine: &Engine) -> Result<bool, String> {
        let input = json!({
            "issue": {"file": issue.file, "line": issue.line, "description": issue.description,
                      "severity": issue.severity.map(|s| s.as_str())},
            "finding": {"file": finding.file, "line": finding.line, "description": finding.description,
                        "severity": finding.severity.map(|s| s.as_str()), "evidence": finding.evidence},
        });
        let handle = engine
            .start(self.conclave.clone(), input, RunOptions::default())
            .await
            .map_err(|e| format!("the judge {} could not start: {e}", self.id))?;
        let outcome = handle.wait().await;
        if outcome.status != RunStatus::Succeeded {
            return Err(format!(
                "the judge {} failed (run {}): {}",
                self.id,
                outcome.run_id,
                outcome.error.unwrap_or_default()
            ));
        }
        same_of(&outcome.result).ok_or_else(|| {
            format!("the judge {}'s result (run {}) has no boolean `same`: {}", self.id, outcome.run_id, outcome.result)
        })
    }
}

/// The boolean `same` of a judge's result: at its top, or one level down.
fn same_of(result: &Value) -> Option<bool> {
    result
        .get("same")
        .and_then(Value::as_bool)
        .or_else(|| result.as_object()?.values().find_map(|v| v.get("same").and_then(Value::as_bool)))
}

/// Matches by the judge's verdicts: a pair judged the same scores 1.
pub fn match_by_verdicts(
    case: &str,
    findings: &[Finding],
    issues: &[Finding],
    window: u64,
    verdicts: &Verdicts,
) -> Vec<Option<(usize, f64)>> {
    let pairs = candidates(findings, issues, window);
    let scores: Vec<Option<f64>> = pairs
        .iter()
        .map(|c| {
            let verdict = verdicts.get(&(case.to_string(), c.issue, key(&findings[c.finding])));
            verdict.copied().unwrap_or(false).then_some(1.0)
        })
        .collect();
    assign(findings, issues, &pairs, &scores)
}
