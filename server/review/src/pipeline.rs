//! The one review pipeline: prepare → start → finish. `conclave review` and
//! `POST /api/runs` both call it and nothing else, so a review started from the
//! editor and one started in a terminal make the same choices: the same conclave,
//! the same `--provider` switch and local-model fallback, the same tools, the same
//! narrowing of findings to the change, and the same stored reports.
//!
//! - [`prepare`] reads the change from git, picks and checks the conclave, switches
//!   providers, decides its analyzer lanes (`analyzers.rs`), and builds the run's
//!   tools and output policy;
//! - [`start`] starts the run on an engine ([`start_with`] from a node of an earlier
//!   review run, whose change [`prepare_change`] prepares again without git);
//! - [`finish`] builds the report of the finished run and stores it in every format.

use conclave_catalog::{CheckedConclave, LoadError, check_text, load_by_id, load_conclave};
use conclave_core::{ProviderRegistry, RunStore, StoreError};
use conclave_engine::{Commands, Engine, Parts, Reuse, RunHandle, RunOptions, Samples, StartError};
use conclave_shared::Trust;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use crate::analyzers::{AnalyzerLane, AnalyzerSelection, UnknownAnalyzer};
use crate::analyzers::{apply_lanes, install_rules, locate_program, plan_lanes, provide_rules};
use crate::anchor::anchor_findings;
use crate::baseline::Baseline;
pub use crate::choice::{Catalog, ConclaveChoice};
use crate::configuration::dismissals::ReviewDismissals;
use crate::configuration::findings::edit_findings;
use crate::configuration::{CONFIGURATION_INPUT, Configuration, ConfigurationSource, configure};
use crate::diff::{Change, ChangeError, collect_change, collect_change_since};
use crate::dismissals::{DismissalError, Dismissals};
use crate::fallback::{Fallback, fallback_to_local};
pub use crate::incremental::latest_review_of;
use crate::incremental::{Scope, carry_forward};
use crate::policy::ReviewPolicy;
use crate::report::{ReportFormat, ReviewReport, build_report, carry_dropped};
use crate::repository_anchors::{anchor_in_repository, quote_cited_lines};
use crate::reviewers::{agent_ids, sampled_agents};
use crate::rules::{RepositoryRules, RulesError};
use crate::samples::carry_stability;
use crate::support::count_support;
use crate::tools::RepoTools;
use crate::window::{impact_settings, part_bytes};

/// The default review conclave, built into the binary for workspaces without one.
pub const BUILTIN_REVIEW: &str = include_str!("../../../conclaves/light-code-review.conclave.json");
/// Its id, looked up in the workspace first.
pub const DEFAULT_REVIEW_ID: &str = "light-code-review";
/// The review conclaves built into the binary, by id: the default, and the panel
/// (one lane on two models, so support comes from independent models). A workspace
/// file of the same id takes precedence.
pub const BUILTIN_REVIEWS: [(&str, &str); 3] = [
    (DEFAULT_REVIEW_ID, BUILTIN_REVIEW),
    ("review-panel", include_str!("../../../conclaves/review-panel.conclave.json")),
    ("verified-review", include_str!("../../../conclaves/verified-review.conclave.json")),
];

