//! `conclave review [REPO]`: reviews a git change with the default review conclave
//! (or another), writes the report, and applies CI gates.

use clap::{Args, ValueEnum};
use conclave_core::RunStore;
use conclave_engine::Engine;
use conclave_review::baseline::Baseline;
use conclave_review::pipeline::{self, ReviewError, ReviewRequest};
use conclave_review::{ConclaveChoice, ReportFormat, ReviewReport};
use conclave_shared::{RunStatus, Severity};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::run::{announce, exit_code, explain_load_error, follow, start_error_code, warn};
use super::runs::resolve_id;
use super::{exit, format_parser};
use crate::workspace::{Workspace, engine_config};

/// Arguments of `conclave review`.
#[derive(Debug, Args)]
pub struct ReviewArgs {
    /// The repository to review (default: the current directory).
    pub repo: Option<PathBuf>,
    /// Review `BASE...HEAD` instead of the working tree against HEAD.
    #[arg(long)]
    pub base: Option<String>,
    /// A conclave file or id (default: light-code-review).
    #[arg(long)]
    pub conclave: Option<String>,
    /// Report format.
    #[arg(long, value_parser = format_parser(), default_value = "markdown")]
    pub format: ReportFormat,
    /// Write the report here (only when the run succeeded) instead of standard output.
    #[arg(long)]
    pub output_file: Option<PathBuf>,
    /// Exit 5 when the review has a blocker, reviewers contradict each other, or they
    /// disagree by one severity level at the same place.
    #[arg(long, value_enum)]
    pub fail_on: Vec<Gate>,
    /// Run every agent on this provider.
    #[arg(long)]
    pub provider: Option<String>,
    /// With --provider: the model for every agent (default: the provider's default).
    #[arg(long)]
    pub model: Option<String>,
    /// Run the same review N times and report mismatches, contradictions and findings per run.
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// Most nodes running at once (1 to 1024).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub max_concurrency: u16,
    /// Compare with an earlier review: a stored run's id (a unique prefix is enough),
    /// or a JSON or SARIF report file. Findings are marked new, unchanged or updated,
    /// gone ones absent, and gates count new and updated findings only.
    #[arg(long, value_name = "RUN_ID|FILE")]
    pub baseline: Option<String>,
    /// Count in gates only findings that at least N distinct reviewers raised (or a
    /// near-duplicate of them); the report still lists every finding with its support.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub min_support: u32,
    /// Let `--fail-on` gates pass a degraded review (agents failed, were skipped, or
    /// ran on the local model for want of a key) on its findings alone.
    #[arg(long)]
    pub allow_degraded: bool,
    /// Fail when an agent's provider has no key, instead of running it on the local model.
    #[arg(long)]
    pub no_fallback: bool,
    /// Let the review tools read files matching this glob although `.git/` or
    /// `.gitignore` hide them (repeatable; adds to CONCLAVE_ALLOW_PATHS).
    #[arg(long = "allow-path", value_name = "GLOB")]
    pub allow_paths: Vec<String>,
    /// Most bytes of diff sent to the agents; the largest files are left out beyond
    /// it, and the report lists them (default 1 MiB, or CONCLAVE_MAX_DIFF_BYTES).
    #[arg(long, value_name = "BYTES")]
    pub max_diff_bytes: Option<usize>,
    /// Publish the review on its pull request (GitHub) or merge request (GitLab),
    /// updating Conclave's earlier comments instead of duplicating them; where and
    /// with which token come from the CI environment (see the README).
    #[arg(long, value_enum, value_name = "FORGE")]
    pub post: Option<crate::post::Forge>,
    /// With --post: the pull (merge) request number, instead of the CI environment's.
    #[arg(long, value_name = "N", requires = "post")]
    pub pr: Option<u64>,
}

/// CI gates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Gate {
    /// The review has at least one blocker.
    Blocker,
    /// Reviewers contradict each other somewhere.
    Contradiction,
    /// Reviewers rate the same place one severity level apart somewhere.
    Disagreement,
}

/// Whether this is a CI job: `CI` set to anything but empty, `0` or `false`, as CI
/// systems (GitHub Actions, GitLab CI and others) set it.
fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && !v.eq_ignore_ascii_case("false"))
}

