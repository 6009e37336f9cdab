//! Auto-layout of a conclave: a layered left-to-right placement of its nodes.
//!
//! Each weakly connected part of the graph is laid out on its own and the parts are
//! stacked top to bottom. Within a part, a node's layer (its column) is the length of
//! the longest path from a source to it, so every edge points right; long edges get
//! virtual nodes in the layers they cross, and a few barycenter sweeps order each
//! layer to reduce crossings (the ordering with the fewest crossings wins). Cards are
//! then stacked in each column with even gaps, each column centred on the tallest.
//! The result depends only on the input: no hashing order, no randomness. The graph
//! work (parts, components, topological order) is petgraph's.

use std::collections::{BTreeMap, HashMap};

use petgraph::algo::kosaraju_scc;
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::unionfind::UnionFind;

use crate::conclave::{Conclave, Node, Position};

/// Sizes and gaps of a layout, in canvas pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spacing {
    /// Width of every card.
    pub width: i32,
    /// Horizontal gap between columns.
    pub column_gap: i32,
    /// Vertical gap between cards in a column.
    pub row_gap: i32,
    /// Vertical gap between the unconnected parts of the graph.
    pub part_gap: i32,
    /// Where the top-left card goes.
    pub origin: Position,
}

impl Default for Spacing {
    fn default() -> Self {
        Spacing { width: 200, column_gap: 100, row_gap: 40, part_gap: 80, origin: Position { x: 0, y: 0 } }
    }
}

/// The position of every node of `conclave`, by id, laid out left to right in layers.
/// `height` gives each card's height (cards of one column never overlap). Edges with
/// unknown ends are ignored; an edge that closes a cycle is ignored for layering, so a
/// broken conclave still gets a layout. When ids repeat, the first node keeps the id.
pub fn layered(conclave: &Conclave, spacing: Spacing, height: impl Fn(&Node) -> i32) -> BTreeMap<String, Position> {
    let mut index: HashMap<&str, usize> = HashMap::new();
    let mut nodes: Vec<&Node> = Vec::new();
    for node in &conclave.nodes {
        if !index.contains_key(node.id.as_str()) {
            index.insert(&node.id, nodes.len());
            nodes.push(node);
        }
    }
    let mut edges: Vec<(usize, usize)> = conclave
        .edges
        .iter()
        .filter_map(|e| Some((*index.get(e.from.as_str())?, *index.get(e.to.as_str())?)))
        .filter(|(a, b)| a != b)
        .collect();
    edges.sort_unstable();
    edges.dedup();
    let heights: Vec<i32> = nodes.iter().map(|n| height(n).max(1)).collect();
    let mut out = BTreeMap::new();
    let mut top = spacing.origin.y;
    for part in parts(nodes.len(), &edges) {
        let placed = Part::new(&part, &edges).arrange();
        let bottom = place(&placed, &heights, spacing, top, |v, p| {
            out.insert(nodes[v].id.clone(), p);
        });
        top = bottom + spacing.part_gap;
    }
    out
}

/// The weakly connected parts of a graph of `n` nodes, each a sorted list of node
/// indices, in the order of their lowest node.
fn parts(n: usize, edges: &[(usize, usize)]) -> Vec<Vec<usize>> {
    let mut sets = UnionFind::<usize>::new(n);
    for &(a, b) in edges {
        sets.union(a, b);
    }
    // Nodes come in order, so a part is first met at its lowest node.
    let mut part_of_label: HashMap<usize, usize> = HashMap::new();
    let mut parts: Vec<Vec<usize>> = Vec::new();
    for (v, label) in sets.into_labeling().into_iter().enumerate() {
        let part = *part_of_label.entry(label).or_insert_with(|| {
            parts.push(Vec::new());
            parts.len() - 1
        });
        parts[part].push(v);
    }
    parts
}

/// One connected part, with virtual nodes on long edges: vertices `0..real.len()` are
/// the part's nodes, the rest are virtual.
struct Part {
    /// The node index of each real vertex.
    real: Vec<usize>,
    /// Each vertex's layer.
    layer: Vec<usize>,
    /// Each vertex's neighbours in the layer before and the layer after.
    preds: Vec<Vec<usize>>,
    succs: Vec<Vec<usize>>,
}

