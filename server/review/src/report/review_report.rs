//! What a review report holds ([`ReviewReport`], with its agents' lowerings and
//! usage, the sampled agents and the summary of repeated runs), the totals it
//! computes from its findings, and what a finding counts as in it: listed, gating,
//! its fingerprint and lane. Building a report (`mod.rs`) and rendering it (one file
//! per format) both read it.

use conclave_shared::{
    Anchor, BaselineState, CountMismatch, Finding, FindingsCheck, LoweringNote, OutputDialect, RunStatus, Severity,
    Stance, Usage,
};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// One agent's schema lowering, as reported.
#[derive(Debug, Clone, PartialEq)]
pub struct LoweringSummary {
    /// The agent.
    pub node_id: String,
    /// The dialect, or `prompt`.
    pub target: String,
    /// Whether native structured output was used.
    pub native: bool,
    /// For OpenAI-compatible servers: the structured-output dialect the agent ended
    /// with (after any step down the server asked for).
    pub dialect: Option<OutputDialect>,
    /// What changed, a step down included.
    pub notes: Vec<LoweringNote>,
}

/// One agent's usage, as reported.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentUsage {
    /// The agent.
    pub node_id: String,
    /// Its provider.
    pub provider: String,
    /// Its model.
    pub model: String,
    /// Tokens and cost.
    pub usage: Usage,
    /// The run whose cached answer it took (at no cost), if it took one.
    pub cached_from: Option<String>,
}

/// Everything a report shows.
#[derive(Debug, Clone)]
pub struct ReviewReport {
    /// The run.
    pub run_id: String,
    /// The conclave's id and name.
    pub conclave: (String, String),
    /// How the run ended.
    pub status: RunStatus,
    /// Why it failed, if it did.
    pub error: Option<String>,
    /// The agents whose findings are the review's result (those feeding the output).
    pub result_nodes: Vec<String>,
    /// The result's findings.
    pub findings: Vec<Finding>,
    /// The result as JSON (the single result agent's output, or an object by node).
    pub result: Value,
    /// The schema reference of the result, when one agent produced it by reference.
    pub schema_ref: Option<String>,
    /// Comparisons the engine made, by the node that received them.
    pub checks: Vec<(String, FindingsCheck)>,
    /// Count mismatches, by agent.
    pub mismatches: Vec<(String, Vec<CountMismatch>)>,
    /// Schema lowerings with notes.
    pub lowerings: Vec<LoweringSummary>,
    /// Usage per agent, in conclave order.
    pub usage: Vec<AgentUsage>,
    /// Files of the change left out to keep the diff under the cap: path and size.
    pub omitted: Vec<(String, u64)>,
    /// The baseline the findings were compared with (a run id or a file), if any.
    pub baseline: Option<String>,
    /// The baseline's findings that are gone now, marked absent.
    pub absent: Vec<Finding>,
    /// Why the review is degraded (less than it claims to be), if it is: agents
    /// that failed or were skipped, agents moved to the local model for want of a key.
    /// Every gate fails on a degraded review unless allowed.
    pub degraded: Vec<String>,
    /// The findings of the other agents (the reviewers feeding the result), which
    /// give each result finding its support; not shown on their own.
    pub raised: Vec<Finding>,
    /// The review's analyzer lanes: which ran (with their findings, and those the
    /// result left out and the report added), which failed, which were off and why.
    pub analyzers: Vec<crate::analyzers::AnalyzerLane>,
    /// The support a finding needs to count in gates (`--min-support`; 0: any).
    pub min_support: u32,
    /// The agents that ran as samples (`--samples K`).
    pub samples: Vec<SampledAgent>,
    /// The stability a sampled finding needs to count in gates (`--min-stability`,
    /// a rate from 0 to 1; 0: any).
    pub min_stability: f64,
    /// What the runs of a repeated review had in common (`--repeat N`), in the last
    /// run's report.
    pub repeat: Option<RepeatSummary>,
    /// What the run spent against its budget, when it has one (or an agent has a
    /// `max_cost`).
    pub budget: Option<super::budget::BudgetSummary>,
    /// What the review covered, when only what is new since an earlier review was
    /// asked for: the commits reviewed now and earlier, or why the review is full.
    pub scope: Option<crate::incremental::Scope>,
    /// The repository's rules files given to the reviewers, and those refused or left
    /// out with why (`rules.rs`); empty when the review had none.
    pub rules: crate::rules::RulesRead,
    /// A change reviewed in parts: the parts and their files, the hunks left out
    /// (each larger than a part), the parts a reviewer failed on; empty when it fit.
    pub parts: super::parts::PartsRead,
    /// The agents whose input was cut to fit their model's window, and what was cut.
    pub input_fits: Vec<super::input_fits::FittedInput>,
    /// Which side of the change configured the review, and the configuration files
    /// the change edits (`None` for a review of the working tree).
    pub configuration: Option<crate::configuration::ConfigurationSource>,
    /// The findings that a dismissal the change itself added would have hidden: not
    /// applied, they stay and gates count them.
    pub dismissals_not_applied: Vec<crate::configuration::dismissals::NotApplied>,
    /// The links its text may keep: those into the forge repository's web pages,
    /// from the run input (see `sanitized.rs`).
    pub links: crate::inert::LinkPolicy,
    /// Each command that ran and what confined it (`sandboxes.rs`).
    pub sandboxes: Vec<super::sandboxes::CommandSandbox>,
    /// What the change's impact found and gave the reviewers, and what the caps left
    /// out (`None` for a run made before impact, or not a review).
    pub impact: Option<crate::impact::ImpactRecord>,
}

