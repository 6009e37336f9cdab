//! `conclave review [REPO]`: reviews a git change with the default review conclave
//! (or another), writes the report, and applies CI gates.

use clap::{Args, ValueEnum};
use conclave_core::{RunQueue, RunStore};
use conclave_engine::Engine;
use conclave_review::baseline::Baseline;
use conclave_review::diff::ChangeError;
use conclave_review::incremental::{self, Since};
use conclave_review::pipeline::{self, AnalyzerSelection, ReviewError, ReviewRequest};
use conclave_review::report::RepeatSummary;
use conclave_review::{ConclaveChoice, ReportFormat, ReviewReport};
use conclave_shared::{RunStatus, Severity, Trust};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::concurrency::Concurrency;
use super::run::{announce, exit_code, explain_load_error, follow, start_error_code, warn};
use super::runs::resolve_id;
use super::{exit, format_parser};
use crate::workspace::{Workspace, engine_config_on};

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
    /// Run the same review N times and report, in one report (the last run's), the
    /// rate of runs with count mismatches and with contradictions, and how many
    /// findings came back in every run.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: u32,
    /// Run each reviewer K times, concurrently within the limits, and merge their
    /// findings by fingerprint; each finding's stability is how many of the K raised it.
    #[arg(long, value_name = "K", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=16))]
    pub samples: u32,
    /// Run cached nodes again, and keep nothing they answer: the cache is ignored.
    #[arg(long)]
    pub no_cache: bool,
    /// Count in gates only sampled findings at least this stable: a rate such as 0.5,
    /// or a fraction such as 2/3.
    #[arg(long, value_name = "RATE", value_parser = parse_rate, default_value = "0")]
    pub min_stability: f64,
    /// How many nodes run at once.
    #[command(flatten)]
    pub concurrency: Concurrency,
    /// Whether commands may run unconfined where the kernel cannot confine them.
    #[command(flatten)]
    pub sandboxing: super::sandbox::Sandboxing,
    /// Compare with an earlier review: a JSON or SARIF report file, a stored run's id
    /// (a unique prefix is enough), a branch (its latest stored review), or `auto`
    /// (the latest stored review of the --base branch). Findings are marked new,
    /// unchanged or updated, gone ones absent, and gates count new and updated ones.
    #[arg(long, value_name = "REF|RUN_ID|FILE|auto", conflicts_with = "since")]
    pub baseline: Option<String>,
    /// Review only what is new since an earlier review of this branch: `auto` (the
    /// commit its latest stored review reviewed) or a commit. Earlier findings on code
    /// the new commits did not touch are carried forward, unchanged; a branch without
    /// a stored review, or whose reviewed commit is no longer in its history (a
    /// force-push), is reviewed in full, saying why. With --post this is the default
    /// when the store has a review of the branch.
    #[arg(long, value_name = "auto|COMMIT", conflicts_with = "full")]
    pub since: Option<String>,
    /// Review the whole change, even with --post and a stored review of the branch.
    #[arg(long)]
    pub full: bool,
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
    /// The analyzer lanes to run, by name (comma-separated, those off by default
    /// included), or `none`; default: every lane on by default that is installed and
    /// reads a changed file (`conclave analyzers` lists them).
    #[arg(long, value_name = "NAME,...|none")]
    pub analyzers: Option<String>,
    /// Give the reviewers this rules file too (repeatable), after the repository's
    /// own (`AGENTS.md`, `CLAUDE.md`, `REVIEW.md`, `.conclave/rules/*.md`); a `paths:`
    /// front matter limits it to the changes it matches. Read even when the
    /// conclave's `rules: false` turns the repository's off.
    #[arg(long = "rules", value_name = "PATH")]
    pub rules: Vec<PathBuf>,
    /// Most bytes of diff one call of a reviewer takes (default 1 MiB, or
    /// CONCLAVE_MAX_DIFF_BYTES); a larger change is split into parts, each reviewed
    /// on its own (a reviewer's model with a smaller context makes parts smaller).
    #[arg(long, value_name = "BYTES")]
    pub max_diff_bytes: Option<usize>,
    /// Most parts a large change is split into (each is a call of every specialist);
    /// beyond, the smallest files are reviewed and the report lists the rest.
    #[arg(long, value_name = "N", default_value_t = conclave_review::diff::DEFAULT_MAX_PARTS as u64,
          value_parser = clap::value_parser!(u64).range(1..=64))]
    pub max_parts: u64,
    /// Publish the review on its pull request (GitHub) or merge request (GitLab),
    /// updating Conclave's earlier comments instead of duplicating them; where and
    /// with which token come from the CI environment (see docs/ci.md).
    #[arg(long, value_enum, value_name = "FORGE")]
    pub post: Option<crate::post::Forge>,
    /// The repository's key for the dismissals kept in the run store (those made by
    /// replying `/conclave dismiss` on a pull request): GitHub's `owner/name`,
    /// GitLab's project path. With --post the forge's is used; without, stored
    /// dismissals apply only when this names the repository.
    #[arg(long, value_name = "KEY", env = "CONCLAVE_REPOSITORY_KEY", value_parser = repository_key_arg)]
    pub repository_key: Option<String>,
    /// Let the change configure its own review: read the conclave, its schemas, the
    /// rules files and the dismissals from the change (the working tree) instead of
    /// the base side. Only for a change you trust, such as your own branch; a review
    /// with --base otherwise never applies the change's edits to them.
    #[arg(long)]
    pub trust_head: bool,
    /// With --post: the pull (merge) request number, instead of the CI environment's.
    #[arg(long, value_name = "N", requires = "post")]
    pub pr: Option<u64>,
    /// Record provider calls, or replay them.
    #[command(flatten)]
    pub recordings: super::recordings::Recordings,
    /// The review's budget.
    #[command(flatten)]
    pub budget: super::budget::BudgetArgs,
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
    let missing = conclave_review::fallback::unconfigured_agents(&review.conclave, &workspace.providers);
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

