//! The Evals panel in the dock: the evals `conclave eval` kept of the open conclave,
//! newest first (date, dataset, cases, precision, recall, F1). Choosing one shows it
//! whole (`evals/detail.rs`: its figures with intervals, the HTML report's charts
//! from `evals/charts.rs`, its cases); with Compare on, choosing two shows them side
//! by side with their differences (`evals/compare.rs`). Figures are written by
//! `evals/figures.rs`.

mod charts;
mod compare;
mod detail;
mod figures;

use conclave_shared::eval::{EvalListing, StoredEval};
use leptos::prelude::*;

use crate::api::{self, ApiError};
use crate::loaded::loaded;
use crate::on_demand::on_demand;
use crate::state::Editor;
use compare::SideBySide;
use detail::EvalDetail;
use figures::{date, figure};

/// The chosen evals as loaded, with the ids they were loaded for.
type Chosen = (Vec<String>, Result<Vec<StoredEval>, ApiError>);

/// The panel, while it is open and a conclave is; made again for another conclave,
/// so nothing chosen outlives the conclave it was chosen in.
#[component]
pub fn EvalsPanel() -> impl IntoView {
    let editor = expect_context::<Editor>();
    let shown = Memo::new(move |_| {
        let open = editor.evals.get();
        editor.conclave.with(|c| c.as_ref().filter(|_| open).map(|c| c.id.clone()))
    });
    on_demand(move || shown.get(), |conclave| Suspend::new(split::evals_of_conclave(conclave)))
}

/// The panel's contents, split out of the editor's first download
/// (`scripts/build-editor.sh` runs `wasm_split_cli`): the browser fetches them when the
/// panel first opens.
#[allow(unsafe_code)] // `#[lazy]` declares the split module's loader in an `unsafe extern` block.
mod split {
    use leptos::prelude::*;

    /// The evals of conclave `conclave`.
    #[leptos::lazy]
    pub fn evals_of_conclave(conclave: String) -> AnyView {
        view! { <super::EvalsOfConclave conclave=conclave/> }.into_any()
    }
}

/// The conclave's evals, the compare switch, and what is chosen.
#[component]
fn EvalsOfConclave(conclave: String) -> impl IntoView {
    let editor = expect_context::<Editor>();
    let refreshed = RwSignal::new(0u32);
    let listing = {
        let conclave = conclave.clone();
        loaded(move || {
            refreshed.track();
            let conclave = conclave.clone();
            async move { api::evals(&conclave).await }
        })
    };
    let compare = RwSignal::new(false);
    let picked = RwSignal::new(Vec::<String>::new());
    let chosen: ReadSignal<Option<Chosen>> = loaded(move || {
        let ids = picked.get();
        async move {
            let mut evals = Vec::new();
            for id in &ids {
                evals.push(api::eval(id).await);
            }
            (ids, evals.into_iter().collect())
        }
    });
    // What the list says besides its rows: that it loads, why it failed, or that the
    // conclave has no evals yet.
    let status = move || {
        listing.with(|l| match l {
            None => Some(("hint", "Loading the evals…".to_string())),
            Some(Err(e)) => Some(("error-text", e.message.clone())),
            Some(Ok(list)) if list.is_empty() => Some(("hint", EMPTY.to_string())),
            Some(Ok(_)) => None,
        })
    };
    view! {
        <section class="evals-panel" data-testid="evals-panel">
            <header>
                <span>"Evals of "<code>{conclave}</code></span>
                <span class="spacer"></span>
                <label class="check" title="Choose two evals to see them side by side">
                    <input type="checkbox" data-testid="evals-compare" prop:checked=move || compare.get()
                        on:change=move |ev| set_compare(compare, picked, event_target_checked(&ev)) />
                    "Compare"
                </label>
                <button class="link" on:click=move |_| refreshed.update(|n| *n += 1)>"refresh"</button>
                <button class="link" on:click=move |_| editor.evals.set(false)>"close"</button>
            </header>
            {move || status().map(|(class, text)| view! { <p class=class data-testid="evals-status">{text}</p> })}
            {move || listing.get().and_then(Result::ok).filter(|l| !l.is_empty())
                .map(|list| view! { <EvalTable list=list picked=picked compare=compare/> })}
            <p class="hint">{move || hint(compare.get(), picked.with(Vec::len))}</p>
            {move || chosen_view(picked.get(), chosen.get())}
        </section>
    }
}

