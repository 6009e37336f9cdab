//! The graph rules of a conclave, in one place: which edges may exist, cycles (with
//! the shortest path that closes each one), and what the triggers reach, on petgraph. Validation
//! on the server and the editor's drag-to-connect both apply these.

use std::collections::HashMap;

use petgraph::Direction;
use petgraph::algo::{dijkstra, kosaraju_scc};
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::{Dfs, EdgeRef, NodeFiltered};

use crate::conclave::{Conclave, NodeKind};

/// Why an edge cannot exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EdgeRule {
    /// The edge leads into a trigger, which only receives the run input.
    IntoTrigger,
    /// The edge leaves an output node, which ends the graph.
    FromOutput,
    /// The same edge exists already.
    Duplicate,
    /// The edge would close a cycle (including a node feeding itself).
    Cycle,
}

impl EdgeRule {
    /// What is wrong with the edge `from -> to`, in the words validation uses.
    pub fn message(self, from: &str, to: &str) -> String {
        match self {
            EdgeRule::IntoTrigger => {
                format!("edge `{from} -> {to}` leads into trigger `{to}`; a trigger only receives the run input")
            }
            EdgeRule::FromOutput => {
                format!("edge `{from} -> {to}` leaves output node `{from}`; an output node ends the graph")
            }
            EdgeRule::Duplicate => format!("edge `{from} -> {to}` appears more than once"),
            EdgeRule::Cycle => format!("edge `{from} -> {to}` would close a cycle; a conclave must be acyclic"),
        }
    }
}

/// The rule an edge between nodes of these kinds breaks, if any (unknown kinds break none).
pub fn kind_rule(from: Option<NodeKind>, to: Option<NodeKind>) -> Option<EdgeRule> {
    if to == Some(NodeKind::Trigger) {
        Some(EdgeRule::IntoTrigger)
    } else if from == Some(NodeKind::Output) {
        Some(EdgeRule::FromOutput)
    } else {
        None
    }
}

/// Why the editor cannot add `from -> to` to `conclave`, if it cannot.
pub fn edge_problem(conclave: &Conclave, from: &str, to: &str) -> Option<EdgeRule> {
    if from == to {
        return Some(EdgeRule::Cycle);
    }
    if conclave.edges.iter().any(|e| e.from == from && e.to == to) {
        return Some(EdgeRule::Duplicate);
    }
    let kind = |id: &str| conclave.node(id).map(|n| n.kind);
    if let Some(rule) = kind_rule(kind(from), kind(to)) {
        return Some(rule);
    }
    let index: HashMap<&str, usize> = conclave.nodes.iter().enumerate().map(|(i, n)| (n.id.as_str(), i)).collect();
    let mut graph = Graph::new(conclave.nodes.len());
    for (i, edge) in conclave.edges.iter().enumerate() {
        if let (Some(&a), Some(&b)) = (index.get(edge.from.as_str()), index.get(edge.to.as_str())) {
            graph.add_edge(a, b, i);
        }
    }
    // `to` reaching `from` means the new edge closes a cycle.
    match (index.get(to), index.get(from)) {
        (Some(&t), Some(&f)) if graph.reachable([t])[f] => Some(EdgeRule::Cycle),
        _ => None,
    }
}

/// A directed graph over node indices `0..n`, each edge labelled with its index in
/// the conclave's edge list (a petgraph graph underneath).
#[derive(Debug, Clone, Default)]
pub struct Graph {
    inner: DiGraph<(), usize>,
}

/// A cycle: the node path from its start back to it, and the edge that closes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cycle {
    /// Node indices, starting and ending at the same node.
    pub path: Vec<usize>,
    /// The index of the edge from the last-but-one node back to the start.
    pub closing_edge: usize,
}

impl Graph {
    /// A graph of `n` nodes and no edges.
    pub fn new(n: usize) -> Graph {
        let mut inner = DiGraph::with_capacity(n, n);
        for _ in 0..n {
            inner.add_node(());
        }
        Graph { inner }
    }

    /// Adds the edge `from -> to`, labelled `edge`.
    pub fn add_edge(&mut self, from: usize, to: usize, edge: usize) {
        self.inner.add_edge(NodeIndex::new(from), NodeIndex::new(to), edge);
    }

