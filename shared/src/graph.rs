//! The graph rules of a conclave, in one place: which edges may exist, cycles (with
//! the shortest path that closes each one), and what the triggers reach. Validation
//! on the server and the editor's drag-to-connect both apply these.

use std::collections::{HashMap, VecDeque};

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
/// the conclave's edge list.
#[derive(Debug, Clone, Default)]
pub struct Graph {
    successors: Vec<Vec<(usize, usize)>>,
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
        Graph { successors: vec![Vec::new(); n] }
    }

    /// Adds the edge `from -> to`, labelled `edge`.
    pub fn add_edge(&mut self, from: usize, to: usize, edge: usize) {
        self.successors[from].push((to, edge));
    }

    /// Which nodes can be reached from `starts` (the starts included).
    pub fn reachable(&self, starts: impl IntoIterator<Item = usize>) -> Vec<bool> {
        let mut seen = vec![false; self.successors.len()];
        let mut stack: Vec<usize> = starts.into_iter().collect();
        while let Some(n) = stack.pop() {
            if !std::mem::replace(&mut seen[n], true) {
                stack.extend(self.successors[n].iter().map(|&(t, _)| t));
            }
        }
        seen
    }

    /// One cycle per strongly connected component that has one: the shortest cycle
    /// through the component's lowest-numbered node, following edges in edge order.
    /// Cycles come in the order of their start nodes.
    pub fn cycles(&self) -> Vec<Cycle> {
        let mut components = self.strongly_connected();
        components.retain(|c| c.len() > 1 || self.successors[c[0]].iter().any(|&(t, _)| t == c[0]));
        for c in &mut components {
            c.sort_unstable();
        }
        components.sort_by_key(|c| c[0]);
        components.iter().map(|c| self.shortest_cycle(c)).collect()
    }

    /// Tarjan's algorithm, iteratively, so deep graphs cannot overflow the stack.
    fn strongly_connected(&self) -> Vec<Vec<usize>> {
        let n = self.successors.len();
        let (mut index, mut low) = (vec![usize::MAX; n], vec![0; n]);
        let (mut on_stack, mut stack, mut components) = (vec![false; n], Vec::new(), Vec::new());
        let mut next = 0;
        for root in 0..n {
            if index[root] != usize::MAX {
                continue;
            }
            // Each frame: a node and how many of its successors have been looked at.
            let mut frames = vec![(root, 0usize)];
            (index[root], low[root], next) = (next, next, next + 1);
            stack.push(root);
            on_stack[root] = true;
            while let Some(&mut (v, ref mut i)) = frames.last_mut() {
                if let Some(&(w, _)) = self.successors[v].get(*i) {
                    *i += 1;
                    if index[w] == usize::MAX {
                        (index[w], low[w], next) = (next, next, next + 1);
                        stack.push(w);
                        on_stack[w] = true;
                        frames.push((w, 0));
                    } else if on_stack[w] {
                        low[v] = low[v].min(index[w]);
                    }
                    continue;
                }
                frames.pop();
                if let Some(&(parent, _)) = frames.last() {
                    low[parent] = low[parent].min(low[v]);
                }
                if low[v] == index[v] {
                    let mut component = Vec::new();
                    while let Some(w) = stack.pop() {
                        on_stack[w] = false;
                        component.push(w);
                        if w == v {
                            break;
                        }
                    }
                    components.push(component);
                }
            }
        }
        components
    }

    /// Breadth-first search from the component's first node back to itself.
    fn shortest_cycle(&self, component: &[usize]) -> Cycle {
        let start = component[0];
        let mut parent: HashMap<usize, usize> = HashMap::new();
        let mut queue = VecDeque::from([start]);
        while let Some(n) = queue.pop_front() {
            let mut edges = self.successors[n].clone();
            edges.sort_by_key(|&(_, e)| e);
            for (next, edge) in edges {
                if next == start {
                    let mut path = vec![n];
                    let mut cur = n;
                    while cur != start {
                        cur = parent[&cur];
                        path.push(cur);
                    }
                    path.reverse();
                    path.push(start);
                    return Cycle { path, closing_edge: edge };
                }
                if component.binary_search(&next).is_ok() && !parent.contains_key(&next) {
                    parent.insert(next, n);
                    queue.push_back(next);
                }
            }
        }
        Cycle { path: vec![start, start], closing_edge: 0 }
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
