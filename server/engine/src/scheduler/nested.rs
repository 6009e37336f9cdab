//! The nodes that run other graphs or wait, beside the scheduler's own loop: a loop
//! node's iterations (each a run of its body's plan, scoped `loop/<n>/`), a
//! `conclave` node's child conclave (a run of its plan, scoped `node/`), an approval's
//! request, and parking a run that can go no further until people decide.

use conclave_core::now_ms;
use conclave_shared::{EventKind, NodeKind, NodeOutput, NodeState, RunStatus, Usage};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::time::Instant;

use super::{Run, RunOutcome};
use crate::node_error::NodeError;
use crate::repeat;

impl Run {
    /// Spawns loop node `i`: its body runs once per iteration in the loop's task,
    /// which the run's cancellation drops with the body's own tasks.
    pub(super) async fn start_loop(&mut self, i: usize) {
        let Some(repeat) = self.plan.nodes[i].repeat.clone() else {
            return self.finish(i, Err(NodeError::Internal("loop node without a plan".into())), 0).await;
        };
        self.bus.emit(EventKind::NodeStarted { node_id: self.scoped(i), input: None }).await;
        let mut inputs = self.upstream_outputs(i, false);
        let (loop_id, scope) = (self.plan.nodes[i].id.clone(), self.scope.clone());
        let (agents, input, limits, cache) =
            (self.agents.clone(), self.input.clone(), self.limits.clone(), self.cache.clone());
        let (mut iteration, mut previous) = match self.loop_starts.remove(&i) {
            Some((done, outputs)) => {
                if let Some(output) = repeat::after_iteration(&repeat.config, done, &outputs) {
                    return self.finish(i, Ok((output, Usage::default())), 0).await;
                }
                (done + 1, Value::Object(outputs))
            }
            None => (1, Value::Null),
        };
        let work = Box::pin(async move {
            let started = Instant::now();
            inputs.push((loop_id.clone(), Value::Null));
            let result = loop {
                inputs.last_mut().expect("the loop's own entry").1 = repeat::iteration_input(iteration, &previous);
                let body_scope = repeat::iteration_scope(&scope, &loop_id, iteration);
                let mut body = Run::new(
                    repeat.body.clone(),
                    agents.clone(),
                    input.clone(),
                    limits.clone(),
                    cache.clone(),
                    body_scope,
                    inputs.clone(),
                );
                body.run_nodes().await;
                if let Some((failed, kind, message)) = body.first_failure.clone() {
                    break Err(NodeError::Body { node_id: body.scoped(failed), kind, message });
                }
                let outputs: Map<String, Value> = body
                    .plan
                    .nodes
                    .iter()
                    .zip(&body.outputs)
                    .filter_map(|(n, o)| Some((n.id.clone(), o.as_ref()?.to_input_value())))
                    .collect();
                if let Some(output) = repeat::after_iteration(&repeat.config, iteration, &outputs) {
                    break Ok((output, Usage::default()));
                }
                previous = Value::Object(outputs);
                iteration += 1;
            };
            (i, result, started.elapsed().as_millis() as u64)
        });
        let handle = self.tasks.spawn(work);
        self.task_nodes.insert(handle.id(), i);
        self.state[i] = NodeState::Running;
    }

    /// Spawns `conclave` node `i`: the conclave it runs, as a run of that conclave's
    /// plan whose events name its nodes under `i`'s id (`lane/security`), with the run
    /// input, its first nodes also receiving `i`'s upstream outputs.
    pub(super) async fn start_child(&mut self, i: usize) {
        let Some(child) = self.plan.nodes[i].child.clone() else {
            return self.finish(i, Err(NodeError::Internal("conclave node without a plan".into())), 0).await;
        };
        self.bus.emit(EventKind::NodeStarted { node_id: self.scoped(i), input: None }).await;
        let scope = format!("{}/", self.scoped(i));
        let inputs = self.upstream_outputs(i, false);
        let (agents, input, limits, cache) =
            (self.agents.clone(), self.input.clone(), self.limits.clone(), self.cache.clone());
        let work = Box::pin(async move {
            let started = Instant::now();
            let mut run = Run::new(child, agents, input, limits, cache, scope, inputs);
            run.run_nodes().await;
            let waiting = run.state.iter().position(|s| *s == NodeState::Waiting);
            let result = match (waiting, run.first_failure.clone()) {
                // Validation refuses such a child: a run never parks inside a node.
                (Some(w), _) => {
                    Err(NodeError::Internal(format!("`{}` cannot wait inside a conclave node", run.scoped(w))))
                }
                (None, Some((failed, kind, message))) => {
                    Err(NodeError::Body { node_id: run.scoped(failed), kind, message })
                }
                (None, None) => Ok((NodeOutput::Json(run.result()), Usage::default())),
            };
            (i, result, started.elapsed().as_millis() as u64)
        });
        let handle = self.tasks.spawn(work);
        self.task_nodes.insert(handle.id(), i);
        self.state[i] = NodeState::Running;
    }

    /// The run's result: its output node's value, or every output node's by id.
    pub(super) fn result(&self) -> Value {
        let mut results: Vec<(String, Value)> = self
            .plan
            .nodes
            .iter()
            .zip(&self.outputs)
            .filter(|(n, _)| n.kind == NodeKind::Output)
            .filter_map(|(n, o)| Some((n.id.clone(), o.as_ref()?.to_input_value())))
            .collect();
        match results.len() {
            0 => Value::Null,
            1 => results.remove(0).1,
            _ => Value::Object(results.into_iter().collect()),
        }
    }

    /// Parks a run that can go no further until people decide at its `waiting`
    /// approval nodes: `run_waiting`, written before the run's task ends, so the run
    /// is `waiting` and no process holds it.
    pub(super) async fn park(self, waiting: Vec<String>) -> RunOutcome {
        self.bus.emit(EventKind::RunWaiting { nodes: waiting.clone() }).await;
        self.bus.flush().await;
        let outputs: BTreeMap<String, NodeOutput> =
            self.plan.nodes.iter().zip(&self.outputs).filter_map(|(n, o)| Some((n.id.clone(), o.clone()?))).collect();
        RunOutcome {
            run_id: self.bus.run_id().to_string(),
            status: RunStatus::Waiting,
            failed_node: None,
            error_kind: None,
            error: Some(format!("waiting for a decision at {}", waiting.join(", "))),
            outputs,
            result: Value::Null,
        }
    }

    /// Asks for a decision at approval node `i`: `approval_requested`, and the node
    /// waits; the run parks once nothing else can run.
    pub(super) async fn request_approval(&mut self, i: usize) {
        let node = &self.plan.nodes[i];
        let config = node.approval.clone().unwrap_or_default();
        let expires_ms = config.timeout_secs.map(|s| now_ms().saturating_add(s.saturating_mul(1000)));
        let event = EventKind::ApprovalRequested { node_id: self.scoped(i), prompt: config.prompt, expires_ms };
        self.bus.emit(event).await;
        self.state[i] = NodeState::Waiting;
    }
}
