//! How a loop node runs: its body (a plan of its own) once per iteration, the body's
//! first nodes receiving the loop's inputs and, under the loop's id, the iteration's
//! number and the previous iteration's outputs; after each iteration the loop's
//! predicate is tested on the body's outputs (each under its node's id). The body's
//! events name their nodes `loop/<iteration>/<node>`, so every iteration is kept.
//!
//! The loop's output says how it ended, for the next node to read:
//! `{"outcome": "done" | "exhausted", "iterations": N, "last": {<body outputs>}}`.
//! Running out of iterations is the outcome `exhausted`, not a failure; a body node
//! that fails fails the loop.

use conclave_shared::{LoopConfig, NodeOutput, NodeState, NodeSummary};
use serde_json::{Map, Value, json};

use crate::plan::Plan;

/// Where an iteration of loop `loop_id` puts its nodes' events: `loop_id/iteration/`.
pub fn iteration_scope(outer_scope: &str, loop_id: &str, iteration: u32) -> String {
    format!("{outer_scope}{loop_id}/{iteration}/")
}

/// What the body's first nodes see under the loop's id in iteration `iteration`.
pub fn iteration_input(iteration: u32, previous: &Value) -> Value {
    json!({"iteration": iteration, "previous": previous})
}

/// How the loop ends after an iteration with `outputs`: its output, or `None` to
/// run another iteration.
pub fn after_iteration(config: &LoopConfig, iteration: u32, outputs: &Map<String, Value>) -> Option<NodeOutput> {
    let outputs = Value::Object(outputs.clone());
    let outcome = if config.until.holds(&outputs) {
        "done"
    } else if iteration >= config.max_iterations {
        "exhausted"
    } else {
        return None;
    };
    Some(NodeOutput::Json(json!({"outcome": outcome, "iterations": iteration, "last": outputs})))
}

/// The last iteration of loop `scope``loop_id` that a run's stored nodes show whole
/// (every node of `body` succeeded in it, and in each iteration before), with the
/// body's outputs in it: where a run taken up again goes on from.
pub fn completed(scope: &str, loop_id: &str, body: &Plan, stored: &[NodeSummary]) -> Option<(u32, Map<String, Value>)> {
    let mut last = None;
    for iteration in 1.. {
        let prefix = iteration_scope(scope, loop_id, iteration);
        let outputs: Option<Map<String, Value>> = body
            .nodes
            .iter()
            .map(|node| {
                let entry = stored.iter().find(|n| n.node_id == format!("{prefix}{}", node.id))?;
                let output = entry.output.as_ref().filter(|_| entry.state == NodeState::Succeeded)?;
                Some((node.id.clone(), output.to_input_value()))
            })
            .collect();
        match outputs {
            Some(outputs) => last = Some((iteration, outputs)),
            None => return last,
        }
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;
    use conclave_shared::{Predicate, PredicateOp};

    #[test]
    fn a_loop_ends_on_its_predicate_or_exhausts_its_iterations() {
        let config = LoopConfig {
            body: vec!["verify".into()],
            until: Predicate { pointer: "/verify/confirmed".into(), op: PredicateOp::Equals, value: Some(json!(true)) },
            max_iterations: 2,
        };
        let outputs = |confirmed: bool| {
            let mut m = Map::new();
            m.insert("verify".into(), json!({"confirmed": confirmed}));
            m
        };
        assert_eq!(after_iteration(&config, 1, &outputs(false)), None);
        assert_eq!(
            after_iteration(&config, 1, &outputs(true)),
            Some(NodeOutput::Json(
                json!({"outcome": "done", "iterations": 1, "last": {"verify": {"confirmed": true}}})
            ))
        );
        assert_eq!(
            after_iteration(&config, 2, &outputs(false)),
            Some(NodeOutput::Json(
                json!({"outcome": "exhausted", "iterations": 2, "last": {"verify": {"confirmed": false}}})
            ))
        );
        assert_eq!(iteration_scope("", "verify", 2), "verify/2/");
        assert_eq!(iteration_scope("outer/1/", "verify", 3), "outer/1/verify/3/");
    }
}