/// What the panel says of a conclave without evals.
const EMPTY: &str = "No evals of this conclave yet: each `conclave eval DATASET --conclave ID` is kept here.";

/// The evals, newest first; a click chooses one (with Compare on, a second).
#[component]
fn EvalTable(list: Vec<EvalListing>, picked: RwSignal<Vec<String>>, compare: RwSignal<bool>) -> impl IntoView {
    let rows = list
        .into_iter()
        .map(|eval| {
            let (id, choose_id) = (eval.id.clone(), eval.id.clone());
            let is_picked = move || picked.with(|p| p.contains(&id));
            view! {
                <tr data-testid="eval-row" data-eval-id=eval.id.clone() class:picked=is_picked
                    on:click=move |_| choose(picked, compare.get_untracked(), choose_id.clone())>
                    <td>{date(eval.created_ms)}</td>
                    <td><code>{eval.dataset.clone()}</code></td>
                    <td class="num">{eval.cases.to_string()}</td>
                    <td class="num">{figure(eval.precision)}</td>
                    <td class="num">{figure(eval.recall)}</td>
                    <td class="num">{figure(eval.f1)}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <table class="evals" data-testid="evals-list">
            <thead>
                <tr><th>"Date (UTC)"</th><th>"Dataset"</th><th>"Cases"</th><th>"Precision"</th><th>"Recall"</th><th>"F1"</th></tr>
            </thead>
            <tbody>{rows}</tbody>
        </table>
    }
}

/// Chooses an eval: the only one, or with Compare on, one more of two (a third
/// replaces the one chosen first; choosing a chosen one again lets it go).
fn choose(picked: RwSignal<Vec<String>>, compare: bool, id: String) {
    picked.update(|p| {
        if !compare {
            *p = vec![id];
        } else if let Some(i) = p.iter().position(|x| *x == id) {
            p.remove(i);
        } else {
            p.push(id);
            if p.len() > 2 {
                p.remove(0);
            }
        }
    });
}

/// Turns Compare on or off; off keeps only the eval chosen last.
fn set_compare(compare: RwSignal<bool>, picked: RwSignal<Vec<String>>, on: bool) {
    compare.set(on);
    if !on {
        picked.update(|p| {
            let extra = p.len().saturating_sub(1);
            p.drain(..extra);
        });
    }
}

/// What to do next.
fn hint(compare: bool, chosen: usize) -> &'static str {
    match (compare, chosen) {
        (false, 0) => "Choose an eval to see its figures, charts and cases.",
        (false, _) => "",
        (true, 0) => "Choose two evals to compare them.",
        (true, 1) => "Choose another eval to compare with this one.",
        (true, _) => "B is the later eval; B − A is the difference.",
    }
}

/// The chosen eval, or two side by side (the earlier as A), once loaded for exactly
/// the evals chosen now.
fn chosen_view(picked: Vec<String>, chosen: Option<Chosen>) -> Option<AnyView> {
    let (ids, result) = chosen?;
    if ids != picked || ids.is_empty() {
        return None;
    }
    let mut evals = match result {
        Ok(evals) => evals,
        Err(e) => return Some(view! { <p class="error-text">{e.message}</p> }.into_any()),
    };
    match (evals.pop(), evals.pop()) {
        (Some(x), Some(y)) => {
            let (a, b) = if (x.created_ms, &x.id) <= (y.created_ms, &y.id) { (x, y) } else { (y, x) };
            Some(view! { <SideBySide a=a b=b/> }.into_any())
        }
        (Some(one), None) => Some(view! { <EvalDetail eval=one/> }.into_any()),
        _ => None,
    }
}
