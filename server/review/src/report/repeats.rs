//! Confidence in reports: the agents that ran as samples (`--samples K`), how the
//! findings' stabilities and supports are distributed, and the summary of a review repeated N
//! times (`--repeat N`): how often the Writer miscounted, how often reviewers
//! contradicted each other, and how many findings came back in every run.

use conclave_shared::{NodeOutput, RunRecord, Stability};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

use super::review_report::{RepeatSummary, ReviewReport, SampledAgent, fingerprint, listed};

/// The sampled agents of a run, in conclave order.
pub(super) fn sampled_agents(record: &RunRecord) -> Vec<SampledAgent> {
    record
        .nodes
        .iter()
        .filter_map(|n| {
            let Some(NodeOutput::Json(output)) = &n.output else { return None };
            let samples = output.get("samples")?;
            let count = |key: &str| samples.get(key).and_then(Value::as_u64).map(|v| v as u32);
            Some(SampledAgent {
                node_id: n.node_id.clone(),
                requested: count("requested")?,
                answered: count("answered")?,
                failed: samples
                    .get("failed")
                    .and_then(Value::as_array)
                    .map(|list| list.iter().filter_map(Value::as_str).map(str::to_string).collect())
                    .unwrap_or_default(),
            })
        })
        .collect()
}

/// Why sampled agents make the review degraded: samples that gave no answer.
pub(super) fn failed_samples(sampled: &[SampledAgent]) -> Vec<String> {
    sampled
        .iter()
        .filter(|s| !s.failed.is_empty())
        .map(|s| {
            let first = s.failed.first().map(String::as_str).unwrap_or_default();
            format!("agent `{}`: {} of {} samples failed ({first})", s.node_id, s.failed.len(), s.requested)
        })
        .collect()
}

/// How many listed findings have each stability, most stable first.
pub fn stability_distribution(report: &ReviewReport) -> Vec<(Stability, u64)> {
    let mut counts: BTreeMap<(u32, u32), u64> = BTreeMap::new();
    for s in report.findings.iter().filter(|f| listed(f)).filter_map(|f| f.stability) {
        *counts.entry((s.samples, s.raised)).or_default() += 1;
    }
    let mut out: Vec<(Stability, u64)> =
        counts.into_iter().map(|((samples, raised), n)| (Stability { raised, samples }, n)).collect();
    out.sort_by(|(a, _), (b, _)| b.rate().total_cmp(&a.rate()).then(b.samples.cmp(&a.samples)));
    out
}

/// How many listed findings have each support, highest first.
pub fn support_distribution(report: &ReviewReport) -> Vec<(u32, u64)> {
    let mut counts: BTreeMap<u32, u64> = BTreeMap::new();
    for s in report.findings.iter().filter(|f| listed(f)).filter_map(|f| f.support) {
        *counts.entry(s).or_default() += 1;
    }
    counts.into_iter().rev().collect()
}

impl RepeatSummary {
    /// The summary of these runs' reports.
    pub fn of(reports: &[ReviewReport]) -> RepeatSummary {
        let runs = reports.len() as u32;
        let rate = |n: u32| if runs == 0 { 0.0 } else { f64::from(n) / f64::from(runs) };
        let mismatched = reports.iter().filter(|r| r.mismatches.iter().any(|(_, m)| !m.is_empty())).count() as u32;
        let contradicted = reports.iter().filter(|r| r.contradictions().next().is_some()).count() as u32;
        let per_run: Vec<BTreeSet<String>> =
            reports.iter().map(|r| r.findings.iter().filter(|f| listed(f)).map(fingerprint).collect()).collect();
        let distinct: BTreeSet<&String> = per_run.iter().flatten().collect();
        let in_every_run = distinct.iter().filter(|fp| per_run.iter().all(|run| run.contains(**fp))).count();
        RepeatSummary {
            runs,
            succeeded: reports.iter().filter(|r| r.status == conclave_shared::RunStatus::Succeeded).count() as u32,
            runs_with_count_mismatch: mismatched,
            runs_with_contradiction: contradicted,
            count_mismatch_rate: rate(mismatched),
            contradiction_rate: rate(contradicted),
            findings_per_run: per_run.iter().map(|run| run.len() as u64).collect(),
            distinct_findings: distinct.len() as u64,
            in_every_run: in_every_run as u64,
        }
    }
}
