//! `conclave review [REPO]`: reviews a git change with the default review conclave
//! (or another), writes the report, and applies CI gates.

use clap::{Args, ValueEnum};
use conclave_shared::{Conclave, RunStatus, Severity};
use std::path::PathBuf;
use std::sync::Arc;

use super::run::{announce, engine_config, exit_code, load_or_explain, run_with_progress};
use super::{Workspace, exit};
use crate::catalog::check_conclave_text;
use crate::engine::Engine;
use crate::providers::{ProviderError, ProviderRegistry, default_model};
use crate::review::diff::{ChangeError, collect_change};
use crate::review::report::{ReportFormat, ReviewReport, build_report};
use crate::store::RunStore;
use crate::tools::RepoTools;

/// The default review conclave, used when the workspace has none.
const BUILTIN_REVIEW: &str = include_str!("../../../conclaves/light-code-review.conclave.json");
const DEFAULT_REVIEW_ID: &str = "light-code-review";

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
    #[arg(long, value_enum, default_value_t = ReportFormat::Markdown)]
    pub format: ReportFormat,
    /// Write the report here (only when the run succeeded) instead of standard output.
    #[arg(long)]
    pub output_file: Option<PathBuf>,
    /// Exit 5 when the review has a blocker, or reviewers contradict each other.
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
    /// Most nodes running at once.
    #[arg(long, default_value_t = 16)]
    pub max_concurrency: usize,
    /// Fail when an agent's provider has no key, instead of running it on the local model.
    #[arg(long)]
    pub no_fallback: bool,
}

/// CI gates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Gate {
    /// The review has at least one blocker.
    Blocker,
    /// Reviewers contradict each other somewhere.
    Contradiction,
}

/// Runs the review; returns the exit code.
pub async fn run(args: ReviewArgs, workspace: &Workspace, store: Arc<dyn RunStore>) -> u8 {
    let repo = args.repo.clone().unwrap_or_else(|| PathBuf::from("."));
    let change = match collect_change(&repo, args.base.as_deref()) {
        Ok(Some(change)) => change,
        Ok(None) => {
            let against = args
                .base
                .as_deref()
                .map_or_else(|| "the working tree against HEAD".to_string(), |b| format!("{b}...HEAD"));
            eprintln!("nothing to review: no changes in {} ({against})", repo.display());
            return exit::OK;
        }
        Err(e @ ChangeError::NotARepository(_)) | Err(e @ ChangeError::Git { .. }) => {
            eprintln!("error: {e}");
            return exit::CONFIG;
        }
    };
    let mut conclave = match review_conclave(&args, workspace) {
        Ok(c) => c,
        Err(code) => return code,
    };
    if let Some(provider) = &args.provider {
        if !workspace.providers.known_names().contains(provider) {
            eprintln!(
                "error: unknown provider `{provider}`; known providers: {}",
                workspace.providers.known_names().join(", ")
            );
            return exit::CONFIG;
        }
        let model = args.model.clone().unwrap_or_else(|| default_model(provider).to_string());
        for agent in conclave.nodes.iter_mut().filter_map(|n| n.agent.as_mut()) {
            agent.provider = provider.clone();
            agent.model = model.clone();
        }
    } else if !args.no_fallback
        && let Some(line) = fallback_to_local(&mut conclave, &workspace.providers)
    {
        eprintln!("{line}");
    }
    let tools = match RepoTools::new(&change.root) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: cannot open the repository {}: {e}", change.root.display());
            return exit::CONFIG;
        }
    };
    let mut config = engine_config(args.max_concurrency);
    config.tools = Some(Arc::new(tools));
    config.changed_files = Some(change.paths());
    let engine = Engine::new(workspace.providers.clone(), store.clone(), workspace.schemas.clone(), config);
    eprintln!("reviewing {} file(s) in {} with {}", change.files.len(), change.root.display(), conclave.id);

    let mut worst = exit::OK;
    let mut tally = Tally::default();
    for round in 1..=args.repeat.max(1) {
        let outcome = match run_with_progress(&engine, &conclave, change.run_input()).await {
            Ok(o) => o,
            Err(code) => return code,
        };
        announce(&outcome);
        let report = match stored_report(store.as_ref(), &outcome.run_id).await {
            Ok(r) => r,
            Err(message) => {
                eprintln!("error: {message}");
                return exit::OTHER;
            }
        };
        tally.add(round, args.repeat, &report);
        let code = deliver(&args, &report, outcome.status).max(exit_code(&outcome));
        worst = worst.max(code);
    }
    if args.repeat > 1 {
        tally.print_total();
    }
    worst
}

