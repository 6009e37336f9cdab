//! Running from a node: re-run one node and everything downstream of it, and take
//! every other node's output from an earlier run of the same conclave.
//!
//! The earlier run is checked before anything starts: it must be of this conclave,
//! the node must exist, and every node whose output is reused must have succeeded
//! there and be defined the same way now as in that run's conclave snapshot (the same
//! kind, the same agent settings, the same upstream nodes), so that its earlier output
//! is what it would produce again. Triggers are never reused: they hand on the run
//! input, which is the earlier one unless the caller gives another.

use conclave_shared::graph::Graph;
use conclave_shared::{Conclave, Node, NodeKind, NodeOutput, NodeState, RunRecord};
use std::collections::HashMap;
use std::sync::Arc;

use crate::start_error::StartError;

/// Run from `from_node`, reusing the outputs of `earlier` for every node that is not
/// downstream of it.
#[derive(Debug, Clone)]
pub struct Reuse {
    /// The node to re-run, with everything downstream of it.
    pub from_node: String,
    /// The earlier run of the same conclave.
    pub earlier: Arc<RunRecord>,
}

/// What a run takes from the earlier run.
#[derive(Debug, Clone, Default)]
pub struct Reused {
    /// The earlier run.
    pub from_run: String,
    /// The outputs taken, by node id.
    pub nodes: HashMap<String, ReusedNode>,
}

/// One node's output and input in the earlier run.
#[derive(Debug, Clone, PartialEq)]
pub struct ReusedNode {
    /// Its output there.
    pub output: NodeOutput,
    /// Its input there.
    pub input: Option<String>,
}

/// Which nodes of `conclave` are re-run when running from `from` (by position in
/// `conclave.nodes`): `from` and everything downstream of it.
pub fn rerun_set(conclave: &Conclave, from: usize) -> Vec<bool> {
    let index: HashMap<&str, usize> = conclave.nodes.iter().enumerate().map(|(i, n)| (n.id.as_str(), i)).collect();
    let mut graph = Graph::new(conclave.nodes.len());
    for (i, edge) in conclave.edges.iter().enumerate() {
        if let (Some(&a), Some(&b)) = (index.get(edge.from.as_str()), index.get(edge.to.as_str())) {
            graph.add_edge(a, b, i);
        }
    }
    graph.reachable([from])
}

/// Checks `reuse` against the conclave about to run and collects the outputs it
/// takes, or says which node stands in the way and what to do.
pub fn resolve(conclave: &Conclave, reuse: &Reuse) -> Result<Reused, StartError> {
    let earlier = reuse.earlier.as_ref();
    let run_id = &earlier.summary.id;
    if earlier.conclave.id != conclave.id {
        return Err(StartError::ReuseOtherConclave {
            run_id: run_id.clone(),
            run_conclave: earlier.conclave.id.clone(),
            conclave: conclave.id.clone(),
        });
    }
    let Some(from) = conclave.nodes.iter().position(|n| n.id == reuse.from_node) else {
        return Err(StartError::UnknownFromNode { node_id: reuse.from_node.clone(), conclave: conclave.id.clone() });
    };
    if let Some(owner) = conclave.loop_of(&reuse.from_node) {
        return Err(StartError::FromLoopBody { node_id: reuse.from_node.clone(), loop_id: owner.id.clone() });
    }
    let rerun = rerun_set(conclave, from);
    let mut nodes = HashMap::new();
    // A loop's body runs with its loop, whose output is what is reused.
    let outside = |n: &&Node| conclave.loop_of(&n.id).is_none();
    let kept =
        conclave.nodes.iter().zip(&rerun).filter(|(n, rerun)| !**rerun && n.kind != NodeKind::Trigger && outside(n));
    for (node, _) in kept {
        if let Some(what) = difference(conclave, &earlier.conclave, &node.id) {
            return Err(StartError::ReuseChanged { node_id: node.id.clone(), run_id: run_id.clone(), what });
        }
        let before = earlier.nodes.iter().find(|n| n.node_id == node.id);
        let output = before.filter(|n| n.state == NodeState::Succeeded).and_then(|n| n.output.clone());
        let (Some(before), Some(output)) = (before, output) else {
            return Err(StartError::ReuseNotSucceeded {
                node_id: node.id.clone(),
                run_id: run_id.clone(),
                state: before.map_or(NodeState::Queued, |n| n.state),
            });
        };
        nodes.insert(node.id.clone(), ReusedNode { output, input: before.input.clone() });
    }
    Ok(Reused { from_run: run_id.clone(), nodes })
}

/// How node `id` differs between the conclave now and as it ran then, if it does.
fn difference(now: &Conclave, then: &Conclave, id: &str) -> Option<&'static str> {
    let (Some(a), Some(b)) = (now.node(id), then.node(id)) else { return Some("it was not in that run") };
    if a.kind != b.kind {
        Some("its kind is different")
    } else if a.agent != b.agent {
        Some("its agent settings are different")
    } else if (&a.route, &a.command, &a.repeat) != (&b.route, &b.command, &b.repeat) {
        Some("its settings are different")
    } else if upstream(now, id) != upstream(then, id) {
        Some("its upstream nodes are different")
    } else {
        None
    }
}

/// The distinct upstream node ids of `id`, sorted.
fn upstream<'a>(conclave: &'a Conclave, id: &'a str) -> Vec<&'a str> {
    let mut ids: Vec<&str> = conclave.upstream_of(id).collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}