/// What to review, and how.
#[derive(Debug, Clone)]
pub struct ReviewRequest {
    /// The repository (or a directory inside it).
    pub repository: PathBuf,
    /// Review `BASE...HEAD`; without it, the working tree against HEAD.
    pub base: Option<String>,
    /// Which conclave reviews the change.
    pub conclave: ConclaveChoice,
    /// Run every agent on this provider.
    pub provider: Option<String>,
    /// With `provider`: the model for every agent (default: the provider's default).
    pub model: Option<String>,
    /// Move agents whose provider is not configured onto the local model.
    pub fallback: bool,
    /// Globs of files the tools may read although `.git/` or `.gitignore` hide them.
    pub allow_paths: Vec<String>,
    /// The most diff text one call of a reviewer takes, in bytes; a larger change is
    /// split into parts (a reviewer's model may make them smaller still).
    pub max_diff_bytes: usize,
    /// The most parts a change is split into (each specialist reviews every part);
    /// beyond, the largest files are not reviewed.
    pub max_parts: usize,
    /// Runs of each reviewer, merged by fingerprint (1: once).
    pub samples: u32,
    /// Ignore the cache: cached nodes run again and their answers are not stored.
    pub no_cache: bool,
    /// The run's budget besides the conclave's (the tighter holds).
    pub budget: Option<conclave_shared::Budget>,
    /// Which analyzer lanes run.
    pub analyzers: AnalyzerSelection,
    /// What the review covers, when only the commits since an earlier review were
    /// asked for ([`crate::incremental::resolve`] decides it): with an incremental
    /// scope only `since..HEAD` is read.
    pub scope: Option<Scope>,
    /// More rules files for the reviewers, read from these paths as they are (the
    /// command line's; never taken from a request over HTTP), besides the
    /// repository's own (see `rules.rs`).
    pub rules: Vec<PathBuf>,
    /// Which side of the change configures a review with a base (see
    /// `configuration/`): the base's by default; the head's only when the caller
    /// trusts the change.
    pub trust: Trust,
    /// Whether analyzer lanes may run unconfined where the kernel cannot confine
    /// them; otherwise a review with a base leaves them out, saying why.
    pub allow_unsandboxed: bool,
}

/// A review ready to start.
#[derive(Debug, Clone)]
pub struct PreparedReview {
    /// The change.
    pub change: Change,
    /// The conclave as it will run (providers switched where asked or needed).
    pub conclave: CheckedConclave,
    /// The agents moved to the local model because their provider is not configured.
    pub fallback: Option<Fallback>,
    /// What was changed before the start, for the user, in words for any interface:
    /// the fallback's one line.
    pub notices: Vec<String>,
    /// The repository tools agents may call.
    pub tools: Arc<RepoTools>,
    /// How findings are narrowed, normalized, compared and counted.
    pub policy: Arc<ReviewPolicy>,
    /// The reviewers run several times, when the request asked for samples.
    pub samples: Option<Samples>,
    /// The reviewers that review each part, when the change is split into parts.
    pub parts: Option<Parts>,
    /// Whether the run ignores the cache.
    pub no_cache: bool,
    /// The run's budget besides the conclave's (the tighter holds).
    pub budget: Option<conclave_shared::Budget>,
    /// The conclave's analyzer lanes, which run and why the others do not; the run
    /// input carries them for the report.
    pub analyzers: Vec<AnalyzerLane>,
    /// What the review covers, when an incremental review was asked for; the run
    /// input carries it for the report.
    pub scope: Option<Scope>,
    /// The repository's key (the forge's `owner/name`, or `--repository-key`), under
    /// which the run store keeps the dismissals made on its pull requests; the run
    /// input carries it, and the report applies those dismissals.
    pub repository_key: Option<String>,
    /// The rules files found for the change (`None`: the conclave's `rules: false`
    /// turned the repository's off and none were given); the run input carries
    /// those that apply, through [`crate::rules::insert_rules`].
    pub rules: Option<RepositoryRules>,
    /// Where the review's configuration was read from and which configuration files
    /// the change edits (`None` for a review of the working tree); the run input
    /// carries it for the report.
    pub configuration: Option<ConfigurationSource>,
    /// The forge repository's web URL, the one place links in the report and a
    /// posting may point to: the `origin` remote's (see `forge_url.rs`), or the
    /// posting target's, which the caller sets; the run input carries it.
    pub repository_url: Option<String>,
}

