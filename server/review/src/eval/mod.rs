//! `conclave eval`: how good a conclave's reviews are, measured on labelled changes.
//!
//! [`run_eval`] reads a dataset (`dataset.rs`), makes each case's repository real in
//! a temporary directory, reviews `base...head` with the conclave through the one
//! review pipeline (so each run is kept in the store like any review), then scores
//! the findings against the golden issues (`matching.rs`, `score.rs`, with bootstrap
//! intervals from `metrics.rs`) into an [`EvalSummary`] (`summary.rs`), which
//! `markdown.rs` and `html.rs` render and `compare.rs` compares with another.
//! `judge.rs` asks a judge conclave about candidate pairs instead of the wording rule.

pub mod compare;
pub mod dataset;
pub mod html;
pub mod judge;
pub mod markdown;
pub mod matching;
pub mod metrics;
pub mod score;
pub mod summary;

use conclave_core::{ProviderRegistry, RunStore};
use conclave_engine::{Engine, StartError};
use conclave_shared::{ErrorKind, RunStatus};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::Semaphore;

use crate::pipeline::{self, Catalog, ConclaveChoice, ReviewError, ReviewRequest};
use crate::same_issue::SameIssue;
use dataset::{Checkout, Dataset, DatasetError, check_out};
use judge::Judge;
use score::{Reviewed, Scoring};
pub use summary::EvalSummary;
use summary::MatchingSettings;

/// What to evaluate, and how.
#[derive(Debug, Clone)]
pub struct EvalRequest {
    /// The dataset's directory.
    pub dataset: PathBuf,
    /// The conclave that reviews each case.
    pub conclave: ConclaveChoice,
    /// Run every agent on this provider.
    pub provider: Option<String>,
    /// With `provider`: the model.
    pub model: Option<String>,
    /// Runs of each reviewer (`--samples`).
    pub samples: u32,
    /// The support a result finding needs to count.
    pub min_support: u32,
    /// Most lines between a finding and the golden issue it matches.
    pub window: u64,
    /// A conclave that judges candidate pairs instead of the wording rule.
    pub judge: Option<ConclaveChoice>,
    /// Cases reviewed at once.
    pub jobs: usize,
    /// The most diff text sent to providers.
    pub max_diff_bytes: usize,
    /// Ignore the cache.
    pub no_cache: bool,
    /// The analyzer lanes run on each case (none unless named: what is installed
    /// differs between machines, and an eval must give the same figures everywhere).
    pub analyzers: pipeline::AnalyzerSelection,
}

/// Why an eval stopped.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// The dataset or a repository of it is unusable.
    #[error(transparent)]
    Dataset(#[from] DatasetError),
    /// A review could not be prepared (the conclave, the provider, the change).
    #[error("case `{case}`: {error}")]
    Review {
        /// The case.
        case: String,
        /// Why.
        error: ReviewError,
    },
    /// A run could not start.
    #[error("case `{case}`: {error}")]
    Start {
        /// The case.
        case: String,
        /// Why.
        error: StartError,
    },
    /// A run failed for a reason every other case would share (a missing key, a
    /// missing recording): the eval stops instead of scoring empty reviews.
    #[error("case `{case}`: {message}")]
    Config {
        /// The case.
        case: String,
        /// What failed.
        message: String,
    },
    /// The judge conclave cannot judge.
    #[error("{0}")]
    Judge(String),
    /// The temporary directory or a task failed.
    #[error("{0}")]
    Internal(String),
}

/// Where conclaves come from and how runs are made.
#[derive(Debug, Clone, Copy)]
pub struct EvalContext<'a> {
    /// The catalog.
    pub catalog: Catalog<'a>,
    /// The providers.
    pub providers: &'a ProviderRegistry,
    /// The engine runs are started on.
    pub engine: &'a Engine,
    /// The store the runs are kept in.
    pub store: &'a Arc<dyn RunStore>,
}

/// Runs the eval; `progress` is told about each case as it ends.
pub async fn run_eval(
    request: &EvalRequest,
    ctx: EvalContext<'_>,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<EvalSummary, EvalError> {
    let dir = request.dataset.clone();
    let dataset = tokio::task::spawn_blocking(move || Dataset::load(&dir)).await.map_err(internal)??;
    let scratch = tempfile::Builder::new().prefix("conclave-eval-").tempdir().map_err(internal)?;
    let clock = std::time::Instant::now();
    let checkouts = check_out_all(&dataset, scratch.path().to_path_buf(), request.jobs).await?;
    progress(&format!("set up {} repositories in {:.2} s", checkouts.len(), clock.elapsed().as_secs_f64()));
    let clock = std::time::Instant::now();
    let judge = match request.judge.clone() {
        // Loading reads the catalog: a blocking thread's work.
        Some(choice) => {
            let (dir, context) = (ctx.catalog.dir.to_path_buf(), ctx.catalog.context.clone());
            let loaded =
                tokio::task::spawn_blocking(move || Judge::load(&choice, Catalog { dir: &dir, context: &context }))
                    .await
                    .map_err(internal)?;
            Some(loaded.map_err(EvalError::Judge)?)
        }
        None => None,
    };
    let first = prepare_case(request, &checkouts[0], &dataset.cases[0].id, ctx).await?;
    let nodes = first.conclave.findings_agents();
    let conclave_id = first.conclave.conclave().id.clone();
    let reviewed = review_all(request, &dataset, &checkouts, ctx, progress).await?;
    let rule = SameIssue { window: request.window, ..SameIssue::default() };
    let verdicts = match &judge {
        Some(judge) => judge.judge_all(&reviewed, request.window, ctx.engine).await.map_err(EvalError::Judge)?,
        None => HashMap::new(),
    };
    let matcher = |case: &str, findings: &[conclave_shared::Finding], issues: &[conclave_shared::Finding]| match &judge
    {
        Some(_) => judge::match_by_verdicts(case, findings, issues, request.window, &verdicts),
        None => matching::match_by_rule(findings, issues, &rule),
    };
    let scoring = Scoring {
        dataset: request.dataset.display().to_string(),
        conclave: conclave_id,
        nodes,
        min_support: request.min_support,
        settings: MatchingSettings {
            window: request.window,
            threshold: judge.is_none().then_some(rule.threshold),
            judge: judge.as_ref().map(|j| j.id.clone()),
            resamples: metrics::RESAMPLES,
            seed: metrics::SEED,
        },
        matcher: &matcher,
    };
    let summary = score::score(&reviewed, &scoring);
    progress(&format!("reviewed and scored {} case(s) in {:.2} s", reviewed.len(), clock.elapsed().as_secs_f64()));
    drop(scratch);
    Ok(summary)
}

