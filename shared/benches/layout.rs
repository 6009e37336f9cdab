//! Auto-layout at the sizes authors reach: layered graphs of 30, 300 and 3,000 nodes
//! (target: under 100 ms for 300 nodes), the median of many runs on one thread.
//!
//! Run with `cargo bench -p conclave-shared --bench layout`.

use conclave_shared::layout::{Spacing, layered};
use conclave_shared::{Conclave, Edge, Node, NodeKind};
use std::time::{Duration, Instant};

/// A conclave of `n` nodes in layers of about ten, each node fed by one to three nodes
/// of earlier layers (mostly the one before, sometimes two or three back), listed in
/// a shuffled order so the layout has crossings to remove.
fn layered_graph(n: usize, seed: u64) -> Conclave {
    let mut rng = fastrand::Rng::with_seed(seed);
    let width = 10;
    let layer_of = |i: usize| i / width;
    let mut edges = Vec::new();
    for b in width..n {
        for _ in 0..rng.usize(1..4) {
            let back = [1, 1, 1, 1, 2, 3][rng.usize(0..6)].min(layer_of(b));
            let first = (layer_of(b) - back) * width;
            let a = rng.usize(first..first + width);
            if !edges.contains(&(a, b)) {
                edges.push((a, b));
            }
        }
    }
    let mut order: Vec<usize> = (0..n).collect();
    rng.shuffle(&mut order);
    Conclave {
        version: 1,
        id: format!("bench-{n}"),
        name: format!("{n} nodes"),
        description: String::new(),
        settings: Default::default(),
        nodes: order
            .iter()
            .map(|i| Node { label: String::new(), ..Node::new(format!("node-{i}"), NodeKind::Agent) })
            .collect(),
        edges: edges
            .iter()
            .map(|&(a, b)| Edge { from: format!("node-{a}"), to: format!("node-{b}"), case: None })
            .collect(),
    }
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort_unstable();
    times[times.len() / 2]
}

fn main() {
    println!("auto-layout, median of runs:");
    for (n, runs) in [(30, 501), (300, 101), (3_000, 21)] {
        let conclave = layered_graph(n, 42);
        let times: Vec<Duration> = (0..runs)
            .map(|_| {
                let start = Instant::now();
                let positions = layered(&conclave, Spacing::default(), |_| 100);
                let took = start.elapsed();
                assert_eq!(positions.len(), n);
                took
            })
            .collect();
        let target = if n == 300 { " (target < 100 ms)" } else { "" };
        println!(
            "  {n:>5} nodes, {:>5} edges: {:>10.3} ms{target}",
            conclave.edges.len(),
            median(times).as_secs_f64() * 1000.0
        );
    }
}
