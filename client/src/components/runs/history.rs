//! The run history in the sidebar: recent runs, newest first (clicking one watches
//! it), and comparing two runs of one conclave: the later run is watched and the run
//! panel shows the findings added, removed and changed since the earlier one, as
//! `shared::compare` defines them, from the two runs' JSON reports.

use conclave_shared::compare::{ChangedFinding, FindingsDiff, diff_findings, report_findings};
use conclave_shared::{Finding, RunSummary};
use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::api;
use crate::edit::watch::{watch, watch_run};
use crate::run_view::Comparison;
use crate::state::Editor;

/// Recent runs; clicking one watches it, and two picked runs of one conclave can be
/// compared.
#[component]
pub fn RunList() -> impl IntoView {
    let editor = expect_context::<Editor>();
    let runs = RwSignal::new(Vec::<RunSummary>::new());
    let picked = RwSignal::new(Vec::<RunSummary>::new());
    let refresh = move || {
        spawn_local(async move {
            if let Ok(list) = api::runs().await {
                runs.set(list);
            }
        })
    };
    // A run started or ended: the list shows it without a click on refresh.
    let watched =
        Memo::new(move |_| editor.run.with(|r| r.as_ref().map(|r| (r.id().to_string(), r.record.summary.status))));
    Effect::new(move |_| {
        watched.track();
        refresh();
    });
    let pair = move || {
        picked.with(|p| match p.as_slice() {
            [a, b] if a.conclave_id == b.conclave_id => Some((a.clone(), b.clone())),
            _ => None,
        })
    };
    view! {
        <section>
            <h3>"Runs" <button class="link" on:click=move |_| refresh()>"refresh"</button></h3>
            <div class="compare-bar">
                <button data-testid="run-compare" disabled=move || pair().is_none()
                    title="Pick two runs of one conclave to compare their findings"
                    on:click=move |_| if let Some((a, b)) = pair() { compare_runs(editor, a, b) }>
                    "Compare"
                </button>
                <span class="hint">{move || match picked.with(Vec::len) {
                    2 if pair().is_none() => "Pick two runs of the same conclave".to_string(),
                    2 => "Two runs picked".to_string(),
                    n => format!("Pick {} run{} to compare", 2 - n, if n == 1 { "" } else { "s" }),
                }}</span>
            </div>
            <ul class="runs">
                <For each=move || runs.get() key=|r| (r.id.clone(), r.status) children=move |r| {
                    let (id, pick_id, watch_id) = (r.id.clone(), r.id.clone(), r.id.clone());
                    let status = r.status.as_str();
                    let summary = r.clone();
                    let is_picked = Memo::new(move |_| picked.with(|p| p.iter().any(|x| x.id == pick_id)));
                    view! {
                        <li data-testid="run-item" data-run-id=id class:picked=is_picked on:click=move |_| watch_run(editor, watch_id.clone())>
                            <input type="checkbox" data-testid="run-pick" title="Pick for comparison" prop:checked=is_picked
                                on:click=move |ev| ev.stop_propagation()
                                on:change=move |_| toggle(picked, &summary) />
                            <span class="run-name">{r.conclave_id.clone()}<small>
                                {format!("run …{}", id_tail(&r.id))}{r.pull_request.as_deref().map(request_label)}
                            </small></span>
                            <span class=format!("badge {status}")>{status}</span>
                        </li>
                    }
                }/>
            </ul>
        </section>
    }
}

/// The pull (merge) request a review from a webhook reviews (`owner/name#7`), on a
/// line of its own under the run's id: the sidebar is narrow, so a long name is cut
/// there and the title holds it whole. The name comes from the forge's delivery, so
/// it is shown as text with any invisible character escaped, as all outside text is.
fn request_label(label: &str) -> impl IntoView + use<> {
    let shown = super::outcome::shown(label);
    let title = format!("Review of pull request {shown}");
    view! { <span class="run-request" data-testid="run-request" title=title>{shown}</span> }
}

/// Picks or unpicks a run; a third pick replaces the oldest of the two.
fn toggle(picked: RwSignal<Vec<RunSummary>>, run: &RunSummary) {
    picked.update(|p| {
        if let Some(i) = p.iter().position(|x| x.id == run.id) {
            p.remove(i);
        } else {
            p.push(run.clone());
            if p.len() > 2 {
                p.remove(0);
            }
        }
    });
}

/// The end of a run id, which tells runs apart at a glance (run ids start with the
/// time, so runs of one minute share their beginning).
fn id_tail(id: &str) -> String {
    id.rsplit('-').next().unwrap_or(id).chars().take(6).collect()
}

