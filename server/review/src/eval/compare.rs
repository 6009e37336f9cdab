//! `conclave eval compare A.json B.json`: what changed between two evals of the same
//! dataset, figure by figure (B − A), each difference with a 95% interval from a
//! paired bootstrap over the cases both reviewed, and significant when the interval
//! leaves out 0.

use super::metrics::{FIGURES, Figure, paired_interval, round};
use super::summary::{Comparison, Counts, Delta, EvalSummary};

/// Compares two summaries; an error says why they cannot be compared.
pub fn compare(a: &EvalSummary, b: &EvalSummary) -> Result<Comparison, String> {
    let paired: Vec<(&str, Counts, Counts)> = a
        .cases_detail
        .iter()
        .filter_map(|ca| {
            b.cases_detail.iter().find(|cb| cb.id == ca.id).map(|cb| (ca.id.as_str(), ca.counts, cb.counts))
        })
        .collect();
    if paired.is_empty() {
        return Err("the two evals share no case id: compare evals of the same dataset".into());
    }
    let (ca, cb): (Vec<Counts>, Vec<Counts>) = paired.iter().map(|(_, x, y)| (*x, *y)).unzip();
    let mut deltas: Vec<Delta> = FIGURES.iter().map(|(name, figure)| delta(name, &ca, &cb, *figure)).collect();
    // Each node both evals have: its own recall.
    for node in a.by_node.iter().filter(|n| b.by_node.iter().any(|m| m.node == n.node)) {
        let of = |s: &EvalSummary| -> Vec<Counts> {
            paired
                .iter()
                .map(|(id, _, _)| {
                    s.cases_detail
                        .iter()
                        .find(|c| c.id == *id)
                        .and_then(|c| c.by_node.get(&node.node))
                        .map(|n| n.counts)
                        .unwrap_or_default()
                })
                .collect()
        };
        deltas.push(delta(&format!("{} recall", node.node), &of(a), &of(b), Counts::recall));
    }
    Ok(Comparison {
        a: format!("{} on {}", a.conclave, a.dataset),
        b: format!("{} on {}", b.conclave, b.dataset),
        paired_cases: paired.len(),
        deltas,
    })
}

fn delta(name: &str, a: &[Counts], b: &[Counts], figure: Figure) -> Delta {
    let total = |cases: &[Counts]| {
        let mut sum = Counts::default();
        cases.iter().for_each(|c| sum.add(*c));
        figure(&sum)
    };
    let (va, vb) = (total(a), total(b));
    let ci95 = paired_interval(a, b, figure);
    Delta {
        figure: name.to_string(),
        a: round(va),
        b: round(vb),
        delta: round(vb - va),
        ci95,
        significant: ci95.low > 0.0 || ci95.high < 0.0,
    }
}