/// Why a review could not be prepared or finished.
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    /// The change is empty.
    #[error("nothing to review: no changes in {repository} ({against})")]
    NothingToReview {
        /// The repository as given.
        repository: String,
        /// What was compared.
        against: String,
    },
    /// The change could not be read.
    #[error(transparent)]
    Change(#[from] ChangeError),
    /// The conclave could not be found or has errors.
    #[error(transparent)]
    Conclave(#[from] LoadError),
    /// `provider` names no provider.
    #[error("unknown provider `{provider}`; known providers: {known}")]
    UnknownProvider {
        /// The name given.
        provider: String,
        /// The known names, comma-separated.
        known: String,
    },
    /// The repository's `.conclave/dismissed.json` is malformed or unreadable.
    #[error(transparent)]
    Dismissals(#[from] DismissalError),
    /// The repository's tools could not be set up.
    #[error("cannot open the repository {root}: {message}")]
    Repository {
        /// The repository root.
        root: String,
        /// What failed.
        message: String,
    },
    /// The run could not start.
    #[error(transparent)]
    Start(#[from] StartError),
    /// The run store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The selection of analyzers names a lane the conclave does not have.
    #[error(transparent)]
    UnknownAnalyzer(#[from] UnknownAnalyzer),
    /// A rules file given with the request cannot be used.
    #[error(transparent)]
    Rules(#[from] RulesError),
}

/// Prepares a review: reads the change, picks and checks the conclave, applies the
/// provider choices, and builds the run's tools and policy. Git, the conclave's file
/// and the repository are read on a blocking thread.
pub async fn prepare(
    request: &ReviewRequest,
    catalog: Catalog<'_>,
    providers: &ProviderRegistry,
) -> Result<PreparedReview, ReviewError> {
    let blocking_request = request.clone();
    let (dir, context, providers) = (catalog.dir.to_path_buf(), catalog.context.clone(), providers.clone());
    let review = tokio::task::spawn_blocking(move || {
        let request = blocking_request;
        let since = match &request.scope {
            Some(Scope::Incremental { since, .. }) => Some(since.as_str()),
            _ => None,
        };
        let change = collect_change_since(&request.repository, request.base.as_deref(), since)?.ok_or_else(|| {
            ReviewError::NothingToReview {
                repository: request.repository.display().to_string(),
                against: match (since, request.base.as_deref()) {
                    (Some(since), _) => {
                        format!("nothing new since {}, which was reviewed", crate::incremental::short(since))
                    }
                    (None, Some(b)) => format!("{b}...HEAD"),
                    (None, None) => "the working tree against HEAD".to_string(),
                },
            }
        })?;
        prepare_change(change, &request, Catalog { dir: &dir, context: &context }, &providers)
    })
    .await
    .map_err(|e| ChangeError::Git { command: "diff".into(), message: format!("the git task stopped: {e}") })??;
    let mut review = review;
    attach_impact(&mut review, request).await;
    Ok(review)
}

/// Gives the prepared review's change its impact (see `impact/`), from the symbol
/// index its tools share, unless the conclave turned it off. Never fails: what could
/// not be done is in the impact's record.
async fn attach_impact(review: &mut PreparedReview, request: &ReviewRequest) {
    if review.change.impact.is_some() {
        return;
    }
    let conclave = review.conclave.clone();
    let prices = tokio::task::spawn_blocking(|| {
        conclave_core::PriceTable::load(conclave_schema::refs::user_config_dir().as_deref())
    })
    .await;
    let settings = match prices {
        Ok(prices) => impact_settings(&conclave, &prices),
        Err(_) => conclave.conclave().settings.impact.unwrap_or_default(),
    };
    if !settings.is_enabled() {
        let why = "turned off by the conclave's `settings.impact`".to_string();
        review.change.impact = Some(crate::impact::without_impact(settings, why));
        return;
    }
    let index = match crate::impact::has_code(&review.change.files) {
        true => review.tools.symbols().get().await,
        false => Err("no changed file is code".to_string()),
    };
    let (root, files, allow) = (review.change.root.clone(), review.change.files.clone(), request.allow_paths.clone());
    let since = match &request.scope {
        Some(Scope::Incremental { since, .. }) => Some(since.clone()),
        _ => None,
    };
    let base = request.base.clone();
    let built = tokio::task::spawn_blocking(move || {
        let base_commit = impact_base(&root, base.as_deref(), since.as_deref());
        let request = crate::impact::ImpactRequest {
            root: &root,
            base_commit: base_commit.as_deref(),
            files: &files,
            allow: &allow,
            settings,
        };
        crate::impact::build_impact(&request, index.as_deref().map_err(String::as_str))
    })
    .await;
    review.change.impact = Some(
        built.unwrap_or_else(|e| crate::impact::without_impact(settings, format!("building the impact stopped: {e}"))),
    );
}

/// The commit a change's impact compares the head with: the commit an incremental
/// review starts from, else the merge base of the base and `HEAD`, else `HEAD` (a
/// review of the working tree); `None` before the first commit.
fn impact_base(root: &Path, base: Option<&str>, since: Option<&str>) -> Option<String> {
    match (since, base) {
        (Some(since), _) => crate::diff::verify_base(root, since).ok(),
        (None, Some(base)) => crate::configuration::merge_base(root, base).ok(),
        (None, None) => crate::diff::verify_base(root, "HEAD").ok(),
    }
}

/// Prepares a review of a change already read: the change an earlier review run
/// reviewed (see [`Change::from_run_input`]), to run from one of its nodes again
/// with the same input. The same choices as [`prepare`], without reading git; the
/// request's repository and base are not read again.
pub fn prepare_change(
    mut change: Change,
    request: &ReviewRequest,
    catalog: Catalog<'_>,
    providers: &ProviderRegistry,
) -> Result<PreparedReview, ReviewError> {
    // A review with a base reads what configures it from the base side (a review
    // since an earlier one, from the commit it started from).
    let since = match &request.scope {
        Some(Scope::Incremental { since, .. }) => Some(since.as_str()),
        _ => None,
    };
    let base = request.base.as_deref().or(since);
    let asked = (catalog, &request.conclave, request.rules.as_slice());
    let configuration = configure(&change.root, base, request.trust, asked, &change.files)?;
    let mut conclave = review_conclave(&configuration.choice, configuration.catalog())
        .map_err(|e| ReviewError::Conclave(shown_from_base(&configuration, e)))?;
    // A malformed dismissals file on the side that configures the review stops it
    // before any agent runs.
    let input = serde_json::json!({ CONFIGURATION_INPUT: configuration.source, "head": change.head });
    ReviewDismissals::read(&input, &change.root)?;
    let mut fallback = None;
    if let Some(provider) = &request.provider {
        switch_provider(&mut conclave, providers, provider, request.model.as_deref())?;
    } else if request.fallback {
        fallback = fallback_to_local(&mut conclave, providers);
    }
    // The reviewers' models are known now: they bound the parts a large change needs.
    change.split_into_parts(part_bytes(&conclave, &change, request.max_diff_bytes), request.max_parts)?;
    let analyzers = decide_analyzers(&mut conclave, &change, &request.analyzers, request.allow_unsandboxed)?;
    let mut review = prepare_recorded(change, conclave, &request.allow_paths, request.samples)?;
    review.analyzers = analyzers;
    review.notices = fallback.iter().map(|f| format!("note: {f}")).collect();
    review.fallback = fallback;
    review.no_cache = request.no_cache;
    review.budget = request.budget;
    review.scope = request.scope.clone();
    review.rules = read_rules(&review, &configuration, &request.allow_paths)?;
    review.configuration = configuration.source;
    review.repository_url = crate::forge_url::origin_web_url(&review.change.root);
    Ok(review)
}

/// `error` with the paths of the base's copy named as the commit's files.
fn shown_from_base(configuration: &Configuration, error: LoadError) -> LoadError {
    match error {
        LoadError::NotFound { given, dir, known } => {
            LoadError::NotFound { given: configuration.shown(&given), dir: configuration.shown(&dir), known }
        }
        LoadError::Invalid { file, mut diagnostics } => {
            for d in &mut diagnostics {
                d.file = configuration.shown(&d.file);
            }
            LoadError::Invalid { file: configuration.shown(&file), diagnostics }
        }
    }
}

/// The rules files for a prepared review's change: the repository's (the base side's
/// copy when the base configures the review), read through the tools' sandbox
/// unless the conclave's `rules: false` turned them off, then the `given` ones.
/// Reads the file system: call it on a blocking thread.
fn read_rules(
    review: &PreparedReview,
    configuration: &Configuration,
    allow_paths: &[String],
) -> Result<Option<RepositoryRules>, ReviewError> {
    let given = &configuration.rules_given;
    let off = review.conclave.conclave().settings.rules == Some(false);
    if off && given.is_empty() {
        return Ok(None);
    }
    let sandbox = if off {
        None
    } else {
        let root = &configuration.rules_root;
        let sandbox = crate::tools::Sandbox::new(root, allow_paths)
            .map_err(|e| ReviewError::Repository { root: root.display().to_string(), message: e.to_string() })?;
        Some(sandbox)
    };
    let rules = RepositoryRules::read(sandbox.as_ref(), &review.change.paths(), given)?;
    Ok(Some(rules))
}

/// Prepares a review whose conclave is already chosen (as it is stored with a queued
/// run a worker claims): the repository tools, the policy and the samples, as
/// [`prepare`] gives them.
pub fn prepare_recorded(
    change: Change,
    conclave: CheckedConclave,
    allow_paths: &[String],
    samples: u32,
) -> Result<PreparedReview, ReviewError> {
    let tools = RepoTools::new(&change.root, allow_paths)
        .map_err(|e| ReviewError::Repository { root: change.root.display().to_string(), message: e.to_string() })?;
    let policy = if conclave.conclave().settings.diff_tightening == Some(false) {
        ReviewPolicy::default()
    } else {
        ReviewPolicy::for_change(change.paths())
    }
    .in_repository(change.root.clone());
    let samples = (samples > 1).then(|| Samples { count: samples, nodes: sampled_agents(&conclave) });
    // The parts are in the change (and so in a stored run's input): a worker finds them.
    let parts = (!change.parts.is_empty()).then(|| Parts { nodes: sampled_agents(&conclave) });
    let (tools, policy) = (Arc::new(tools), Arc::new(policy));
    Ok(PreparedReview {
        change,
        conclave,
        fallback: None,
        notices: Vec::new(),
        tools,
        policy,
        samples,
        parts,
        no_cache: false,
        budget: None,
        analyzers: Vec::new(),
        scope: None,
        repository_key: None,
        rules: None,
        configuration: None,
        repository_url: None,
    })
}

/// The analyzer lanes of the conclave `request` chooses, decided for its change as a
/// review would decide them (an empty change gives every lane no files). Reads git
/// and the file system: call it on a blocking thread.
pub fn list_analyzers(
    request: &ReviewRequest,
    catalog: Catalog<'_>,
) -> Result<(CheckedConclave, Vec<AnalyzerLane>), ReviewError> {
    let change = collect_change(&request.repository, request.base.as_deref())?;
    let root = crate::diff::repository_root(&request.repository)?;
    let files = change.as_ref().map(|c| c.files.clone()).unwrap_or_default();
    let asked = (catalog, &request.conclave, &[][..]);
    let configuration = configure(&root, request.base.as_deref(), request.trust, asked, &files)?;
    let conclave = review_conclave(&configuration.choice, configuration.catalog())
        .map_err(|e| ReviewError::Conclave(shown_from_base(&configuration, e)))?;
    let changed = change.as_ref().map(existing_files).unwrap_or_default();
    let mut lanes = plan_lanes(&conclave, &changed, &request.analyzers, locate_program)?;
    if request.base.is_some() && !request.allow_unsandboxed {
        crate::analyzers::require_sandbox(&mut lanes, conclave_sandbox::probe().can_confine().is_ok());
    }
    provide_rules(&conclave, &mut lanes, install_rules);
    Ok((conclave, lanes))
}

/// Decides the conclave's analyzer lanes for `change` and applies the decision: the
/// lanes that do not run leave the conclave, the others get their files.
fn decide_analyzers(
    conclave: &mut CheckedConclave,
    change: &Change,
    selection: &AnalyzerSelection,
    allow_unsandboxed: bool,
) -> Result<Vec<AnalyzerLane>, ReviewError> {
    let mut lanes = plan_lanes(conclave, &existing_files(change), selection, locate_program)?;
    if change.base.is_some() && !allow_unsandboxed {
        crate::analyzers::require_sandbox(&mut lanes, conclave_sandbox::probe().can_confine().is_ok());
    }
    provide_rules(conclave, &mut lanes, install_rules);
    apply_lanes(conclave, &lanes, change.base.as_deref().unwrap_or("HEAD"));
    Ok(lanes)
}

/// The changed files an analyzer can read: not deleted, and a file in the tree.
fn existing_files(change: &Change) -> Vec<String> {
    change
        .files
        .iter()
        .filter(|f| f.status != "deleted" && change.root.join(&f.path).is_file())
        .map(|f| f.path.clone())
        .collect()
}

/// The engine options of a prepared review, from a node of an earlier run when
/// `reuse` says so.
pub fn run_options(review: &PreparedReview, reuse: Option<Reuse>) -> RunOptions {
    RunOptions {
        tools: Some(review.tools.clone()),
        policy: Some(review.policy.clone()),
        workdir: Some(review.change.root.clone()),
        reuse,
        samples: review.samples.clone(),
        no_cache: review.no_cache,
        // The conclave is a file of the workspace or the catalog, or one the server
        // checked against its allowed programs when it was saved or posted.
        commands: Some(Arc::new(Commands::any(None))),
        budget: review.budget,
        parts: review.parts.clone(),
    }
}

impl PreparedReview {
    /// The run input: the change, and the analyzer lanes when the conclave has any.
    pub fn run_input(&self) -> serde_json::Value {
        let mut input = self.change.run_input();
        if !self.analyzers.is_empty()
            && let Some(object) = input.as_object_mut()
        {
            object.insert("analyzers".into(), serde_json::json!(self.analyzers));
        }
        if let (Some(scope), Some(object)) = (&self.scope, input.as_object_mut()) {
            object.insert(crate::incremental::SCOPE_KEY.into(), serde_json::json!(scope));
        }
        if let Some(object) = input.as_object_mut() {
            crate::rules::insert_rules(object, self.rules.as_ref(), &self.change.paths());
        }
        // Each part carries the rules that apply to its own files.
        if let (false, Some(object)) = (self.change.parts.is_empty(), input.as_object_mut()) {
            let parts = self.change.parts_input(self.rules.as_ref());
            object.insert(conclave_engine::PARTS_FIELD.into(), serde_json::Value::Array(parts));
        }
        if let (Some(source), Some(object)) = (&self.configuration, input.as_object_mut()) {
            object.insert(CONFIGURATION_INPUT.into(), serde_json::json!(source));
        }
        if let (Some(key), Some(object)) = (&self.repository_key, input.as_object_mut()) {
            object.insert(crate::dismissals::REPOSITORY_KEY_INPUT.into(), serde_json::json!(key));
        }
        if let (Some(url), Some(object)) = (&self.repository_url, input.as_object_mut()) {
            object.insert(crate::report::REPOSITORY_URL_INPUT.into(), serde_json::json!(url));
        }
        input
    }

    /// One line saying what is about to be reviewed.
    pub fn describe(&self) -> String {
        let parts = match self.change.parts.len() {
            0 => String::new(),
            n => format!(", in {n} parts (the change is larger than one request can take)"),
        };
        format!(
            "reviewing {} file(s) in {} with {}{parts}",
            self.change.files.len(),
            self.change.root.display(),
            self.conclave.conclave().id
        )
    }
}

/// Starts the prepared review on `engine`; returns at once with the run's handle.
pub async fn start(engine: &Engine, review: &PreparedReview) -> Result<RunHandle, StartError> {
    start_with(engine, review, None).await
}

/// Starts the prepared review, from a node of an earlier review run when `reuse`
/// says so (only that node and its descendants run; the others keep their outputs).
pub async fn start_with(
    engine: &Engine,
    review: &PreparedReview,
    reuse: Option<Reuse>,
) -> Result<RunHandle, StartError> {
    engine.start(review.conclave.clone(), review.run_input(), run_options(review, reuse)).await
}

/// Builds the report of a finished review run and stores it in every format.
pub async fn finish(store: &dyn RunStore, run_id: &str) -> Result<ReviewReport, ReviewError> {
    finish_against(store, run_id, None, &[]).await
}

/// [`finish`], comparing the findings with `baseline` when given; `fell_back` are
/// the notices of agents moved to the local model for want of a key, which make the
/// review degraded.
pub async fn finish_against(
    store: &dyn RunStore,
    run_id: &str,
    baseline: Option<&Baseline>,
    fell_back: &[String],
) -> Result<ReviewReport, ReviewError> {
    let record = store.get_run(run_id).await?.ok_or_else(|| StoreError::UnknownRun(run_id.to_string()))?;
    let stored = stored_dismissals(store, &record.input).await?;
    let events = store.events(run_id, 0).await?;
    let report = build_report(&record, &events);
    // An incremental review finished by a process that did not resolve it (a worker,
    // a server) carries from the earlier review its input names, as the CLI does.
    let baseline = match baseline {
        Some(baseline) => Some(baseline.clone()),
        None => crate::incremental::earlier_of_input(store, &record.input).await,
    };
    // Anchoring walks the repository and reads its files: a blocking thread's work.
    let input = record.input;
    let root = input.get("repository").and_then(serde_json::Value::as_str).unwrap_or("of the run").to_string();
    let mut report = tokio::task::spawn_blocking(move || {
        // The repository's dismissals, read once from the side that configured the
        // review, and the run store's beneath them.
        let repository = match input.get("repository").and_then(serde_json::Value::as_str) {
            Some(root) => ReviewDismissals::read(&input, Path::new(root))?,
            None => ReviewDismissals::default(),
        };
        let applied = repository.applied.clone().over(&stored);
        let dismissals = (&applied, &repository);
        let mut report = anchor_report(report, &input, dismissals)?;
        if let Some(baseline) = baseline {
            compare_with(&mut report, &baseline, &input, dismissals);
        }
        Ok::<_, DismissalError>(report)
    })
    .await
    .map_err(|e| ReviewError::Repository { root, message: format!("the task reading it stopped: {e}") })??;
    report.degraded.extend(fell_back.iter().map(|n| n.trim_start_matches("note: ").to_string()));
    // Model text is made inert once, after anchoring and the baseline needed it raw.
    crate::report::sanitize_report(&mut report);
    for format in ReportFormat::ALL {
        store.put_report(run_id, format.as_str(), &report.render(format)).await?;
    }
    Ok(report)
}

/// Marks the report's findings new, unchanged or updated against `baseline`, and
/// lists the baseline's others as absent. In an incremental review (its run input
/// says so), the earlier findings on code the new commits did not touch are carried
/// into the findings instead, `unchanged`, and the repository's dismissals apply to
/// them as to the others. Reads the repository: call it on a blocking thread.
fn compare_with(
    report: &mut ReviewReport,
    baseline: &Baseline,
    input: &serde_json::Value,
    (applied, repository): (&Dismissals, &ReviewDismissals),
) {
    let absent = baseline.compare(&mut report.findings);
    report.baseline = Some(baseline.source.clone());
    let incremental = Scope::of_input(input).is_some_and(|s| s.is_incremental());
    let (Some(root), true) = (input.get("repository").and_then(serde_json::Value::as_str), incremental) else {
        report.absent = absent;
        return;
    };
    let files = input.get("files").cloned().unwrap_or_default();
    let changed: Vec<crate::diff::ChangedFile> = serde_json::from_value(files).unwrap_or_default();
    let before = report.findings.len();
    report.absent = carry_forward(&mut report.findings, absent, &changed, Path::new(root));
    applied.apply(&mut report.findings[before..]);
    report.dismissals_not_applied.extend(repository.not_applied(&report.findings[before..]));
}

/// The dismissals the run store keeps for the repository key the run input records
/// (none without one), to apply with the repository's file.
async fn stored_dismissals(store: &dyn RunStore, input: &serde_json::Value) -> Result<Dismissals, ReviewError> {
    let key = input.get(crate::dismissals::REPOSITORY_KEY_INPUT).and_then(serde_json::Value::as_str);
    match key {
        Some(key) => Ok(Dismissals::from_stored(&store.dismissals(Some(key)).await?)),
        None => Ok(Dismissals::default()),
    }
}

/// Checks the quotes of the report's findings against the files of the reviewed
/// repository (named by the run input) and fingerprints every finding, then marks the
/// findings `applied` dismisses, and lists those a dismissal the change added would
/// have hidden. It reads the repository: call it on a blocking thread.
fn anchor_report(
    mut report: ReviewReport,
    input: &serde_json::Value,
    (applied, repository): (&Dismissals, &ReviewDismissals),
) -> Result<ReviewReport, DismissalError> {
    match input.get("repository").and_then(serde_json::Value::as_str) {
        Some(root) => {
            // Analyzers name a line: its text is their quote.
            let lanes: Vec<String> = report.analyzers.iter().map(|l| l.name.clone()).collect();
            quote_cited_lines(&mut report.raised, Path::new(root), |f| lanes.contains(&f.agent));
            carry_dropped(&mut report, input);
            // The change's edits to the review's configuration, raised for a person.
            let mut edits = report.configuration.as_ref().map(edit_findings).unwrap_or_default();
            quote_cited_lines(&mut edits, Path::new(root), |_| true);
            report.findings.extend(edits);
            anchor_in_repository(&mut report.findings, Path::new(root));
            anchor_in_repository(&mut report.raised, Path::new(root));
            applied.apply(&mut report.findings);
            report.dismissals_not_applied = repository.not_applied(&report.findings);
        }
        None => {
            carry_dropped(&mut report, input);
            anchor_findings(&mut report.findings, |_| None);
            anchor_findings(&mut report.raised, |_| None);
            applied.apply(&mut report.findings);
        }
    }
    count_support(&mut report.findings, &report.raised);
    carry_stability(&mut report.findings, &report.raised);
    Ok(report)
}

/// The review conclave: the one chosen, else the workspace's `light-code-review`,
/// else the built-in one. The ids of the built-in reviews (`BUILTIN_REVIEWS`) name
/// them when the workspace has no file of that name.
fn review_conclave(choice: &ConclaveChoice, catalog: Catalog<'_>) -> Result<CheckedConclave, LoadError> {
    let given = match choice {
        ConclaveChoice::Default => DEFAULT_REVIEW_ID,
        ConclaveChoice::PathOrId(given) | ConclaveChoice::Id(given) => given,
    };
    if let Some((id, text)) = BUILTIN_REVIEWS.iter().find(|(id, _)| *id == given)
        && !catalog.dir.join(format!("{id}.conclave.json")).is_file()
    {
        return check_text(&format!("<built-in {id}>"), text, catalog.context);
    }
    match choice {
        ConclaveChoice::Id(id) => load_by_id(id, catalog.dir, catalog.context),
        _ => load_conclave(given, catalog.dir, catalog.context),
    }
}

/// Moves every agent onto `provider`, with `model` or the provider's default.
fn switch_provider(
    conclave: &mut CheckedConclave,
    providers: &ProviderRegistry,
    provider: &str,
    model: Option<&str>,
) -> Result<(), ReviewError> {
    let known = providers.known_names();
    if !known.iter().any(|k| k == provider) {
        return Err(ReviewError::UnknownProvider { provider: provider.to_string(), known: known.join(", ") });
    }
    let model = model.map(str::to_string).or_else(|| providers.default_model(provider)).unwrap_or_default();
    for id in agent_ids(conclave) {
        conclave.reassign(&id, provider, &model);
    }
    Ok(())
}
