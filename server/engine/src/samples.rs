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
    let started = AtomicBool::new(false);
    let message = input.render();
    let calls = Calls { plan: &plan, ctx: &ctx, limits: &limits, node_id: &node_id, started: &started };
    let results = calls.sample(input, &message, true).await;
    merge(&plan, &ctx, results).await
}

/// What each call of one node shares: the agent, the run, and whether the node
/// was announced (`node_started` goes out once, when the first call has its permits).
#[derive(Clone, Copy)]
pub(crate) struct Calls<'a> {
    pub(crate) plan: &'a AgentPlan,
    pub(crate) ctx: &'a AgentContext,
    pub(crate) limits: &'a RunLimits,
    pub(crate) node_id: &'a str,
    pub(crate) started: &'a AtomicBool,
}

impl Calls<'_> {
    /// Runs the agent `plan.samples` times concurrently on `input`, each run under
    /// its own permits and timeout; `message` is what `node_started` shows. Only the
    /// first sample streams, and only when `streams`.
    pub(crate) async fn sample(
        self,
        input: AgentInput,
        message: &str,
        streams: bool,
    ) -> Vec<Result<(NodeOutput, Usage), NodeError>> {
        let samples = (0..self.plan.samples.max(1)).map(|i| {
            let input = input.clone();
            async move {
                let _permits = self.limits.acquire(Some(&self.plan.config.provider)).await;
                if !self.started.swap(true, Ordering::SeqCst) {
                    let node_id = self.node_id.to_string();
                    let event = EventKind::NodeStarted { node_id, input: Some(message.to_string()) };
                    self.ctx.bus.emit(event).await;
                }
                let sink = BusSink::new(self.ctx.bus.clone(), self.node_id.to_string()).quiet(i > 0 || !streams);
                let work = run_agent_with(self.plan, self.ctx, self.node_id, input, sink);
                match self.plan.timeout {
                    Some(limit) => tokio::time::timeout(limit, work).await.unwrap_or(Err(NodeError::Timeout(limit))),
                    None => work.await,
                }
            }
        });
        futures::future::join_all(samples).await
    }
}

/// The merged output of the samples that answered, with the usage of all of them;
/// the first error when none answered.
pub(crate) async fn merge(
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