/// In CI, a review whose agents lack their keys stops before it starts, saying which
/// keys and why (exit 2), instead of failing on the first agent.
fn refuse_in_ci(args: &ReviewArgs, review: &pipeline::PreparedReview, workspace: &Workspace) -> Option<u8> {
    if !in_ci() || args.no_fallback {
        return None;
    }
    let missing = pipeline::unconfigured_agents(&review.conclave, &workspace.providers);
    if missing.is_empty() {
        return None;
    }
    let reasons: Vec<String> = missing.iter().map(|(id, why)| format!("{id} ({why})")).collect();
    eprintln!(
        "error: not reviewed: {}. CI is set, so Conclave does not fall back to the local model: a pull request from a \
         fork has no secrets, and its review must not pass on a small local model. Give the job the key as a secret, \
         or pass --provider local to review with the local model on purpose.",
        reasons.join(", ")
    );
    Some(exit::CONFIG)
}

/// Runs the review; returns the exit code.
pub async fn run(args: ReviewArgs, workspace: Workspace, store: Arc<dyn RunStore>) -> u8 {
    let post_to = match super::post::target(args.post, args.pr) {
        Ok(target) => target,
        Err(code) => return code,
    };
    let baseline = match &args.baseline {
        Some(spec) => match load_baseline(spec, store.as_ref()).await {
            Ok(baseline) => Some(baseline),
            Err((code, message)) => {
                eprintln!("error: {message}");
                return code;
            }
        },
        None => None,
    };
    let request = ReviewRequest {
        repository: args.repo.clone().unwrap_or_else(|| PathBuf::from(".")),
        base: args.base.clone(),
        conclave: args.conclave.clone().map_or(ConclaveChoice::Default, ConclaveChoice::PathOrId),
        provider: args.provider.clone(),
        model: args.model.clone(),
        // In CI a missing key is a failure, never a review by the local model: a pull
        // request from a fork has no secrets, and must not pass a gate on the tiny
        // default model's empty review. `--provider local` still chooses it on purpose.
        fallback: !args.no_fallback && !in_ci(),
        allow_paths: workspace.allow_paths.iter().chain(&args.allow_paths).cloned().collect(),
        max_diff_bytes: args.max_diff_bytes.unwrap_or(workspace.max_diff_bytes),
    };
    let review = match pipeline::prepare(&request, workspace.catalog(), &workspace.providers).await {
        Ok(review) => review,
        Err(e) => return explain_review_error(e),
    };
    if let Some(code) = refuse_in_ci(&args, &review, &workspace) {
        return code;
    }
    warn(&review.conclave);
    for notice in &review.notices {
        eprintln!("{notice}");
    }
    let engine =
        Engine::new(workspace.providers.clone(), store.clone(), engine_config(usize::from(args.max_concurrency)));
    eprintln!("{}", review.describe());

    let mut worst = exit::OK;
    let mut tally = Tally::default();
    for round in 1..=args.repeat.max(1) {
        let outcome = match follow(review.conclave.conclave(), pipeline::start(&engine, &review).await).await {
            Ok(o) => o,
            Err(code) => return code,
        };
        announce(&outcome);
        let mut report =
            match pipeline::finish_against(store.as_ref(), &outcome.run_id, baseline.as_ref(), &review.notices).await {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("error: {e}");
                    return exit::OTHER;
                }
            };
        tally.add(round, args.repeat, &report);
        let code = deliver(&args, &mut report, outcome.status).max(exit_code(&outcome));
        worst = worst.max(code);
        if round == args.repeat.max(1) {
            let posted = super::post::publish(post_to.as_ref(), &report, outcome.status, &request.repository).await;
            worst = worst.max(posted);
        }
    }
    if args.repeat > 1 {
        tally.print_total();
    }
    worst
}

/// The baseline `spec` names: a report file when one exists at that path, else a
/// stored run's JSON report.
async fn load_baseline(spec: &str, store: &dyn RunStore) -> Result<Baseline, (u8, String)> {
    let bad = |message: String| (exit::CONFIG, format!("--baseline: {message}"));
    if Path::new(spec).is_file() {
        let text = std::fs::read_to_string(spec).map_err(|e| bad(format!("cannot read {spec}: {e}")))?;
        return Baseline::parse(spec, &text).map_err(bad);
    }
    let id = resolve_id(store, spec)
        .await
        .map_err(|(code, message)| (code, format!("--baseline `{spec}` is not a file, and {message}")))?;
    match store.get_report(&id, "json").await {
        Ok(Some(text)) => Baseline::parse(&format!("run {id}"), &text).map_err(bad),
        Ok(None) => Err(bad(format!("run {id} has no review report: give a review run or a report file"))),
        Err(e) => Err((exit::OTHER, format!("--baseline: {e}"))),
    }
}