/// A part's vertices in layers, in their final order.
struct Arranged {
    real: Vec<usize>,
    layers: Vec<Vec<usize>>,
}

impl Part {
    fn new(members: &[usize], edges: &[(usize, usize)]) -> Part {
        let local: HashMap<usize, usize> = members.iter().enumerate().map(|(i, &v)| (v, i)).collect();
        let n = members.len();
        let mut out_edges = vec![Vec::new(); n];
        for &(a, b) in edges {
            if let (Some(&a), Some(&b)) = (local.get(&a), local.get(&b)) {
                out_edges[a].push(b);
            }
        }
        let layer = longest_path_layers(&out_edges);
        let mut part = Part { real: members.to_vec(), layer, preds: vec![Vec::new(); n], succs: vec![Vec::new(); n] };
        for (a, targets) in out_edges.iter().enumerate() {
            for &b in targets {
                // Edges that point backwards closed a cycle; they do not shape the layout.
                if part.layer[b] > part.layer[a] {
                    part.chain(a, b);
                }
            }
        }
        part
    }

    /// Links `a` to `b` through one virtual vertex per layer between them.
    fn chain(&mut self, a: usize, b: usize) {
        let mut prev = a;
        for l in self.layer[a] + 1..self.layer[b] {
            let v = self.layer.len();
            self.layer.push(l);
            self.preds.push(vec![prev]);
            self.succs.push(Vec::new());
            self.succs[prev].push(v);
            prev = v;
        }
        self.succs[prev].push(b);
        self.preds[b].push(prev);
    }

    /// Orders each layer by barycenter sweeps, keeping the order with fewest crossings.
    fn arrange(self) -> Arranged {
        const SWEEPS: usize = 4;
        let depth = self.layer.iter().max().map_or(0, |&l| l + 1);
        let mut layers: Vec<Vec<usize>> = vec![Vec::new(); depth];
        for (v, &l) in self.layer.iter().enumerate() {
            layers[l].push(v);
        }
        let mut pos = vec![0usize; self.layer.len()];
        let renumber = |layer: &[usize], pos: &mut [usize]| {
            for (i, &v) in layer.iter().enumerate() {
                pos[v] = i;
            }
        };
        for layer in &layers {
            renumber(layer, &mut pos);
        }
        let mut best = (self.crossings(&layers, &pos), layers.clone());
        for _ in 0..SWEEPS {
            if best.0 == 0 {
                break;
            }
            for layer in layers.iter_mut().skip(1) {
                sort_by_barycenter(layer, &self.preds, &pos);
                renumber(layer, &mut pos);
            }
            for layer in layers.iter_mut().rev().skip(1) {
                sort_by_barycenter(layer, &self.succs, &pos);
                renumber(layer, &mut pos);
            }
            let crossings = self.crossings(&layers, &pos);
            if crossings < best.0 {
                best = (crossings, layers.clone());
            }
        }
        Arranged { real: self.real, layers: best.1 }
    }

    /// How many edges cross between neighbouring layers, counted as inversions with a
    /// Fenwick tree in O(E log V).
    fn crossings(&self, layers: &[Vec<usize>], pos: &[usize]) -> usize {
        let mut total = 0;
        for pair in layers.windows(2) {
            let mut ends: Vec<(usize, usize)> =
                pair[0].iter().flat_map(|&u| self.succs[u].iter().map(move |&w| (pos[u], pos[w]))).collect();
            ends.sort_unstable();
            let mut tree = vec![0usize; pair[1].len() + 1];
            for (seen, &(_, w)) in ends.iter().enumerate() {
                // Earlier edges that end to the right of `w` cross this one.
                let mut not_greater = 0;
                let mut i = w + 1;
                while i > 0 {
                    not_greater += tree[i];
                    i -= i & i.wrapping_neg();
                }
                total += seen - not_greater;
                let mut i = w + 1;
                while i < tree.len() {
                    tree[i] += 1;
                    i += i & i.wrapping_neg();
                }
            }
        }
        total
    }
}

