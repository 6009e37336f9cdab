//! Scoring reviewed cases: each case's findings matched to its golden issues (see
//! `matching.rs`), the counts pooled over every case (micro-averaged), the bootstrap
//! intervals, each node's own figures and what it adds, the figures at each support
//! level and per severity, and the details of each case.

use conclave_shared::{Finding, Stance};
use std::collections::{BTreeMap, BTreeSet};

use super::dataset::Case;
use super::metrics::{intervals, round};
use super::summary::{
    CaseDetail, Counts, EvalSummary, FoundRef, GoldenRef, MatchedIssue, MatchingSettings, NodeCase, NodeFigures,
    SUMMARY_FORMAT, SeverityFigures, SupportFigures, Tokens,
};
use crate::report::ReviewReport;

/// How one case's findings are matched to its issues: for each finding, the issue it
/// matched and how alike they are. Given the case's id, the findings and the issues.
pub type Match<'a> = dyn Fn(&str, &[Finding], &[Finding]) -> Vec<Option<(usize, f64)>> + 'a;

/// One case as reviewed.
#[derive(Debug, Clone)]
pub struct Reviewed {
    /// The case.
    pub case: Case,
    /// The review run.
    pub run_id: Option<String>,
    /// How it ended.
    pub status: String,
    /// Why it failed.
    pub error: Option<String>,
    /// Its report, when the run ended with one.
    pub report: Option<ReviewReport>,
}

/// What is scored, and how.
pub struct Scoring<'a> {
    /// The dataset, as given.
    pub dataset: String,
    /// The conclave's id.
    pub conclave: String,
    /// The findings-producing nodes, in the conclave's order.
    pub nodes: Vec<String>,
    /// The support a result finding needs to count.
    pub min_support: u32,
    /// How matching was set up, for the summary.
    pub settings: MatchingSettings,
    /// The matching itself.
    pub matcher: &'a Match<'a>,
}

impl std::fmt::Debug for Scoring<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scoring")
            .field("dataset", &self.dataset)
            .field("conclave", &self.conclave)
            .field("nodes", &self.nodes)
            .field("min_support", &self.min_support)
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// A golden issue as a finding, so the one rule compares it.
pub fn golden_findings(case: &Case) -> Vec<Finding> {
    case.issues
        .iter()
        .map(|g| Finding {
            agent: "golden".into(),
            file: g.file.clone(),
            line: g.line,
            severity: g.severity,
            description: g.description.clone(),
            ..Finding::default()
        })
        .collect()
}

fn concerns<'a>(findings: impl Iterator<Item = &'a Finding>) -> Vec<Finding> {
    findings.filter(|f| f.effective_stance() == Stance::Concern).cloned().collect()
}

/// Every findings-producing node's concerns in a report.
fn node_findings(report: &ReviewReport, node: &str) -> Vec<Finding> {
    if report.result_nodes.iter().any(|n| n == node) {
        concerns(report.findings.iter().filter(|f| f.agent == node))
    } else {
        concerns(report.raised.iter().filter(|f| f.agent == node))
    }
}

fn result_findings(report: Option<&ReviewReport>, min_support: u32) -> Vec<Finding> {
    let Some(report) = report else { return Vec::new() };
    concerns(report.findings.iter().filter(|f| min_support == 0 || f.support.unwrap_or(0) >= min_support))
}

fn counts_of(matched: &[Option<(usize, f64)>], issues: usize) -> Counts {
    let tp = matched.iter().flatten().count() as u64;
    Counts { true_positives: tp, false_positives: matched.len() as u64 - tp, false_negatives: issues as u64 - tp }
}

/// Scores the reviewed cases.
pub fn score(reviewed: &[Reviewed], scoring: &Scoring<'_>) -> EvalSummary {
    let mut total = Counts::default();
    let mut per_case = Vec::new();
    let mut details = Vec::new();
    let mut by_severity: BTreeMap<String, SeverityFigures> = BTreeMap::new();
    let (mut cost, mut tokens) = (None::<f64>, Tokens::default());
    for r in reviewed {
        let detail = case_detail(r, scoring, &mut by_severity);
        total.add(detail.counts);
        per_case.push(detail.counts);
        details.push(detail);
        for usage in r.report.iter().flat_map(|rep| &rep.usage) {
            tokens.input += usage.usage.input_tokens;
            tokens.output += usage.usage.output_tokens;
            if let Some(c) = usage.usage.cost_usd {
                cost = Some(cost.unwrap_or(0.0) + c);
            }
        }
    }
    for figures in by_severity.values_mut() {
        figures.precision = round(ratio(figures.matched_findings, figures.findings));
        figures.recall = round(ratio(figures.matched_issues, figures.issues));
    }
    EvalSummary {
        format: SUMMARY_FORMAT,
        dataset: scoring.dataset.clone(),
        conclave: scoring.conclave.clone(),
        matching: scoring.settings.clone(),
        min_support: scoring.min_support,
        cases: reviewed.len(),
        precision: round(total.precision()),
        recall: round(total.recall()),
        f1: round(total.f1()),
        counts: total,
        ci95: intervals(&per_case),
        by_node: by_node(&details, &scoring.nodes, reviewed),
        by_support: by_support(reviewed, scoring),
        by_severity,
        cost: cost.map(|c| (c * 1e6).round() / 1e6),
        tokens,
        cases_detail: details,
    }
}

fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 { 1.0 } else { part as f64 / whole as f64 }
}

fn case_detail(r: &Reviewed, scoring: &Scoring<'_>, by_severity: &mut BTreeMap<String, SeverityFigures>) -> CaseDetail {
    let issues = golden_findings(&r.case);
    let findings = result_findings(r.report.as_ref(), scoring.min_support);
    let matched = (scoring.matcher)(&r.case.id, &findings, &issues);
    let golden = |j: usize| GoldenRef {
        index: j,
        file: issues[j].file.clone(),
        line: issues[j].line,
        description: issues[j].description.clone(),
        severity: issues[j].severity.map(|s| s.as_str().to_string()),
    };
    let hit: BTreeSet<usize> = matched.iter().flatten().map(|(j, _)| *j).collect();
    for (f, m) in findings.iter().zip(&matched) {
        let entry = by_severity.entry(severity_name(f)).or_default();
        entry.findings += 1;
        entry.matched_findings += u64::from(m.is_some());
    }
    for (j, issue) in issues.iter().enumerate() {
        let entry = by_severity.entry(severity_name(issue)).or_default();
        entry.issues += 1;
        entry.matched_issues += u64::from(hit.contains(&j));
    }
    let by_node = scoring
        .nodes
        .iter()
        .map(|node| {
            let own = r.report.as_ref().map(|rep| node_findings(rep, node)).unwrap_or_default();
            let m = (scoring.matcher)(&r.case.id, &own, &issues);
            let matched_issues = m.iter().flatten().map(|(j, _)| *j).collect::<BTreeSet<_>>().into_iter().collect();
            (node.clone(), NodeCase { counts: counts_of(&m, issues.len()), matched_issues })
        })
        .collect();
    CaseDetail {
        id: r.case.id.clone(),
        run_id: r.run_id.clone(),
        status: r.status.clone(),
        error: r.error.clone(),
        counts: counts_of(&matched, issues.len()),
        matched: findings
            .iter()
            .zip(&matched)
            .filter_map(|(f, m)| {
                m.map(|(j, s)| MatchedIssue { issue: golden(j), finding: found(f), similarity: round(s) })
            })
            .collect(),
        missed: (0..issues.len()).filter(|j| !hit.contains(j)).map(golden).collect(),
        extra: findings.iter().zip(&matched).filter(|(_, m)| m.is_none()).map(|(f, _)| found(f)).collect(),
        by_node,
    }
}

fn severity_name(f: &Finding) -> String {
    f.severity.map_or("unrated", |s| s.as_str()).to_string()
}

fn found(f: &Finding) -> FoundRef {
    FoundRef {
        node: f.agent.clone(),
        raised_by: f.raised_by.clone(),
        file: f.file.clone(),
        line: f.line,
        severity: f.severity.map(|s| s.as_str().to_string()),
        description: f.description.clone(),
        support: f.support,
    }
}

/// Each node's pooled figures, and the union's recall without it.
fn by_node(details: &[CaseDetail], nodes: &[String], reviewed: &[Reviewed]) -> Vec<NodeFigures> {
    let issues: u64 = reviewed.iter().map(|r| r.case.issues.len() as u64).sum();
    let union_recall = |without: Option<&str>| {
        let found: u64 = details
            .iter()
            .map(|d| {
                let union: BTreeSet<usize> = d
                    .by_node
                    .iter()
                    .filter(|(n, _)| Some(n.as_str()) != without)
                    .flat_map(|(_, c)| c.matched_issues.iter().copied())
                    .collect();
                union.len() as u64
            })
            .sum();
        ratio(found, issues)
    };
    let everyone = union_recall(None);
    let result_nodes: BTreeSet<&str> = reviewed
        .iter()
        .flat_map(|r| r.report.iter().flat_map(|rep| rep.result_nodes.iter().map(String::as_str)))
        .collect();
    nodes
        .iter()
        .map(|node| {
            let mut counts = Counts::default();
            for d in details {
                counts.add(d.by_node.get(node).map(|c| c.counts).unwrap_or_default());
            }
            let without = union_recall(Some(node));
            NodeFigures {
                node: node.clone(),
                result: result_nodes.contains(node.as_str()),
                findings: counts.true_positives + counts.false_positives,
                precision: round(counts.precision()),
                recall: round(counts.recall()),
                union_recall_without: round(without),
                adds: round(everyone - without),
            }
        })
        .collect()
}

/// The result's figures at each support level from 1 to the highest seen.
fn by_support(reviewed: &[Reviewed], scoring: &Scoring<'_>) -> Vec<SupportFigures> {
    let highest = reviewed
        .iter()
        .flat_map(|r| r.report.iter().flat_map(|rep| rep.findings.iter().filter_map(|f| f.support)))
        .max()
        .unwrap_or(0);
    (1..=highest)
        .map(|level| {
            let mut counts = Counts::default();
            for r in reviewed {
                let issues = golden_findings(&r.case);
                let findings = result_findings(r.report.as_ref(), level);
                counts.add(counts_of(&(scoring.matcher)(&r.case.id, &findings, &issues), issues.len()));
            }
            SupportFigures {
                min_support: level,
                findings: counts.true_positives + counts.false_positives,
                precision: round(counts.precision()),
                recall: round(counts.recall()),
            }
        })
        .collect()
}
