//! Samples: an agent run several times on the same input, its answers merged into
//! the node's one output by the run's [`OutputPolicy`] (code review merges findings
//! by fingerprint and gives each its stability, how many samples raised it).
//!
//! Each sample is a whole agent run (tool phase, answer, validation and retries) and
//! takes its own permits, so samples run concurrently within the run's and the
//! engine's limits. The node succeeds when at least one sample answered; the errors
//! of the others go to the policy, which records them in the output. Only the first
//! sample streams its text: the others would interleave with it.

use conclave_shared::{EventKind, NodeOutput, Usage};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::agent::{AgentContext, run_agent_with};
use crate::bus::BusSink;
use crate::input::AgentInput;
use crate::limits::RunLimits;
use crate::node_error::NodeError;
use crate::plan::AgentPlan;

/// Runs `plan` `plan.samples` times concurrently and merges the answers; emits
/// `node_started` once, when the first sample gets its permits.
pub(crate) async fn run_sampled(
    plan: Arc<AgentPlan>,
    ctx: AgentContext,
    limits: RunLimits,
    node_id: String,
    input: AgentInput,
) -> Result<(NodeOutput, Usage), NodeError> {
    let started = Arc::new(AtomicBool::new(false));
    let message = input.render();
    let samples = (0..plan.samples).map(|i| {
        let (plan, ctx, limits, node_id, input) = (&plan, &ctx, &limits, &node_id, input.clone());
        let (started, message) = (started.clone(), &message);
        async move {
            let _permits = limits.acquire(Some(&plan.config.provider)).await;
            if !started.swap(true, Ordering::SeqCst) {
                let event = EventKind::NodeStarted { node_id: node_id.clone(), input: Some(message.clone()) };
                ctx.bus.emit(event).await;
            }
            let sink = BusSink::new(ctx.bus.clone(), node_id.clone()).quiet(i > 0);
            let work = run_agent_with(plan, ctx, node_id, input, sink);
            match plan.timeout {
                Some(limit) => tokio::time::timeout(limit, work).await.unwrap_or(Err(NodeError::Timeout(limit))),
                None => work.await,
            }
        }
    });
    let results = futures::future::join_all(samples).await;
    merge(&plan, &ctx, results).await
}

/// The merged output of the samples that answered, with the usage of all of them;
/// the first error when none answered.
async fn merge(
    plan: &AgentPlan,
    ctx: &AgentContext,
    results: Vec<Result<(NodeOutput, Usage), NodeError>>,
) -> Result<(NodeOutput, Usage), NodeError> {
    let mut usage = Usage::default();
    let mut answers = Vec::new();
    let mut errors = Vec::new();
    for result in results {
        match result {
            Ok((output, used)) => {
                usage.add(&used);
                answers.push(output.to_input_value());
            }
            Err(error) => errors.push(error),
        }
    }
    if answers.is_empty() {
        return Err(errors.into_iter().next().unwrap_or_else(|| NodeError::Internal("no samples ran".into())));
    }
    let (Some(policy), Some(field)) = (ctx.policy.clone(), plan.findings_field().map(str::to_string)) else {
        return Ok((NodeOutput::Json(answers.swap_remove(0)), usage));
    };
    let failed: Vec<String> = errors.iter().map(ToString::to_string).collect();
    // Merging reads the reviewed files for fingerprints: off the async threads.
    let merged = tokio::task::spawn_blocking(move || policy.merge_samples(answers, &field, &failed))
        .await
        .map_err(|e| NodeError::Internal(format!("merging the samples stopped: {e}")))?;
    Ok((NodeOutput::Json(merged), usage))
}