/// Moves every agent whose provider is not configured (no key) onto the local model;
/// returns the one line that says so, or `None` when nothing moved.
pub fn fallback_to_local(conclave: &mut Conclave, providers: &ProviderRegistry) -> Option<String> {
    let mut reasons: Vec<String> = Vec::new();
    let mut moved: Vec<String> = Vec::new();
    for node in &mut conclave.nodes {
        let Some(agent) = node.agent.as_mut() else { continue };
        let Some(provider) = providers.get(&agent.provider) else { continue };
        if let Err(ProviderError::Config { message, .. }) = provider.check_config() {
            let reason = format!("{}: {}", agent.provider, message.split(';').next().unwrap_or(&message));
            if !reasons.contains(&reason) {
                reasons.push(reason);
            }
            agent.provider = "local".into();
            agent.model = default_model("local").to_string();
            moved.push(node.id.clone());
        }
    }
    (!moved.is_empty()).then(|| {
        format!(
            "note: {} not configured ({}); running {} on the local model ({}) instead; pass --no-fallback to fail instead",
            if reasons.len() == 1 { "a provider is" } else { "providers are" },
            reasons.join("; "),
            moved.join(", "),
            default_model("local")
        )
    })
}

/// The review conclave: `--conclave`, else the workspace's, else the built-in one.
fn review_conclave(args: &ReviewArgs, workspace: &Workspace) -> Result<Conclave, u8> {
    if let Some(given) = &args.conclave {
        return load_or_explain(given, workspace);
    }
    if workspace.catalog_dir.join(format!("{DEFAULT_REVIEW_ID}.conclave.json")).is_file() {
        return load_or_explain(DEFAULT_REVIEW_ID, workspace);
    }
    let diagnostics = check_conclave_text("<built-in light-code-review>", BUILTIN_REVIEW, &workspace.catalog_context());
    if let Some(error) = diagnostics.iter().find(|d| d.is_error()) {
        eprintln!("{error}");
        return Err(exit::OTHER);
    }
    Conclave::from_json(BUILTIN_REVIEW).map_err(|e| {
        eprintln!("error: the built-in review conclave does not parse: {e}");
        exit::OTHER
    })
}

/// Builds the run's report and stores it in every format.
async fn stored_report(store: &dyn RunStore, run_id: &str) -> Result<ReviewReport, String> {
    let record = store
        .get_run(run_id)
        .await
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("run {run_id} is not in the store"))?;
    let events = store.events(run_id, 0).await.map_err(|e| e.to_string())?;
    let report = build_report(&record, &events);
    for format in ReportFormat::ALL {
        store.put_report(run_id, format.as_str(), &report.render(format)).await.map_err(|e| e.to_string())?;
    }
    Ok(report)
}

/// Writes or prints the report, then applies the gates.
fn deliver(args: &ReviewArgs, report: &ReviewReport, status: RunStatus) -> u8 {
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
    let blockers = report.totals().get(&Severity::Blocker).copied().unwrap_or(0);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::anthropic::AnthropicProvider;
    use std::sync::Arc;

    #[test]
    fn agents_without_a_key_fall_back_to_the_local_model_with_one_line() {
        let mut providers = ProviderRegistry::default();
        providers.register(Arc::new(AnthropicProvider::from_env(&|_| None)));
        let mut conclave = Conclave::from_json(BUILTIN_REVIEW).expect("built-in conclave");
        let line = fallback_to_local(&mut conclave, &providers).expect("the agents moved");
        assert_eq!(
            line,
            "note: a provider is not configured (anthropic: ANTHROPIC_API_KEY is not set); running security, correctness, conventions, writer on the local model (smollm2-135m) instead; pass --no-fallback to fail instead"
        );
        assert!(conclave.nodes.iter().filter_map(|n| n.agent.as_ref()).all(|a| a.provider == "local"));

        let mut keyed = ProviderRegistry::default();
        keyed.register(Arc::new(AnthropicProvider::from_env(&|k| {
            (k == "ANTHROPIC_API_KEY").then(|| "sk-x".to_string())
        })));
        let mut untouched = Conclave::from_json(BUILTIN_REVIEW).expect("built-in conclave");
        assert_eq!(fallback_to_local(&mut untouched, &keyed), None);
        assert!(untouched.nodes.iter().filter_map(|n| n.agent.as_ref()).all(|a| a.provider == "anthropic"));
    }
}
