//! `conclave analyzers`: the analyzer lanes of a review conclave (its command nodes
//! with an `analyzer` block) and, for the change `conclave review` would review, which
//! would run and why each other one is off, decided by the review pipeline itself.

use clap::Args;
use conclave_review::ConclaveChoice;
use conclave_review::analyzers::{LaneOff, tool_dir};
use conclave_review::pipeline::{self, AnalyzerLane, AnalyzerSelection, ReviewError, ReviewRequest};
use conclave_shared::Trust;
use std::path::PathBuf;

use super::exit;
use super::run::explain_load_error;
use crate::workspace::Workspace;

/// Arguments of `conclave analyzers`.
#[derive(Debug, Args)]
pub struct AnalyzersArgs {
    /// The repository (default: the current directory).
    pub repo: Option<PathBuf>,
    /// Decide for `BASE...HEAD`; without it, the working tree against HEAD.
    #[arg(long)]
    pub base: Option<String>,
    /// The review conclave: a file or an id (default: light-code-review).
    #[arg(long)]
    pub conclave: Option<String>,
    /// The selection to decide for, as `conclave review --analyzers` takes it.
    #[arg(long, value_name = "NAME,...|none")]
    pub analyzers: Option<String>,
    /// Read the conclave from the change (the working tree) rather than the base
    /// side, as `conclave review --trust-head` does.
    #[arg(long)]
    pub trust_head: bool,
    /// Decide as a review given --allow-unsandboxed would.
    #[command(flatten)]
    pub sandboxing: super::sandbox::Sandboxing,
}

/// Lists the lanes; returns the exit code. Reads git and the file system: call it on
/// a blocking thread.
pub fn run(args: AnalyzersArgs, workspace: &Workspace) -> u8 {
    let request = ReviewRequest {
        repository: args.repo.clone().unwrap_or_else(|| PathBuf::from(".")),
        base: args.base.clone(),
        conclave: args.conclave.clone().map_or(ConclaveChoice::Default, ConclaveChoice::PathOrId),
        provider: None,
        model: None,
        fallback: false,
        allow_paths: Vec::new(),
        max_diff_bytes: workspace.max_diff_bytes,
        max_parts: conclave_review::diff::DEFAULT_MAX_PARTS,
        samples: 1,
        no_cache: false,
        budget: None,
        analyzers: args.analyzers.as_deref().map_or_else(Default::default, AnalyzerSelection::parse),
        scope: None,
        rules: Vec::new(),
        trust: if args.trust_head { Trust::Head } else { Trust::Base },
        allow_unsandboxed: args.sandboxing.allow_unsandboxed,
    };
    let (conclave, lanes) = match pipeline::list_analyzers(&request, workspace.catalog()) {
        Ok(listed) => listed,
        Err(ReviewError::Conclave(e)) => return explain_load_error(e),
        Err(e @ ReviewError::UnknownAnalyzer(_)) => {
            eprintln!("error: {e} (--analyzers)");
            return exit::CONFIG;
        }
        Err(e) => {
            eprintln!("error: {e}");
            return exit::CONFIG;
        }
    };
    let id = &conclave.conclave().id;
    if lanes.is_empty() {
        println!("conclave {id} has no analyzer lanes");
        return exit::OK;
    }
    println!("analyzer lanes of {id}:");
    let width = lanes.iter().map(|l| l.name.len()).max().unwrap_or(0);
    for lane in &lanes {
        println!("  {:width$}  {}", lane.name, describe(lane));
    }
    exit::OK
}

/// The lane's program, whether it is installed, and whether it would run.
fn describe(lane: &AnalyzerLane) -> String {
    let installed = if lane.installed { "installed" } else { "not installed" };
    let state = match (lane.off, lane.why_off()) {
        (Some(LaneOff::OffByDefault), Some(why)) => format!("off: {why} (--analyzers {})", lane.name),
        (Some(LaneOff::NotInstalled), Some(why)) => {
            let dir = tool_dir().map_or_else(|| "the tool directory".to_string(), |d| d.display().to_string());
            format!("off: {why} (neither on PATH nor in {dir})")
        }
        (Some(LaneOff::SandboxUnavailable), Some(why)) => {
            format!("off: {why} (`conclave sandbox check` says why; --allow-unsandboxed runs it unconfined)")
        }
        (_, Some(why)) => format!("off: {why}"),
        (_, None) => format!("runs on {} changed file(s): {}", lane.files.len(), lane.files.join(", ")),
    };
    format!("`{}`, {installed}; {state}", lane.program)
}