    /// Which nodes can be reached from `starts` (the starts included).
    pub fn reachable(&self, starts: impl IntoIterator<Item = usize>) -> Vec<bool> {
        let mut search = Dfs::empty(&self.inner);
        for start in starts {
            search.move_to(NodeIndex::new(start));
            while search.next(&self.inner).is_some() {}
        }
        (0..self.inner.node_count()).map(|n| search.discovered.contains(n)).collect()
    }

    /// One cycle per strongly connected component that has one: the shortest cycle
    /// through the component's lowest-numbered node (of two equally short, the one
    /// whose edges come first in the file). Cycles come in the order of their start
    /// nodes.
    pub fn cycles(&self) -> Vec<Cycle> {
        // Kosaraju's search is iterative, so deep graphs cannot overflow the stack.
        let mut components: Vec<Vec<usize>> =
            kosaraju_scc(&self.inner).into_iter().map(|c| c.into_iter().map(NodeIndex::index).collect()).collect();
        components.retain(|c| c.len() > 1 || self.inner.contains_edge(NodeIndex::new(c[0]), NodeIndex::new(c[0])));
        for c in &mut components {
            c.sort_unstable();
        }
        components.sort_by_key(|c| c[0]);
        components.iter().map(|c| self.shortest_cycle(c)).collect()
    }

    /// The shortest way from the component's first node back to itself: the distance
    /// of every member from it (breadth first, inside the component), then the
    /// nearest member with an edge back, then the way to it, step by step backwards.
    fn shortest_cycle(&self, component: &[usize]) -> Cycle {
        let start = NodeIndex::new(component[0]);
        let inside = |n: NodeIndex| component.binary_search(&n.index()).is_ok();
        let members = NodeFiltered::from_fn(&self.inner, inside);
        let distance = dijkstra(&members, start, None, |_| 1usize);
        // The edge `from -> to` of the lowest index whose source is `at` steps away.
        let first_edge_into = |to: NodeIndex, at: usize| {
            self.inner
                .edges_directed(to, Direction::Incoming)
                .filter(|e| inside(e.source()) && distance.get(&e.source()) == Some(&at))
                .min_by_key(|e| *e.weight())
        };
        let closing = (0..component.len()).find_map(|at| first_edge_into(start, at));
        let Some(closing) = closing else {
            return Cycle { path: vec![start.index(), start.index()], closing_edge: 0 };
        };
        let mut path = vec![start.index()];
        let mut at = closing.source();
        while at != start {
            path.push(at.index());
            let steps = distance[&at];
            at = first_edge_into(at, steps - 1).map_or(start, |e| e.source());
        }
        path.push(start.index());
        path.reverse();
        Cycle { path, closing_edge: *closing.weight() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(n: usize, edges: &[(usize, usize)]) -> Graph {
        let mut g = Graph::new(n);
        for (i, &(a, b)) in edges.iter().enumerate() {
            g.add_edge(a, b, i);
        }
        g
    }

    #[test]
    fn finds_the_shortest_cycle_of_each_component() {
        // 0 -> 1 -> 2 -> 0 and the shortcut 1 -> 0; separately 3 -> 3.
        let g = graph(5, &[(0, 1), (1, 2), (2, 0), (1, 0), (3, 3), (2, 4)]);
        assert_eq!(
            g.cycles(),
            vec![Cycle { path: vec![0, 1, 0], closing_edge: 3 }, Cycle { path: vec![3, 3], closing_edge: 4 }]
        );
        assert!(graph(3, &[(0, 1), (1, 2), (0, 2)]).cycles().is_empty());
    }

    #[test]
    fn deep_chains_do_not_overflow() {
        let n = 200_000;
        let edges: Vec<(usize, usize)> = (0..n - 1).map(|i| (i, i + 1)).chain([(n - 1, 0)]).collect();
        let cycles = graph(n, &edges).cycles();
        assert_eq!(cycles.len(), 1);
        assert_eq!(cycles[0].path.len(), n + 1);
    }

    #[test]
    fn reachability_follows_edges_only_forward() {
        let seen = graph(4, &[(0, 1), (1, 2)]).reachable([1]);
        assert_eq!(seen, vec![false, true, true, false]);
    }
}