/// Prints why a review could not be prepared; the exit code (0 for an empty change).
fn explain_review_error(error: ReviewError) -> u8 {
    match error {
        ReviewError::NothingToReview { .. } => {
            eprintln!("{error}");
            exit::OK
        }
        ReviewError::Conclave(e) => explain_load_error(e),
        ReviewError::Start(e) => {
            eprintln!("error: {e}");
            start_error_code(&e)
        }
        ReviewError::Store(e) => {
            eprintln!("error: {e}");
            exit::OTHER
        }
        e @ (ReviewError::Change(_)
        | ReviewError::UnknownProvider { .. }
        | ReviewError::Repository { .. }
        | ReviewError::Dismissals(_)) => {
            eprintln!("error: {e}");
            exit::CONFIG
        }
    }
}

/// Writes or prints the report, then applies the gates.
fn deliver(args: &ReviewArgs, report: &mut ReviewReport, status: RunStatus) -> u8 {
    report.min_support = args.min_support;
    let text = report.render(args.format);
    match &args.output_file {
        Some(path) if status == RunStatus::Succeeded => {
            if let Err(e) = std::fs::write(path, &text) {
                eprintln!("error: cannot write {}: {e}", path.display());
                return exit::OTHER;
            }
            eprintln!("report written to {}", path.display());
        }
        Some(path) => eprintln!(
            "report not written to {}: the run did not succeed (`conclave runs show {}`)",
            path.display(),
            report.run_id
        ),
        None => print!("{text}"),
    }
    let blockers = report.gated_totals().get(&Severity::Blocker).copied().unwrap_or(0);
    let unanchored = report.totals().get(&Severity::Blocker).copied().unwrap_or(0) - blockers;
    if args.fail_on.contains(&Gate::Blocker) && unanchored > 0 {
        eprintln!(
            "gate: {unanchored} blocker(s) not counted: unanchored (their quoted code is not in the file), dismissed, \
             unchanged since the baseline, or below --min-support"
        );
    }
    let contradictions = report.contradictions().count();
    let mut code = exit::OK;
    if args.fail_on.contains(&Gate::Blocker) && blockers > 0 {
        eprintln!("gate: {blockers} blocker(s) found (--fail-on blocker)");
        code = exit::GATE;
    }
    if args.fail_on.contains(&Gate::Contradiction) && contradictions > 0 {
        eprintln!("gate: {contradictions} contradiction(s) between reviewers (--fail-on contradiction)");
        code = exit::GATE;
    }
    if !args.fail_on.is_empty() && !report.degraded.is_empty() && !args.allow_degraded {
        eprintln!(
            "gate: the review is degraded ({}); pass --allow-degraded to gate on its findings alone",
            report.degraded.join("; ")
        );
        code = code.max(exit::DEGRADED);
    }
    let disagreements = report.disagreements().count();
    if args.fail_on.contains(&Gate::Disagreement) && disagreements > 0 {
        eprintln!("gate: {disagreements} disagreement(s) between reviewers (--fail-on disagreement)");
        code = exit::GATE;
    }
    code
}

/// Per-run and total figures for `--repeat`.
#[derive(Debug, Default)]
struct Tally {
    runs: u32,
    mismatches: usize,
    contradictions: usize,
    findings: usize,
}

impl Tally {
    fn add(&mut self, round: u32, of: u32, report: &ReviewReport) {
        let mismatches: usize = report.mismatches.iter().map(|(_, m)| m.len()).sum();
        let contradictions = report.contradictions().count();
        let findings = report.findings.len();
        if of > 1 {
            eprintln!(
                "run {round}/{of} ({}): {} count mismatch(es), {contradictions} contradiction(s), {findings} finding(s)",
                report.status.as_str(),
                mismatches
            );
        }
        self.runs += 1;
        self.mismatches += mismatches;
        self.contradictions += contradictions;
        self.findings += findings;
    }

    fn print_total(&self) {
        eprintln!(
            "total over {} runs: {} count mismatch(es), {} contradiction(s), {} finding(s)",
            self.runs, self.mismatches, self.contradictions, self.findings
        );
    }
}