/// Sorts `layer` by the mean position of each vertex's neighbours (in `across`);
/// a vertex without neighbours keeps its place, and ties keep their order.
fn sort_by_barycenter(layer: &mut [usize], across: &[Vec<usize>], pos: &[usize]) {
    let mut keyed: Vec<(f64, usize, usize)> = layer
        .iter()
        .map(|&v| {
            let key = match across[v].len() {
                0 => pos[v] as f64,
                n => across[v].iter().map(|&w| pos[w] as f64).sum::<f64>() / n as f64,
            };
            (key, pos[v], v)
        })
        .collect();
    keyed.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    for (slot, (_, _, v)) in layer.iter_mut().zip(keyed) {
        *slot = v;
    }
}

/// Each node's layer: the length of the longest path from a source to it. Nodes are
/// taken in a topological order of the graph's strongly connected components (the
/// nodes of one component by index), so in a graph without cycles every edge points
/// forward; inside a cycle, an edge from a higher index to a lower one points
/// backwards and is left out, so a broken conclave still gets layers.
fn longest_path_layers(out_edges: &[Vec<usize>]) -> Vec<usize> {
    let n = out_edges.len();
    let mut graph = DiGraph::<(), ()>::with_capacity(n, n);
    for _ in 0..n {
        graph.add_node(());
    }
    for (a, targets) in out_edges.iter().enumerate() {
        for &b in targets {
            graph.add_edge(NodeIndex::new(a), NodeIndex::new(b), ());
        }
    }
    // Kosaraju gives the components in reverse topological order.
    let mut rank = vec![0usize; n];
    for (r, component) in kosaraju_scc(&graph).iter().rev().enumerate() {
        for v in component {
            rank[v.index()] = r;
        }
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_unstable_by_key(|&v| (rank[v], v));
    let mut layer = vec![0usize; n];
    for &v in &order {
        for &w in &out_edges[v] {
            if (rank[w], w) > (rank[v], v) {
                layer[w] = layer[w].max(layer[v] + 1);
            }
        }
    }
    layer
}

/// Gives the real nodes of `part` their positions, the part's top at `top`; returns
/// the part's bottom.
fn place(part: &Arranged, heights: &[i32], spacing: Spacing, top: i32, mut put: impl FnMut(usize, Position)) -> i32 {
    let column = |layer: &[usize]| -> Vec<usize> {
        layer.iter().filter(|&&v| v < part.real.len()).map(|&v| part.real[v]).collect()
    };
    let total = |nodes: &[usize]| -> i32 {
        nodes.iter().map(|&v| heights[v]).sum::<i32>() + spacing.row_gap * (nodes.len() as i32 - 1).max(0)
    };
    let columns: Vec<Vec<usize>> = part.layers.iter().map(|l| column(l)).collect();
    let tallest = columns.iter().map(|c| total(c)).max().unwrap_or(0);
    for (l, nodes) in columns.iter().enumerate() {
        let x = spacing.origin.x + l as i32 * (spacing.width + spacing.column_gap);
        let mut y = top + (tallest - total(nodes)) / 2;
        for &v in nodes {
            put(v, Position { x, y });
            y += heights[v] + spacing.row_gap;
        }
    }
    top + tallest
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conclave::{Edge, NodeKind};

    fn conclave(n: usize, edges: &[(usize, usize)]) -> Conclave {
        let node = |i: usize| Node { label: String::new(), ..Node::new(format!("n{i}"), NodeKind::Agent) };
        Conclave {
            version: 1,
            id: "t".into(),
            name: "t".into(),
            description: String::new(),
            settings: Default::default(),
            nodes: (0..n).map(node).collect(),
            edges: edges
                .iter()
                .map(|&(a, b)| Edge { from: format!("n{a}"), to: format!("n{b}"), case: None })
                .collect(),
        }
    }

    /// Cards of varied heights, so stacking has to use each one's own.
    fn height(node: &Node) -> i32 {
        80 + (node.id.len() as i32 % 3) * 25
    }

    fn layout(c: &Conclave) -> BTreeMap<String, Position> {
        layered(c, Spacing::default(), height)
    }

    /// A random acyclic graph: edges only from lower to higher indices.
    fn random_dag(n: usize, seed: u64) -> Conclave {
        let mut rng = fastrand::Rng::with_seed(seed);
        let mut edges = Vec::new();
        for b in 1..n {
            for _ in 0..rng.usize(0..3) {
                edges.push((rng.usize(0..b), b));
            }
        }
        conclave(n, &edges)
    }

    fn assert_sound(c: &Conclave, at: &BTreeMap<String, Position>) {
        assert_eq!(at.len(), c.nodes.len(), "every node is placed");
        let width = Spacing::default().width;
        for e in &c.edges {
            assert!(at[&e.from].x + width < at[&e.to].x, "{} -> {} points right: {at:?}", e.from, e.to);
        }
        for (i, a) in c.nodes.iter().enumerate() {
            for b in &c.nodes[i + 1..] {
                let (p, q) = (at[&a.id], at[&b.id]);
                let apart =
                    p.x + width <= q.x || q.x + width <= p.x || p.y + height(a) <= q.y || q.y + height(b) <= p.y;
                assert!(apart, "{} at {p:?} overlaps {} at {q:?}", a.id, b.id);
            }
        }
    }

    #[test]
    fn an_empty_conclave_has_an_empty_layout() {
        assert!(layout(&conclave(0, &[])).is_empty());
    }

    #[test]
    fn every_edge_points_right_and_no_cards_overlap() {
        for seed in 0..20 {
            let c = random_dag(40, seed);
            assert_sound(&c, &layout(&c));
        }
    }

    #[test]
    fn a_node_sits_in_the_layer_of_its_longest_path() {
        // 0 -> 1 -> 2 and the shortcut 0 -> 2: node 2 goes to the third column.
        let at = layout(&conclave(3, &[(0, 1), (1, 2), (0, 2)]));
        let step = Spacing::default().width + Spacing::default().column_gap;
        assert_eq!([at["n0"].x, at["n1"].x, at["n2"].x], [0, step, 2 * step]);
    }

    #[test]
    fn the_same_conclave_gets_the_same_layout() {
        let c = random_dag(120, 7);
        assert_eq!(layout(&c), layout(&c));
    }

    #[test]
    fn disconnected_parts_are_stacked_without_overlapping() {
        // Two chains and a lone node.
        let c = conclave(5, &[(0, 1), (2, 3)]);
        let at = layout(&c);
        assert_sound(&c, &at);
        assert_eq!((at["n0"].x, at["n2"].x, at["n4"].x), (0, 0, 0), "each part starts in the first column");
        assert!(at["n0"].y < at["n2"].y && at["n2"].y < at["n4"].y, "parts in the order of their first node: {at:?}");
    }

    #[test]
    fn barycenter_ordering_uncrosses_edges() {
        // Sources 0 and 1; their targets are listed the other way round.
        let at = layout(&conclave(4, &[(0, 3), (1, 2)]));
        assert!(at["n0"].y < at["n1"].y);
        assert!(at["n3"].y < at["n2"].y, "the targets follow their sources: {at:?}");
    }

    #[test]
    fn cycles_and_stray_edges_do_not_stop_the_layout() {
        let mut c = conclave(4, &[(0, 1), (1, 2), (2, 1), (3, 3)]);
        c.edges.push(Edge { from: "n0".into(), to: "gone".into(), case: None });
        let at = layout(&c);
        assert_eq!(at.len(), 4);
        assert!(at["n0"].x < at["n1"].x && at["n1"].x < at["n2"].x, "{at:?}");
    }

    #[test]
    fn columns_are_centred_on_the_tallest() {
        // A fan: one source, three targets, one sink.
        let at = layered(&conclave(5, &[(0, 1), (0, 2), (0, 3), (1, 4), (2, 4), (3, 4)]), Spacing::default(), |_| 100);
        assert_eq!([at["n1"].y, at["n2"].y, at["n3"].y], [0, 140, 280]);
        assert_eq!((at["n0"].y, at["n4"].y), (140, 140));
    }
}
