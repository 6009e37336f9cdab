//! `conclave approve RUN NODE [--reject] [--comment TEXT] [--by NAME]`: records a
//! person's decision at a waiting approval node, then takes the run up again here
//! and follows it to its end (or to its next approval), as `conclave run` does.

use clap::Args;
use conclave_core::{RunQueue, RunStore};
use conclave_engine::{Decision, DecisionError, Engine, decide};
use conclave_review::diff::Change;
use conclave_review::pipeline;
use std::sync::Arc;

use super::exit;
use super::run::{conclude, follow};
use crate::worker::{JobSpec, prepare_job};
use crate::workspace::{Workspace, engine_config_on};

/// Arguments of `conclave approve`.
#[derive(Debug, Clone, Args)]
pub struct ApproveArgs {
    /// The waiting run (a unique prefix of its id is enough).
    pub run: String,
    /// The approval node to decide at.
    pub node: String,
    /// Reject instead of approving: the run stops, `rejected`.
    #[arg(long)]
    pub reject: bool,
    /// What to record with the decision.
    #[arg(long)]
    pub comment: Option<String>,
    /// Who decides (default: $USER).
    #[arg(long)]
    pub by: Option<String>,
    /// For a review: post it once it ends, as `conclave review --post` would have.
    #[arg(long, value_enum, value_name = "FORGE")]
    pub post: Option<crate::post::Forge>,
    /// With --post: the pull (merge) request number, instead of the CI environment's.
    #[arg(long, value_name = "N", requires = "post")]
    pub pr: Option<u64>,
    /// Whether commands may run unconfined where the kernel cannot confine them.
    #[command(flatten)]
    pub sandboxing: super::sandbox::Sandboxing,
}

/// Records the decision and goes on with the run; returns the exit code.
pub async fn run(args: ApproveArgs, workspace: Workspace, queue: Arc<dyn RunQueue>) -> u8 {
    let store: Arc<dyn RunStore> = queue.clone();
    let post_to = match super::post::target(args.post, args.pr).await {
        Ok(target) => target,
        Err(code) => return code,
    };
    let run_id = match super::runs::resolve_id(store.as_ref(), &args.run).await {
        Ok(id) => id,
        Err((code, message)) => {
            eprintln!("error: {message}");
            return code;
        }
    };
    let by = args.by.clone().or_else(|| std::env::var("USER").ok()).unwrap_or_else(|| "someone".into());
    let decision = Decision { approved: !args.reject, by, comment: args.comment.clone() };
    match decide(store.as_ref(), &run_id, &args.node, decision).await {
        Ok(()) => {}
        // The rejection by timeout is recorded: going on stops the run cleanly.
        Err(e @ DecisionError::Expired { .. }) => eprintln!("note: {e}"),
        Err(e) => {
            eprintln!("error: {e}");
            return exit::OTHER;
        }
    }
    let record = match store.get_run(&run_id).await {
        Ok(Some(record)) => record,
        Ok(None) => return exit::OTHER,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::OTHER;
        }
    };
    let change = Change::from_run_input(&record.input);
    let review = change.is_some();
    let spec = match review {
        true => JobSpec::Review {
            allow_paths: workspace.allow_paths.clone(),
            samples: 1,
            fell_back: Vec::new(),
            no_cache: false,
        },
        false => JobSpec::Run,
    };
    let (id, context, conclave) = (run_id.clone(), workspace.catalog_context().clone(), record.conclave.clone());
    let prepared = super::offload::blocking(move || prepare_job(&id, &record, spec, &context)).await;
    let (checked, mut options, _) = match prepared {
        Ok(prepared) => prepared,
        Err(message) => {
            eprintln!("error: cannot take run {run_id} up again: {message}");
            return exit::CONFIG;
        }
    };
    options.commands = Some(workspace.commands());
    let mut config = engine_config_on(16, &queue).await;
    args.sandboxing.apply(&mut config);
    let engine = Engine::new(workspace.providers.clone(), store.clone(), config);
    let outcome = match follow(&conclave, engine.resume(checked, &run_id, options).await).await {
        Ok(outcome) => outcome,
        Err(code) => return code,
    };
    let code = conclude(&outcome);
    let (Some(change), true) = (change, outcome.status.is_terminal()) else { return code };
    match pipeline::finish(store.as_ref(), &run_id).await {
        Ok(report) => code.max(super::post::publish(post_to.as_ref(), &report, outcome.status, &change.root).await),
        Err(e) => {
            eprintln!("error: could not store the review's reports: {e}");
            code.max(exit::OTHER)
        }
    }
}