/// Watches the later of two runs and compares its findings with the earlier one's.
fn compare_runs(editor: Editor, a: RunSummary, b: RunSummary) {
    let (earlier, later) = if (a.created_ms, &a.id) <= (b.created_ms, &b.id) { (a, b) } else { (b, a) };
    spawn_local(split::compare(editor, earlier, later));
}

/// Comparing two runs (their JSON reports' decoder and the findings' diff), split out
/// of the editor's first download (`scripts/build-editor.sh` runs `wasm_split_cli`):
/// the browser fetches it when two runs are first compared.
#[allow(unsafe_code)] // `#[lazy]` declares the split module's loader in an `unsafe extern` block.
mod split {
    use conclave_shared::RunSummary;

    use crate::state::Editor;

    /// Watches run `later` and compares its findings with run `earlier`'s.
    #[leptos::lazy]
    pub async fn compare(editor: Editor, earlier: RunSummary, later: RunSummary) {
        super::compare(editor, earlier, later).await
    }
}

/// Watches run `later` and compares its findings with run `earlier`'s.
async fn compare(editor: Editor, earlier: RunSummary, later: RunSummary) {
    if !watch(editor, later.id.clone()).await {
        return;
    }
    let result = match (findings_of(&earlier.id).await, findings_of(&later.id).await) {
        (Ok(before), Ok(after)) => Ok(diff_findings(&before, &after)),
        (Err(e), _) | (_, Err(e)) => Err(e),
    };
    editor.run.update(|r| {
        if let Some(r) = r.as_mut().filter(|r| r.id() == later.id) {
            r.comparison = Some(Comparison { earlier: earlier.id.clone(), result });
        }
    });
}

/// The findings of a run's JSON report, or why there are none.
async fn findings_of(run_id: &str) -> Result<Vec<Finding>, String> {
    let no_findings =
        || format!("run {run_id} has no review findings to compare (reports are made for finished review runs)");
    let report = api::report_json(run_id).await.map_err(|_| no_findings())?;
    report_findings(&report).ok_or_else(no_findings)
}

/// The comparison of the watched run with an earlier one, in the run panel.
#[component]
pub fn ComparisonView(comparison: Comparison) -> impl IntoView {
    let earlier: String = comparison.earlier.chars().take(13).collect();
    view! {
        <div class="comparison" data-testid="comparison">
            <h4>{format!("Findings since run {earlier}")}</h4>
            {match comparison.result {
                Err(message) => view! { <p class="error-text">{message}</p> }.into_any(),
                Ok(diff) => view! { <DiffLists diff=diff/> }.into_any(),
            }}
        </div>
    }
}

#[component]
fn DiffLists(diff: FindingsDiff) -> impl IntoView {
    let FindingsDiff { added, removed, changed, unchanged } = diff;
    view! {
        <p class="hint">{format!("{} added, {} removed, {} changed, {unchanged} unchanged", added.len(), removed.len(), changed.len())}</p>
        <ul class="compare-list added" data-testid="compare-added">
            {added.iter().map(|f| view! { <li>"+ "{describe(f)}</li> }).collect_view()}
        </ul>
        <ul class="compare-list removed" data-testid="compare-removed">
            {removed.iter().map(|f| view! { <li>"− "{describe(f)}</li> }).collect_view()}
        </ul>
        <ul class="compare-list changed" data-testid="compare-changed">
            {changed.iter().map(|c| view! { <li>"~ "{describe_change(c)}</li> }).collect_view()}
        </ul>
    }
}

/// `file:line [severity, lane] description`.
fn describe(f: &Finding) -> String {
    let severity = f.severity.map_or("no severity", |s| s.as_str());
    let stance = if f.effective_stance() == conclave_shared::Stance::Approval { ", approval" } else { "" };
    let lane = conclave_shared::compare::subject(f);
    super::outcome::shown(&format!("{}:{} [{severity}{stance}, {lane}] {}", f.file, f.line, f.description))
}

/// What changed in one finding: `file:line [lane] severity: minor → major; ...`.
fn describe_change(c: &ChangedFinding) -> String {
    let (a, b) = (&c.before, &c.after);
    let stance = |f: &Finding| match f.effective_stance() {
        conclave_shared::Stance::Concern => "concern",
        conclave_shared::Stance::Approval => "approval",
    };
    let parts: Vec<String> = c
        .differences()
        .into_iter()
        .map(|field| match field {
            "severity" => format!(
                "severity {} → {}",
                a.severity.map_or("none", |s| s.as_str()),
                b.severity.map_or("none", |s| s.as_str())
            ),
            "stance" => format!("stance {} → {}", stance(a), stance(b)),
            _ => format!("description “{}” → “{}”", a.description, b.description),
        })
        .collect();
    let line = format!("{}:{} [{}] {}", b.file, b.line, conclave_shared::compare::subject(b), parts.join("; "));
    super::outcome::shown(&line)
}
