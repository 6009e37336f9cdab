//! One eval in the Evals panel: its headline figures with their intervals, the two
//! charts of the HTML report, and its cases (counts, and the issues it missed on
//! hover).

use conclave_shared::eval::{CaseDetail, StoredEval};
use leptos::prelude::*;

use super::charts::{AddsChart, SupportChart};
use super::figures::{Headline, date};

/// The chosen eval, whole.
#[component]
pub fn EvalDetail(eval: StoredEval) -> impl IntoView {
    let StoredEval { id, dataset, created_ms, summary, .. } = eval;
    let (levels, nodes, cases) = (summary.by_support.clone(), summary.by_node.clone(), summary.cases_detail.clone());
    view! {
        <div class="eval-detail" data-testid="eval-detail" data-eval-id=id>
            <h4>{format!("{dataset}, {}", date(created_ms))}</h4>
            <Headline summary=summary/>
            <div class="eval-charts">
                <SupportChart levels=levels/>
                <AddsChart nodes=nodes/>
            </div>
            <CaseTable cases=cases/>
        </div>
    }
}

/// Each case: how its review ended, its counts, and what it missed and added.
#[component]
fn CaseTable(cases: Vec<CaseDetail>) -> impl IntoView {
    let rows = cases
        .into_iter()
        .map(|case| {
            let missed: Vec<String> =
                case.missed.iter().map(|m| format!("{}:{} {}", m.file, m.line, m.description)).collect();
            let extra: Vec<String> =
                case.extra.iter().map(|f| format!("{}:{} {}", f.file, f.line, f.description)).collect();
            let failed = case.status != "succeeded";
            let status = match &case.error {
                Some(error) => format!("{}: {error}", case.status),
                None => case.status.clone(),
            };
            view! {
                <tr data-testid="eval-case" data-case-id=case.id.clone() class:failed=failed>
                    <td><code>{case.id.clone()}</code></td>
                    <td>{status}</td>
                    <td class="num">{case.counts.true_positives.to_string()}</td>
                    <td class="num">{case.counts.false_positives.to_string()}</td>
                    <td class="num">{case.counts.false_negatives.to_string()}</td>
                    <td class="num" title=missed.join("\n")>{missed.len().to_string()}</td>
                    <td class="num" title=extra.join("\n")>{extra.len().to_string()}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <table class="eval-cases" data-testid="eval-cases">
            <thead>
                <tr>
                    <th>"Case"</th><th>"Review"</th><th title="Findings that matched an issue">"TP"</th>
                    <th title="Findings that matched none">"FP"</th><th title="Issues no finding matched">"FN"</th>
                    <th>"Missed"</th><th>"Extra"</th>
                </tr>
            </thead>
            <tbody>{rows}</tbody>
        </table>
    }
}