/// Whether the run store `db` is a file the change under review brought (git tracks it
/// in the repository), for a review that reads its configuration from the base: it
/// holds earlier reviews, dismissals and cached answers, so a change could bring its
/// own. Says so and what to do. A PostgreSQL store, a file outside the repository or
/// one git does not track (made by the caller, as the default `.conclave/conclave.db`
/// is) is the caller's own.
pub async fn store_from_the_change(args: &ReviewArgs, db: &Path) -> bool {
    if args.trust_head || (args.base.is_none() && args.since.is_none()) || crate::workspace::postgres_url(db).is_some()
    {
        return false;
    }
    let repo = args.repo.clone().unwrap_or_else(|| PathBuf::from("."));
    let path = db.to_path_buf();
    let tracked =
        super::offload::blocking(move || conclave_review::configuration::tracked_in_repository(&repo, &path)).await;
    if tracked {
        eprintln!(
            "error: the run store {} is a file of the repository under review (git tracks it), so the change could \
             bring its own stored reviews, dismissals and cached answers. Keep the run store outside the \
             repository (--db, CONCLAVE_DB), or pass --trust-head for a change you trust.",
            db.display()
        );
    }
    tracked
}

/// Whether `--post` was given without `--base` (and the head is not trusted), said
/// so: a pull request is reviewed against the branch it merges into, whose side
/// configures the review; without a base, the change would configure its own.
fn posting_without_a_base(args: &ReviewArgs) -> bool {
    let refused = args.post.is_some() && args.base.is_none() && !args.trust_head;
    if refused {
        eprintln!(
            "error: --post reviews a pull request against the branch it merges into: give it with --base (such as \
             origin/main), so that the review reads its configuration from that side, not from the change"
        );
    }
    refused
}

/// Runs the review; returns the exit code.
pub async fn run(args: ReviewArgs, workspace: Workspace, queue: Arc<dyn RunQueue>) -> u8 {
    let mut config = engine_config_on(args.concurrency.nodes(), &queue).await;
    args.sandboxing.apply(&mut config);
    let store: Arc<dyn RunStore> = queue;
    if posting_without_a_base(&args) {
        return exit::CONFIG;
    }
    let post_to = match super::post::target(args.post, args.pr).await {
        Ok(target) => target,
        Err(code) => return code,
    };
    // Dismissals replied on the request are stored first, so this review applies them.
    let replies = super::post::gather_replies(post_to.as_ref(), store.as_ref()).await;
    let mut request = review_request(&args, &workspace);
    let earlier = match resolve_since(&args, &mut request, store.as_ref(), post_to.is_some()).await {
        Ok(earlier) => earlier,
        Err(code) => return code,
    };
    let mut review = match pipeline::prepare(&request, workspace.catalog(), &workspace.providers).await {
        Ok(review) => review,
        Err(e) => return explain_review_error(e),
    };
    if let Some(code) = refuse_in_ci(&args, &review, &workspace) {
        return code;
    }
    review.repository_key = repository_key(&args, post_to.as_ref());
    // Links may point only into the repository posted to (else `origin`'s pages).
    if let Some(url) = post_to.as_ref().and_then(crate::post::Target::web_url) {
        review.repository_url = Some(url.to_string());
    }
    let baseline = match baseline_for(&args, earlier, &review.change.root, store.as_ref()).await {
        Ok(baseline) => baseline,
        Err(code) => return code,
    };
    warn(&review.conclave);
    if let Some(fallback) = &review.fallback {
        eprintln!("note: {fallback}; pass --no-fallback to fail instead");
    }
    let engine = Engine::new(workspace.providers.clone(), store.clone(), config);
    eprintln!("{}", review.describe());

    let mut worst = exit::OK;
    let mut reports = Vec::new();
    for round in 1..=args.repeat {
        let outcome = match follow(review.conclave.conclave(), pipeline::start(&engine, &review).await).await {
            Ok(o) => o,
            Err(code) => return code,
        };
        announce(&outcome);
        // Parked for a decision: reported and posted once it goes on (`conclave approve`).
        if outcome.status == RunStatus::Waiting {
            return exit::WAITING;
        }
        let report =
            match pipeline::finish_against(store.as_ref(), &outcome.run_id, baseline.as_ref(), &review.notices).await {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("error: {e}");
                    return exit::OTHER;
                }
            };
        if args.repeat > 1 {
            eprintln!("run {round}/{} ({}): {}", args.repeat, report.status.as_str(), round_summary(&report));
        }
        worst = worst.max(exit_code(&outcome));
        reports.push((report, outcome.status));
    }
    let repeat =
        (args.repeat > 1).then(|| RepeatSummary::of(&reports.iter().map(|(r, _)| r.clone()).collect::<Vec<_>>()));
    let Some((mut report, status)) = reports.pop() else { return worst };
    report.repeat = repeat;
    let code = worst.max(deliver(&args, &mut report, status).await);
    let posted = super::post::publish_answering(post_to.as_ref(), &report, status, &request.repository, &replies).await;
    code.max(posted)
}

