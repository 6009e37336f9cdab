//! Parts: a run input too large for one call, partitioned into parts (its array
//! field [`PARTS_FIELD`], see [`Parts`]); the agents the run names run once per
//! part, and the run's [`OutputPolicy`](crate::OutputPolicy) merges their answers
//! into the node's one output (`merge_parts`).
//!
//! Each part's call is a whole agent run (with samples, each part is sampled and
//! merged first, so parts × samples calls) under its own permits, through the
//! budget ledger and the prompt cache like any call, so parts run concurrently
//! within the run's and the engine's limits. The node succeeds when at least one
//! part answered; the others' errors go to the policy, which records them. Only the
//! first part streams its text.

use conclave_shared::{NodeOutput, Usage};
use serde_json::{Map, Value};
use std::sync::atomic::AtomicBool;

use crate::agent::AgentContext;
use crate::config::{PARTS_FIELD, Parts};
use crate::input::AgentInput;
use crate::limits::RunLimits;
use crate::node_error::NodeError;
use crate::plan::AgentPlan;
use crate::samples::{Calls, merge};

/// A partitioned run input: what every node receives (the run input without its
/// parts), and each part's input for the agents that run once per part.
#[derive(Debug, Clone)]
pub(crate) struct Partitioned {
    /// The agents that run once per part.
    pub(crate) parts: Parts,
    /// Each part's input: the shared input with the part's fields over it.
    pub(crate) inputs: Vec<Value>,
}

/// Splits a run input whose [`PARTS_FIELD`] is a non-empty array of objects: the
/// input every node receives (without the parts) and the partitioned run, each
/// part's fields over the shared ones (a null field removing the shared one). `None`
/// (the input as it is) when the run names no agents or the input has no parts.
pub(crate) fn partition(input: &Value, parts: Option<&Parts>) -> Option<(Value, Partitioned)> {
    let parts = parts.filter(|p| !p.nodes.is_empty())?;
    let mut shared: Map<String, Value> = input.as_object()?.clone();
    let Some(Value::Array(list)) = shared.remove(PARTS_FIELD) else { return None };
    if list.is_empty() {
        return None;
    }
    let inputs = list
        .into_iter()
        .map(|part| {
            let mut own = shared.clone();
            for (key, value) in part.as_object().into_iter().flatten() {
                // A part's null field hides the shared one from that part.
                match value {
                    Value::Null => own.remove(key),
                    value => own.insert(key.clone(), value.clone()),
                };
            }
            Value::Object(own)
        })
        .collect();
    Some((Value::Object(shared), Partitioned { parts: parts.clone(), inputs }))
}

/// Runs `plan` once per part (each part sampled when the agent is) concurrently and
/// merges the answers through the policy; `base` is the node's input, whose run
/// input each part replaces. Emits `node_started` once, with the first part's input.
pub(crate) async fn run_parted(
    plan: &AgentPlan,
    ctx: &AgentContext,
    limits: &RunLimits,
    node_id: &str,
    (base, inputs): (AgentInput, Vec<Value>),
) -> Result<(NodeOutput, Usage), NodeError> {
    let started = AtomicBool::new(false);
    let calls = Calls { plan, ctx, limits, node_id, started: &started };
    let count = inputs.len();
    let first_message = inputs.first().map(|i| AgentInput { run_input: i.clone(), ..base.clone() }.render());
    let runs = inputs.into_iter().enumerate().map(|(p, run_input)| {
        let input = AgentInput { run_input, ..base.clone() };
        let message = first_message.clone().unwrap_or_default();
        async move {
            let results = calls.sample(input, &message, p == 0).await;
            if plan.samples > 1 {
                merge(plan, ctx, results).await
            } else {
                results.into_iter().next().unwrap_or_else(|| Err(NodeError::Internal("the part made no call".into())))
            }
        }
    });
    let results = futures::future::join_all(runs).await;
    merge_parts(plan, ctx, results, count).await
}

/// The merged output of the parts that answered, with the usage of all of them;
/// the first part's error when none answered.
async fn merge_parts(
    plan: &AgentPlan,
    ctx: &AgentContext,
    results: Vec<Result<(NodeOutput, Usage), NodeError>>,
    count: usize,
) -> Result<(NodeOutput, Usage), NodeError> {
    let mut usage = Usage::default();
    let mut answers = Vec::new();
    let mut errors = Vec::new();
    let mut first_error = None;
    for (p, result) in results.into_iter().enumerate() {
        match result {
            Ok((output, used)) => {
                usage.add(&used);
                answers.push(output.to_input_value());
            }
            Err(error) => {
                errors.push(format!("part {} of {count}: {error}", p + 1));
                first_error.get_or_insert(error);
            }
        }
    }
    if answers.is_empty() {
        return Err(first_error.unwrap_or_else(|| NodeError::Internal("no parts ran".into())));
    }
    let (Some(policy), Some(field)) = (ctx.policy.clone(), plan.findings_field().map(str::to_string)) else {
        return Ok((NodeOutput::Json(answers.swap_remove(0)), usage));
    };
    // Merging may read the workspace: off the async threads.
    let merged = tokio::task::spawn_blocking(move || policy.merge_parts(answers, &field, &errors))
        .await
        .map_err(|e| NodeError::Internal(format!("merging the parts stopped: {e}")))?;
    Ok((NodeOutput::Json(merged), usage))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_part_overrides_the_shared_input_and_the_others_lose_the_parts() {
        let input = json!({"paths": ["a", "b"], "text": "too long", "parts": [{"text": "a"}, {"text": "b", "n": 2, "paths": null}]});
        let parts = Parts { nodes: vec!["x".into()] };
        let (shared, partitioned) = partition(&input, Some(&parts)).expect("partitioned");
        assert_eq!(shared, json!({"paths": ["a", "b"], "text": "too long"}));
        assert_eq!(partitioned.inputs, [json!({"paths": ["a", "b"], "text": "a"}), json!({"text": "b", "n": 2})]);
        assert!(partition(&input, None).is_none(), "no agents named: the input as it is");
        assert!(partition(&json!({"parts": []}), Some(&parts)).is_none(), "no parts: the input as it is");
        assert!(partition(&json!("text"), Some(&parts)).is_none());
    }
}