impl ReviewReport {
    /// Findings per severity, computed from the findings (concerns only).
    pub fn totals(&self) -> BTreeMap<Severity, u64> {
        let mut totals: BTreeMap<Severity, u64> = Severity::ALL.iter().map(|s| (*s, 0)).collect();
        for f in self.findings.iter().filter(|f| f.effective_stance() == Stance::Concern) {
            if let Some(s) = f.severity {
                *totals.entry(s).or_default() += 1;
            }
        }
        totals
    }

    /// Findings per severity that gates count: concerns neither unanchored (their
    /// quote is not in the file) nor dismissed (both are listed apart), and with a
    /// baseline only new or updated ones.
    pub fn gated_totals(&self) -> BTreeMap<Severity, u64> {
        let mut totals: BTreeMap<Severity, u64> = Severity::ALL.iter().map(|s| (*s, 0)).collect();
        for f in self.findings.iter().filter(|f| f.effective_stance() == Stance::Concern && self.counts(f)) {
            if let Some(s) = f.severity {
                *totals.entry(s).or_default() += 1;
            }
        }
        totals
    }

    /// Whether a finding counts in gates and is posted: [`gates`], and at least as
    /// much support and stability as asked for.
    pub fn counts(&self, f: &Finding) -> bool {
        // An incremental review's baseline is the branch's own earlier review: what
        // it found is still the branch's, so unchanged findings gate too.
        let gating = if self.incremental() { listed(f) } else { gates(f) };
        gating && self.supported(f) && self.stable(f)
    }

    /// Whether only what is new since an earlier review of the branch was reviewed.
    pub fn incremental(&self) -> bool {
        self.scope.as_ref().is_some_and(crate::incremental::Scope::is_incremental)
    }

    /// Whether a finding has the support `--min-support` asks for (findings without a
    /// support figure have nothing to fall short of).
    pub fn supported(&self, f: &Finding) -> bool {
        f.support.is_none_or(|s| s >= self.min_support)
    }

    /// Whether a finding has the stability `--min-stability` asks for (findings of
    /// agents that were not sampled have nothing to fall short of).
    pub fn stable(&self, f: &Finding) -> bool {
        // Rates such as 2/3 against a threshold written 0.67 or 2/3: a little slack.
        f.stability.is_none_or(|s| s.rate() + 1e-9 >= self.min_stability)
    }

    /// Every disagreement (severities one level apart at one place) across checks.
    pub fn disagreements(&self) -> impl Iterator<Item = &conclave_shared::FindingGroup> {
        self.checks.iter().flat_map(|(_, c)| &c.disagreements)
    }

    /// Every contradiction across checks.
    pub fn contradictions(&self) -> impl Iterator<Item = &conclave_shared::FindingGroup> {
        self.checks.iter().flat_map(|(_, c)| &c.contradictions)
    }
}

/// An agent that ran as samples, from the `samples` object of its merged output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SampledAgent {
    /// The agent.
    pub node_id: String,
    /// Samples started.
    pub requested: u32,
    /// Samples that gave a valid answer.
    pub answered: u32,
    /// Why the others gave none.
    pub failed: Vec<String>,
}

/// What N runs of the same review had in common (`--repeat N`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RepeatSummary {
    /// Runs made.
    pub runs: u32,
    /// Runs that succeeded.
    pub succeeded: u32,
    /// Runs in which an agent's `counts` disagreed with its findings.
    pub runs_with_count_mismatch: u32,
    /// Runs in which reviewers contradicted each other.
    pub runs_with_contradiction: u32,
    /// `runs_with_count_mismatch / runs`.
    pub count_mismatch_rate: f64,
    /// `runs_with_contradiction / runs`.
    pub contradiction_rate: f64,
    /// Distinct listed findings (by fingerprint) of each run, in order.
    pub findings_per_run: Vec<u64>,
    /// Distinct findings (by fingerprint) over all runs.
    pub distinct_findings: u64,
    /// Of those, the ones every run raised.
    pub in_every_run: u64,
}

/// A finding's fingerprint: the one computed from its file's code when the report
/// was built (see `anchor.rs`), else one from what the agent quoted or said.
pub fn fingerprint(finding: &Finding) -> String {
    finding.fingerprint.clone().unwrap_or_else(|| crate::anchor::fingerprint(finding, None))
}

/// How many findings have each anchor state, in a fixed order (`none` for findings
/// not checked at all, such as those of a report built without the repository).
pub fn anchor_counts(findings: &[Finding]) -> Vec<(&'static str, u64)> {
    let states = ["anchored", "relocated", "unanchored", "unquoted", "unchecked", "none"];
    states
        .iter()
        .map(|state| {
            let n = findings.iter().filter(|f| f.anchor.map_or("none", Anchor::as_str) == *state).count() as u64;
            (*state, n)
        })
        .collect()
}

/// Whether a finding may fail a gate or be posted: not when its quote is nowhere in
/// the file, nor when the repository dismissed it, nor when a baseline already had
/// it as it is (gates look at new and updated findings).
pub fn gates(finding: &Finding) -> bool {
    listed(finding) && !matches!(finding.baseline, Some(BaselineState::Unchanged | BaselineState::Absent))
}

/// Whether a finding belongs in a report's main list: not when its quote is nowhere
/// in the file, nor when the repository dismissed it (both are listed apart).
pub fn listed(finding: &Finding) -> bool {
    finding.anchor != Some(Anchor::Unanchored) && finding.dismissed.is_none()
}

/// The lane of a finding, for rule ids: its first `raisedBy` word, else the agent.
pub fn lane(finding: &Finding) -> String {
    let raw = finding.raised_by.as_deref().unwrap_or(&finding.agent);
    let first = raw.split([',', ' ', '/']).find(|s| !s.is_empty()).unwrap_or("review");
    first.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_').collect::<String>().to_lowercase()
}
