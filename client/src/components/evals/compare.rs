//! Two evals side by side in the Evals panel: the differences of precision, recall
//! and F1 (the later eval less the earlier), then each eval's headline figures and
//! charts.

use conclave_shared::eval::StoredEval;
use leptos::prelude::*;

use super::charts::{AddsChart, SupportChart};
use super::figures::{Headline, date, figure, signed};

/// `a` (the earlier eval) and `b` side by side, with B − A.
#[component]
pub fn SideBySide(a: StoredEval, b: StoredEval) -> impl IntoView {
    let (x, y) = (&a.summary, &b.summary);
    let figures = [
        ("precision", "Precision", x.precision, y.precision),
        ("recall", "Recall", x.recall, y.recall),
        ("f1", "F1", x.f1, y.f1),
    ];
    let deltas = figures
        .into_iter()
        .map(|(name, label, before, after)| {
            view! {
                <tr data-testid="eval-delta" data-figure=name>
                    <th>{label}</th>
                    <td class="num">{figure(before)}</td>
                    <td class="num">{figure(after)}</td>
                    <td class="num delta" data-testid="eval-delta-value" class:up={after > before} class:down={after < before}>
                        {signed(after - before)}
                    </td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <div class="eval-compare" data-testid="eval-compare">
            <table class="eval-deltas" data-testid="eval-deltas">
                <thead><tr><th></th><th>"A"</th><th>"B"</th><th>"B − A"</th></tr></thead>
                <tbody>{deltas}</tbody>
            </table>
            <div class="eval-sides">
                <Side eval=a name="A"/>
                <Side eval=b name="B"/>
            </div>
        </div>
    }
}

/// One of the two: when and on what it ran, its figures and its charts.
#[component]
fn Side(eval: StoredEval, name: &'static str) -> impl IntoView {
    let StoredEval { id, dataset, created_ms, summary, .. } = eval;
    let (levels, nodes) = (summary.by_support.clone(), summary.by_node.clone());
    view! {
        <section class="eval-side" data-testid="eval-side" data-eval-id=id>
            <h4>{format!("{name}: {dataset}, {}", date(created_ms))}</h4>
            <Headline summary=summary/>
            <SupportChart levels=levels/>
            <AddsChart nodes=nodes/>
        </section>
    }
}
