//! The checks of `conclave` nodes: the conclave each names is a file of the catalog,
//! and no conclave reaches itself through them, directly or through others (the
//! shortest such path is reported, found with petgraph over the catalog's
//! references).

use conclave_shared::{Diagnostic, NodeKind};
use petgraph::algo::astar;
use petgraph::graph::{DiGraph, NodeIndex};
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;

use super::context::CatalogContext;
use super::ids::{is_valid_id, list_ids};
use super::pointer;
use super::views::{NodeView, did_you_mean};

/// The conclaves a conclave file's `conclave` nodes name, read from its raw JSON.
fn references(document: &Value) -> Vec<String> {
    let nodes = document.get("nodes").and_then(Value::as_array).into_iter().flatten();
    nodes.filter_map(|n| n.pointer("/conclave/id")?.as_str().map(str::to_string)).collect()
}

/// The conclave `id` of the catalog in `dir`, as JSON, if it exists and parses.
fn read(dir: &Path, id: &str) -> Option<Value> {
    if !is_valid_id(id) {
        return None;
    }
    let text = std::fs::read_to_string(dir.join(format!("{id}.conclave.json"))).ok()?;
    serde_json::from_str(&text).ok()
}

/// Checks each `conclave` node of `document` (whose id is `own_id`).
pub(crate) fn check_children(document: &Value, nodes: &[NodeView], ctx: &CatalogContext, out: &mut Vec<Diagnostic>) {
    let Some(dir) = ctx.catalog.as_deref() else { return };
    let own_id = document.get("id").and_then(Value::as_str).unwrap_or_default();
    let references = References::from(dir, own_id, document);
    for node in nodes.iter().filter(|n| n.kind == Some(NodeKind::Conclave)) {
        let Some(child) = node.value.pointer("/conclave/id").and_then(Value::as_str) else { continue };
        let at = pointer(&pointer(&node.path(), "conclave"), "id");
        if child != own_id && read(dir, child).is_none() {
            let known = list_ids(dir);
            let help = match did_you_mean(child, known.iter().map(String::as_str)) {
                Some(near) => format!("did you mean `{near}`?"),
                None => format!("conclaves in {}: {}", dir.display(), known.join(", ")),
            };
            let message = format!("node runs conclave `{child}`, which is not in the catalog");
            out.push(Diagnostic::error("unknown-conclave", node.subject(), at, message).with_help(help));
            continue;
        }
        let waits = read(dir, child).is_some_and(|d| {
            d.get("nodes").and_then(Value::as_array).into_iter().flatten().any(|n| n["kind"] == "approval")
        });
        if waits && child != own_id {
            out.push(
                Diagnostic::error(
                    "approval-in-child",
                    node.subject(),
                    at.clone(),
                    format!(
                        "conclave `{child}` has an approval node, and a conclave a node runs cannot wait for a person"
                    ),
                )
                .with_help("move the approval into this conclave, after this node"),
            );
        }
        if let Some(path) = references.path_back(child) {
            out.push(
                Diagnostic::error(
                    "conclave-cycle",
                    node.subject(),
                    at,
                    format!("conclave `{own_id}` reaches itself: {}", path.join(" -> ")),
                )
                .with_help("a conclave cannot run itself, directly or through others: remove one of these nodes"),
            );
        }
    }
}

/// Which conclaves run which, from `own_id` through every file it reaches.
struct References {
    graph: DiGraph<String, ()>,
    index: HashMap<String, NodeIndex>,
    own: NodeIndex,
}

impl References {
    fn from(dir: &Path, own_id: &str, document: &Value) -> References {
        let mut graph = DiGraph::new();
        let mut index = HashMap::new();
        let own = graph.add_node(own_id.to_string());
        index.insert(own_id.to_string(), own);
        let mut pending = vec![(own, references(document))];
        while let Some((from, children)) = pending.pop() {
            for child in children {
                let to = match index.get(&child) {
                    Some(&to) => to,
                    None => {
                        let to = graph.add_node(child.clone());
                        index.insert(child.clone(), to);
                        pending.push((to, read(dir, &child).map(|d| references(&d)).unwrap_or_default()));
                        to
                    }
                };
                graph.update_edge(from, to, ());
            }
        }
        References { graph, index, own }
    }

    /// The shortest path `own -> child -> ... -> own`, when `child` leads back.
    fn path_back(&self, child: &str) -> Option<Vec<String>> {
        let &start = self.index.get(child)?;
        let (_, path) = astar(&self.graph, start, |n| n == self.own, |_| 1, |_| 0)?;
        let names = path.iter().map(|&n| self.graph[n].clone());
        Some(std::iter::once(self.graph[self.own].clone()).chain(names).collect())
    }
}