/// What the review is compared with: the earlier review an incremental one carries
/// from, else `--baseline`'s; the exit code when `--baseline` cannot be read.
async fn baseline_for(
    args: &ReviewArgs,
    earlier: Option<Baseline>,
    root: &Path,
    store: &dyn RunStore,
) -> Result<Option<Baseline>, u8> {
    match &args.baseline {
        None => Ok(earlier),
        Some(spec) => load_baseline(spec, args.base.as_deref(), root, store).await.map_err(|(code, message)| {
            eprintln!("error: {message}");
            code
        }),
    }
}

/// With `--since` (or `--post`'s default), the scope of an incremental review set
/// on `request` and the earlier review to carry findings from; the exit code when
/// it cannot be resolved.
async fn resolve_since(
    args: &ReviewArgs,
    request: &mut ReviewRequest,
    store: &dyn RunStore,
    posting: bool,
) -> Result<Option<Baseline>, u8> {
    let Some(since) = since(args, posting) else { return Ok(None) };
    match incremental::resolve(store, &request.repository, args.base.as_deref(), &since).await {
        Ok(resolution) => {
            eprintln!("{}", resolution.scope.describe());
            request.scope = Some(resolution.scope);
            Ok(resolution.earlier)
        }
        // The store failing is not the user's to fix with the flag.
        Err(e @ incremental::ScopeError::Store(_)) => {
            eprintln!("error: {e}");
            Err(exit::OTHER)
        }
        Err(e) => {
            eprintln!("error: {e} (--since)");
            Err(exit::CONFIG)
        }
    }
}

/// The repository key whose stored dismissals the review applies: with `--post`,
/// the forge's (the key its replies are stored under), else `--repository-key`.
fn repository_key(args: &ReviewArgs, post_to: Option<&crate::post::Target>) -> Option<String> {
    post_to.map(|target| target.repository_key().to_string()).or_else(|| args.repository_key.clone())
}

/// What to review since, if only what is new was asked for: `--since`, or with
/// `--post` (and neither `--full` nor `--baseline`) the branch's last stored review.
fn since(args: &ReviewArgs, posting: bool) -> Option<Since> {
    match (&args.since, args.full) {
        (Some(since), _) => Some(Since::parse(since)),
        (None, false) if posting && args.baseline.is_none() => Some(Since::Auto),
        _ => None,
    }
}

/// What `conclave review` asks the review pipeline for.
fn review_request(args: &ReviewArgs, workspace: &Workspace) -> ReviewRequest {
    ReviewRequest {
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
        max_parts: args.max_parts as usize,
        samples: args.samples,
        no_cache: args.no_cache,
        budget: args.budget.budget(),
        analyzers: args.analyzers.as_deref().map_or_else(Default::default, AnalyzerSelection::parse),
        scope: None,
        rules: args.rules.clone(),
        trust: if args.trust_head { Trust::Head } else { Trust::Base },
        allow_unsandboxed: args.sandboxing.allow_unsandboxed,
    }
}

/// One line on one run of a repeated review.
fn round_summary(report: &ReviewReport) -> String {
    let mismatches: usize = report.mismatches.iter().map(|(_, m)| m.len()).sum();
    format!(
        "{mismatches} count mismatch(es), {} contradiction(s), {} finding(s)",
        report.contradictions().count(),
        report.findings.len()
    )
}

