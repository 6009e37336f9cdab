//! An eval's figures as the Evals panel writes them: numbers to three places (and
//! differences with their sign), the day and time it was kept, and the headline
//! figures with their 95% intervals.

use conclave_shared::eval::{EvalSummary, Interval};
use conclave_shared::number::fixed;
use leptos::prelude::*;

use crate::run_view::dollars;

/// A figure (precision, recall, F1, what a node adds) to three places.
pub fn figure(value: f64) -> String {
    fixed(value, 3)
}

/// A difference to three places with its sign: `+0.125`, `-0.125`, `0.000`.
pub fn signed(value: f64) -> String {
    let text = fixed(value, 3);
    if text.starts_with('-') || text == "0.000" { text } else { format!("+{text}") }
}

/// When an eval was kept, in UTC to the second: `2026-11-26 20:07:31` (two evals
/// kept one after the other differ in it).
pub fn date(created_ms: u64) -> String {
    let date = js_sys::Date::new(&wasm_bindgen::JsValue::from_f64(created_ms as f64));
    let iso = String::from(date.to_iso_string());
    iso.get(..19).map_or_else(|| iso.clone(), |second| second.replace('T', " "))
}

/// Precision, recall and F1 with their intervals, then what the eval covered.
#[component]
pub fn Headline(summary: EvalSummary) -> impl IntoView {
    let one = |name: &'static str, label: &'static str, value: f64, ci: Interval| {
        view! {
            <div class="eval-figure" data-testid="eval-figure" data-figure=name>
                <span class="label">{label}</span>
                <strong class="value" data-testid="eval-figure-value">{figure(value)}</strong>
                <span class="ci" title="95% interval, by a bootstrap over cases">
                    {format!("{} – {}", figure(ci.low), figure(ci.high))}
                </span>
            </div>
        }
    };
    let cost = summary.cost.map_or_else(|| "cost unknown".to_string(), dollars);
    let tokens = summary.tokens.input + summary.tokens.output;
    let support = match summary.min_support {
        0 => "every finding".to_string(),
        n => format!("findings raised by {n} or more"),
    };
    view! {
        <div class="eval-headline">
            {one("precision", "Precision", summary.precision, summary.ci95.precision)}
            {one("recall", "Recall", summary.recall, summary.ci95.recall)}
            {one("f1", "F1", summary.f1, summary.ci95.f1)}
        </div>
        <p class="facts" data-testid="eval-facts">
            {format!("{} cases · {support} · {tokens} tokens · {cost}", summary.cases)}
        </p>
    }
}