fn internal(e: impl std::fmt::Display) -> EvalError {
    EvalError::Internal(e.to_string())
}

/// Checks every case out, `jobs` at a time (git is most of the time), in the
/// dataset's order.
async fn check_out_all(dataset: &Dataset, into: PathBuf, jobs: usize) -> Result<Vec<Checkout>, EvalError> {
    let dataset = Arc::new(dataset.clone());
    let into = Arc::new(into);
    let permits = Arc::new(Semaphore::new(jobs.max(1)));
    let tasks = (0..dataset.cases.len()).map(|k| {
        let (dataset, into, permits) = (dataset.clone(), into.clone(), permits.clone());
        async move {
            let _permit = permits.acquire_owned().await.map_err(internal)?;
            tokio::task::spawn_blocking(move || check_out(&dataset.dir, &dataset.cases[k], &into))
                .await
                .map_err(internal)?
                .map_err(EvalError::Dataset)
        }
    });
    futures::future::join_all(tasks).await.into_iter().collect()
}

async fn prepare_case(
    request: &EvalRequest,
    checkout: &Checkout,
    case: &str,
    ctx: EvalContext<'_>,
) -> Result<pipeline::PreparedReview, EvalError> {
    let review = ReviewRequest {
        repository: checkout.root.clone(),
        base: Some(checkout.base.clone()),
        conclave: request.conclave.clone(),
        provider: request.provider.clone(),
        model: request.model.clone(),
        // An eval measures the conclave as written: never a quiet switch of model.
        fallback: false,
        allow_paths: Vec::new(),
        max_diff_bytes: request.max_diff_bytes,
        max_parts: crate::diff::DEFAULT_MAX_PARTS,
        samples: request.samples,
        budget: None,
        no_cache: request.no_cache,
        analyzers: request.analyzers.clone(),
        scope: None,
        rules: Vec::new(),
        // A case's change is untrusted like any other: its configuration is its base's.
        trust: Default::default(),
        allow_unsandboxed: ctx.engine.allows_unsandboxed(),
    };
    pipeline::prepare(&review, ctx.catalog, ctx.providers)
        .await
        .map_err(|error| EvalError::Review { case: case.to_string(), error })
}

/// Reviews every case, at most `jobs` at once, in the dataset's order.
async fn review_all(
    request: &EvalRequest,
    dataset: &Dataset,
    checkouts: &[Checkout],
    ctx: EvalContext<'_>,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<Vec<Reviewed>, EvalError> {
    let permits = Semaphore::new(request.jobs.max(1));
    let reviews = dataset.cases.iter().zip(checkouts).map(|(case, checkout)| {
        let permits = &permits;
        async move {
            let _permit = permits.acquire().await.map_err(internal)?;
            let reviewed = review_case(request, case, checkout, ctx).await?;
            progress(&format!("{}: {}", case.id, reviewed.status));
            Ok::<Reviewed, EvalError>(reviewed)
        }
    });
    futures::future::join_all(reviews).await.into_iter().collect()
}

async fn review_case(
    request: &EvalRequest,
    case: &dataset::Case,
    checkout: &Checkout,
    ctx: EvalContext<'_>,
) -> Result<Reviewed, EvalError> {
    let prepared = prepare_case(request, checkout, &case.id, ctx).await?;
    let handle = pipeline::start(ctx.engine, &prepared)
        .await
        .map_err(|error| EvalError::Start { case: case.id.clone(), error })?;
    let outcome = handle.wait().await;
    if outcome.error_kind == Some(ErrorKind::Config) {
        let message = outcome.error.unwrap_or_else(|| "a provider is not configured".into());
        return Err(EvalError::Config { case: case.id.clone(), message });
    }
    let report = match outcome.status {
        RunStatus::Succeeded | RunStatus::Failed => {
            pipeline::finish_against(ctx.store.as_ref(), &outcome.run_id, None, &prepared.notices).await.ok()
        }
        _ => None,
    };
    Ok(Reviewed {
        case: case.clone(),
        run_id: Some(outcome.run_id),
        status: outcome.status.as_str().to_string(),
        error: outcome.error,
        report,
    })
}