/// A repository key, checked as every review checks one.
fn repository_key_arg(text: &str) -> Result<String, String> {
    conclave_review::dismissals::check_repository_key(text).map(|()| text.to_string())
}

/// A rate from 0 to 1, written as a decimal (`0.5`) or a fraction (`2/3`).
fn parse_rate(text: &str) -> Result<f64, String> {
    let bad = || format!("`{text}` is not a rate: give a number from 0 to 1 (such as 0.5) or a fraction (such as 2/3)");
    let rate = match text.split_once('/') {
        Some((k, n)) => {
            let (k, n): (f64, f64) = (k.trim().parse().map_err(|_| bad())?, n.trim().parse().map_err(|_| bad())?);
            if n == 0.0 { return Err(bad()) } else { k / n }
        }
        None => text.trim().parse().map_err(|_| bad())?,
    };
    if (0.0..=1.0).contains(&rate) { Ok(rate) } else { Err(bad()) }
}

/// The baseline `spec` names: a report file when one exists at that path; with
/// `auto`, the latest stored review of the base branch (none yet: no baseline); a
/// stored run (a unique prefix of its id); else the latest stored review of the
/// branch `spec` in this repository.
async fn load_baseline(
    spec: &str,
    base: Option<&str>,
    root: &Path,
    store: &dyn RunStore,
) -> Result<Option<Baseline>, (u8, String)> {
    let bad = |message: String| (exit::CONFIG, format!("--baseline: {message}"));
    if tokio::fs::metadata(spec).await.is_ok_and(|meta| meta.is_file()) {
        let text = tokio::fs::read_to_string(spec).await.map_err(|e| bad(format!("cannot read {spec}: {e}")))?;
        return Baseline::parse(spec, &text).map(Some).map_err(bad);
    }
    let latest = |branch: String| async move {
        pipeline::latest_review_of(store, root, &branch).await.map_err(|e| (exit::OTHER, format!("--baseline: {e}")))
    };
    if spec == "auto" {
        let branch = base.ok_or_else(|| {
            bad("`auto` compares with the latest stored review of the base branch: give --base BRANCH".into())
        })?;
        let Some(id) = latest(branch.to_string()).await? else {
            eprintln!("note: no stored review of `{branch}` in {}; reviewing without a baseline", root.display());
            return Ok(None);
        };
        eprintln!("baseline: run {id}, the latest stored review of `{branch}`");
        return stored_report(&id, store).await.map(Some);
    }
    let id = match resolve_id(store, spec).await {
        Ok(id) => id,
        Err((code, message)) if code == exit::CONFIG && message.starts_with("no run") => {
            match latest(spec.to_string()).await? {
                Some(id) => {
                    eprintln!("baseline: run {id}, the latest stored review of `{spec}`");
                    id
                }
                None => {
                    return Err(bad(format!(
                        "`{spec}` is not a file, a stored run, or a branch with a stored review of {}",
                        root.display()
                    )));
                }
            }
        }
        Err((code, message)) => return Err((code, format!("--baseline `{spec}`: {message}"))),
    };
    stored_report(&id, store).await.map(Some)
}

/// A stored review run's JSON report, as a baseline.
async fn stored_report(id: &str, store: &dyn RunStore) -> Result<Baseline, (u8, String)> {
    let bad = |message: String| (exit::CONFIG, format!("--baseline: {message}"));
    match store.get_report(id, "json").await {
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
        | ReviewError::UnknownAnalyzer(_)
        | ReviewError::Dismissals(_)
        | ReviewError::Rules(_)) => {
            eprintln!("error: {e}{}", flag_hint(&e));
            exit::CONFIG
        }
    }
}

/// The flag that changes what `error` complains about, as ` (--flag)`, or nothing.
fn flag_hint(error: &ReviewError) -> &'static str {
    match error {
        ReviewError::Change(ChangeError::InvalidBase { .. }) => " (--base)",
        ReviewError::Change(ChangeError::TooLarge { .. }) => " (--max-diff-bytes)",
        ReviewError::UnknownProvider { .. } => " (--provider)",
        ReviewError::UnknownAnalyzer(_) => " (--analyzers)",
        ReviewError::Rules(_) => " (--rules)",
        _ => "",
    }
}

/// Writes or prints the report, then applies the gates.
async fn deliver(args: &ReviewArgs, report: &mut ReviewReport, status: RunStatus) -> u8 {
    report.min_support = args.min_support;
    report.min_stability = args.min_stability;
    let text = report.render(args.format);
    match &args.output_file {
        Some(path) if status == RunStatus::Succeeded => {
            if let Err(e) = tokio::fs::write(path, &text).await {
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
             unchanged since the baseline, or below --min-support or --min-stability"
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
