//! What `conclave eval` reports, as it is written in JSON (`--format json`), read
//! back by `conclave eval compare`, kept in the run store and drawn by the editor: the pooled figures with their bootstrap
//! intervals, each findings-producing node's own figures and what it adds, the
//! figures at each support level and per severity, cost and tokens, and per case its
//! matched, missed and extra findings.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The version of the summary's JSON.
pub const SUMMARY_FORMAT: u32 = 1;

/// The whole result of an eval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EvalSummary {
    /// [`SUMMARY_FORMAT`].
    pub format: u32,
    /// The dataset's directory, as given.
    pub dataset: String,
    /// The conclave that reviewed the cases.
    pub conclave: String,
    /// How findings were matched to golden issues.
    pub matching: MatchingSettings,
    /// The support a result finding needed to count (`--min-support`; 0: any).
    pub min_support: u32,
    /// How many cases were reviewed.
    pub cases: usize,
    /// Pooled over every case: precision of the result's findings.
    pub precision: f64,
    /// Pooled recall of the golden issues.
    pub recall: f64,
    /// The harmonic mean of the two.
    pub f1: f64,
    /// The pooled counts behind the three figures.
    pub counts: Counts,
    /// 95% intervals of the three, by a bootstrap over cases.
    pub ci95: Intervals,
    /// Each findings-producing node: its own figures, and what it adds to the union.
    pub by_node: Vec<NodeFigures>,
    /// The result's figures at each support level from 1 to the highest seen.
    pub by_support: Vec<SupportFigures>,
    /// Per severity: the findings of that severity, and the golden issues of it.
    pub by_severity: BTreeMap<String, SeverityFigures>,
    /// What the reviews cost, in US dollars, when the prices are known.
    pub cost: Option<f64>,
    /// Tokens of every provider call of every review.
    pub tokens: Tokens,
    /// Per case, in the dataset's order.
    pub cases_detail: Vec<CaseDetail>,
}

/// How findings were matched.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MatchingSettings {
    /// Most lines between a finding and a golden issue (`--window`).
    pub window: u64,
    /// The wording threshold of the near-duplicate rule, or `None` with a judge.
    pub threshold: Option<f64>,
    /// The judge conclave (`--judge`), when pairs were judged by one.
    pub judge: Option<String>,
    /// The bootstrap's resamples and seed.
    pub resamples: u32,
    /// The seed of the bootstrap.
    pub seed: u64,
}

/// True positives, false positives, false negatives.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Counts {
    /// Findings that matched a golden issue.
    pub true_positives: u64,
    /// Findings that matched none (or one already matched).
    pub false_positives: u64,
    /// Golden issues no finding matched.
    pub false_negatives: u64,
}

impl Counts {
    /// Adds another's counts.
    pub fn add(&mut self, other: Counts) {
        self.true_positives += other.true_positives;
        self.false_positives += other.false_positives;
        self.false_negatives += other.false_negatives;
    }

    /// Precision: 1 when nothing was found (no false claim was made).
    pub fn precision(&self) -> f64 {
        ratio(self.true_positives, self.true_positives + self.false_positives, 1.0)
    }

    /// Recall: 1 when there was nothing to find.
    pub fn recall(&self) -> f64 {
        ratio(self.true_positives, self.true_positives + self.false_negatives, 1.0)
    }

    /// F1 from true positives: 2TP / (2TP + FP + FN), 1 when there was nothing to
    /// find and nothing was found.
    pub fn f1(&self) -> f64 {
        let tp = 2 * self.true_positives;
        ratio(tp, tp + self.false_positives + self.false_negatives, 1.0)
    }
}

fn ratio(part: u64, whole: u64, empty: f64) -> f64 {
    if whole == 0 { empty } else { part as f64 / whole as f64 }
}

/// A 95% interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Interval {
    /// The 2.5th percentile.
    pub low: f64,
    /// The 97.5th percentile.
    pub high: f64,
}

/// The intervals of the three figures.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Intervals {
    /// Of precision.
    pub precision: Interval,
    /// Of recall.
    pub recall: Interval,
    /// Of F1.
    pub f1: Interval,
}

/// One node's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NodeFigures {
    /// The node.
    pub node: String,
    /// Whether its findings are the review's result (the Writer), not a reviewer's.
    pub result: bool,
    /// Its findings (concerns) over every case.
    pub findings: u64,
    /// Its own precision.
    pub precision: f64,
    /// Its own recall of the golden issues.
    pub recall: f64,
    /// The recall of every node's findings together, without this node's.
    pub union_recall_without: f64,
    /// What it adds: the union's recall less the union's recall without it.
    pub adds: f64,
}

/// The result's figures counting only findings with at least `min_support`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SupportFigures {
    /// The support level.
    pub min_support: u32,
    /// Findings at that level or above.
    pub findings: u64,
    /// Their precision.
    pub precision: f64,
    /// The recall of the golden issues by them.
    pub recall: f64,
}

/// Figures of one severity.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SeverityFigures {
    /// Result findings of this severity.
    pub findings: u64,
    /// Those that matched a golden issue.
    pub matched_findings: u64,
    /// Golden issues of this severity.
    pub issues: u64,
    /// Those a finding matched.
    pub matched_issues: u64,
    /// matched findings / findings (1 with none).
    pub precision: f64,
    /// matched issues / issues (1 with none).
    pub recall: f64,
}

/// Tokens of every call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Tokens {
    /// Prompt tokens.
    pub input: u64,
    /// Completion tokens.
    pub output: u64,
}

/// One case's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CaseDetail {
    /// The case's id.
    pub id: String,
    /// The review run, kept in the store.
    pub run_id: Option<String>,
    /// How the run ended (`succeeded`, `failed`, ...).
    pub status: String,
    /// Why it failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Its counts (at the eval's min-support).
    pub counts: Counts,
    /// Findings that matched a golden issue.
    pub matched: Vec<MatchedIssue>,
    /// Golden issues no finding matched.
    pub missed: Vec<GoldenRef>,
    /// Findings that matched nothing.
    pub extra: Vec<FoundRef>,
    /// Per node: its counts in this case (for `eval compare` and the node figures).
    pub by_node: BTreeMap<String, NodeCase>,
}

/// One node's findings in one case, as matched.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NodeCase {
    /// Its counts.
    pub counts: Counts,
    /// The golden issues (indices into the case's `issues`) its findings matched.
    pub matched_issues: Vec<usize>,
}

/// A golden issue, as the case gives it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GoldenRef {
    /// Its index in the case's `issues`.
    pub index: usize,
    /// File.
    pub file: String,
    /// Line.
    pub line: u64,
    /// What is wrong.
    pub description: String,
    /// Severity, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity: Option<String>,
}

/// A finding of the review.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FoundRef {
    /// The node whose output held it.
    pub node: String,
    /// The lane it names (`raisedBy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raised_by: Option<String>,
    /// File.
    pub file: String,
    /// Line.
    pub line: u64,
    /// Severity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity: Option<String>,
    /// What it says.
    pub description: String,
    /// How many reviewers raised it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub support: Option<u32>,
}

/// A finding matched to a golden issue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MatchedIssue {
    /// The golden issue.
    pub issue: GoldenRef,
    /// The finding.
    pub finding: FoundRef,
    /// How alike their wording is (1 for a judge's "same").
    pub similarity: f64,
}

/// `eval compare`: B less A, per figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Comparison {
    /// A's conclave and dataset.
    pub a: String,
    /// B's.
    pub b: String,
    /// The cases both reviewed, by which the bootstrap is paired.
    pub paired_cases: usize,
    /// Each figure's difference.
    pub deltas: Vec<Delta>,
}

/// One figure's difference between two evals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Delta {
    /// `precision`, `recall`, `f1`, or `<node> recall`.
    pub figure: String,
    /// A's value.
    pub a: f64,
    /// B's value.
    pub b: f64,
    /// B − A.
    pub delta: f64,
    /// A 95% interval of the difference, by a paired bootstrap over the common cases.
    pub ci95: Interval,
    /// Whether the interval leaves out 0.
    pub significant: bool,
}

/// An eval kept in the run store: `conclave eval` keeps each one it finishes, and
/// `GET /api/evals/{id}` answers with it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StoredEval {
    /// Its id (a UUID v7, as runs have).
    pub id: String,
    /// The conclave that reviewed the cases.
    pub conclave: String,
    /// The dataset's directory, as given.
    pub dataset: String,
    /// When it was kept, in Unix milliseconds.
    pub created_ms: u64,
    /// Everything it measured.
    pub summary: EvalSummary,
}

/// A kept eval in a list (`GET /api/evals`): what tells it apart, and its headline
/// figures without their detail.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EvalListing {
    /// The eval's id.
    pub id: String,
    /// The conclave that reviewed the cases.
    pub conclave: String,
    /// The dataset's directory, as given.
    pub dataset: String,
    /// When it was kept, in Unix milliseconds.
    pub created_ms: u64,
    /// How many cases were reviewed.
    pub cases: usize,
    /// Pooled precision.
    pub precision: f64,
    /// Pooled recall.
    pub recall: f64,
    /// Pooled F1.
    pub f1: f64,
}

impl StoredEval {
    /// Its line in a list of evals.
    pub fn listing(&self) -> EvalListing {
        EvalListing {
            id: self.id.clone(),
            conclave: self.conclave.clone(),
            dataset: self.dataset.clone(),
            created_ms: self.created_ms,
            cases: self.summary.cases,
            precision: self.summary.precision,
            recall: self.summary.recall,
            f1: self.summary.f1,
        }
    }
}
