//! Runs in the editor: the run dialog (`runs/dialog.rs`: what a review covers, its
//! analyzer lanes and the cache for conclaves that review code, an input otherwise)
//! and the dock under the canvas (the run panel
//! with Cancel, the timeline, a comparison with another run, contradictions and the
//! report, the diagnostics list, the Evals panel of `evals.rs` and the Settings
//! panel of `settings.rs`); the watched run itself is kept current by
//! `edit/watch.rs`. A node's outcome in the inspector (with Run from here, and its
//! tool calls from `runs/tool_calls.rs`) is in `runs/outcome.rs`, the timeline in
//! `runs/timeline.rs`, and the run history with its comparison of two runs in
//! `runs/history.rs`.

mod dialog;
mod history;
mod outcome;
mod timeline;
mod tool_calls;

use conclave_shared::{Level, NodeState};
use leptos::prelude::*;

use super::evals::EvalsPanel;
use super::settings::SettingsPanel;
use crate::edit::file::validate;
use crate::edit::watch::{cancel, decide_and_watch};
use crate::on_demand::on_demand;
use crate::run_view::RunView;
use crate::state::{Editor, Selection};
use outcome::shown;

pub use dialog::RunDialog;
pub use history::RunList;
pub use outcome::RunOutcome;

/// Opens the run dialog once the server has said whether the conclave reviews code,
/// since that decides what the dialog asks for.
pub fn open_run_dialog(editor: Editor) {
    validate(editor, move |_| editor.run_dialog.set(true));
}

/// The dock under the canvas: the last validation's diagnostics, the watched run, the
/// Evals panel and the Settings panel. It takes its own space, so it never covers the canvas it reports
/// on.
#[component]
pub fn Dock() -> impl IntoView {
    view! {
        <div class="dock" data-testid="dock">
            <Diagnostics/>
            <RunPanel/>
            <EvalsPanel/>
            <SettingsPanel/>
        </div>
    }
}

/// The approval nodes of the watched run that wait for a decision, each with what it
/// asks and Approve and Reject.
#[component]
fn Decisions(run: RunView) -> impl IntoView {
    let editor = expect_context::<Editor>();
    let run_id = run.id().to_string();
    let waiting: Vec<(String, String)> = run
        .record
        .nodes
        .iter()
        .filter(|n| n.state == NodeState::Waiting)
        .map(|n| {
            let prompt =
                run.record.conclave.node(&n.node_id).and_then(|c| c.approval.as_ref()).map(|a| a.prompt.clone());
            (n.node_id.clone(), prompt.filter(|p| !p.is_empty()).unwrap_or_else(|| "Approve to go on".into()))
        })
        .collect();
    waiting
        .into_iter()
        .map(|(node_id, prompt)| {
            let (approve_run, reject_run) = (run_id.clone(), run_id.clone());
            let (approve_node, reject_node, shown) = (node_id.clone(), node_id.clone(), node_id.clone());
            view! {
                <div class="decision" data-testid="run-decision" data-node-id=node_id>
                    <span>"Waiting at "<code>{shown}</code>": "{prompt}</span>
                    <button data-testid="run-approve"
                        on:click=move |_| decide_and_watch(editor, approve_run.clone(), approve_node.clone(), true)>"Approve"</button>
                    <button data-testid="run-reject"
                        on:click=move |_| decide_and_watch(editor, reject_run.clone(), reject_node.clone(), false)>"Reject"</button>
                </div>
            }
        })
        .collect_view()
}

/// The watched run: status with Cancel while it runs, the timeline, a comparison
/// with another run, contradictions and the report.
#[component]
pub fn RunPanel() -> impl IntoView {
    let editor = expect_context::<Editor>();
    let watching = Memo::new(move |_| editor.run.with(Option::is_some));
    on_demand(move || watching.get().then_some(()), move |()| Suspend::new(split::run_panel(editor)))
}

/// The run panel, split out of the editor's first download (`scripts/build-editor.sh`
/// runs `wasm_split_cli`): the browser fetches it when a run is first watched.
#[allow(unsafe_code)] // `#[lazy]` declares the split module's loader in an `unsafe extern` block.
mod split {
    use leptos::prelude::*;

    use crate::state::Editor;

    /// The watched run, redrawn as it changes.
    #[leptos::lazy]
    pub fn run_panel(editor: Editor) -> AnyView {
        (move || editor.run.get().map(|run| super::watched_run(editor, run))).into_any()
    }
}

/// The run panel of `run`.
fn watched_run(editor: Editor, run: RunView) -> impl IntoView {
    let status = run.record.summary.status.as_str();
    let run_id = run.id().to_string();
    view! {
        <section class="run-panel" data-testid="run-panel" data-run-id=run.id().to_string()>
            <header>
                <span>"Run "<code>{run.id().chars().take(13).collect::<String>()}</code>" of "{run.record.conclave.id.clone()}</span>
                <span class=format!("badge {status}") data-testid="run-status">{status}</span>
                <span class="spacer"></span>
                {run.is_running().then(|| view! {
                    <button data-testid="run-cancel" on:click=move |_| cancel(editor, run_id.clone())>"Cancel"</button>
                })}
                <button class="link" on:click=move |_| editor.run.set(None)>"close"</button>
            </header>
            {run.record.summary.error.as_deref().map(shown).map(|e| view! { <p class="error-text" data-testid="run-error">{e}</p> })}
            <Decisions run=run.clone()/>
            <timeline::Timeline/>
            {run.comparison.clone().map(|c| view! { <history::ComparisonView comparison=c/> })}
            <div data-testid="contradictions" class="contradictions">
                <h4>{format!("Contradictions ({})", run.contradictions.len())}</h4>
                {run.contradictions.iter().map(|c| view! {
                    <div class="contradiction">
                        <strong>{shown(&format!("{}:{}", c.file, c.line))}</strong>" "{shown(&c.summary)}
                    </div>
                }).collect_view()}
            </div>
            {run.report.as_deref().map(shown).map(|r| view! { <pre class="report" data-testid="report">{r}</pre> })}
        </section>
    }
}

/// The last validation's diagnostics; clicking one selects its node.
#[component]
pub fn Diagnostics() -> impl IntoView {
    let editor = expect_context::<Editor>();
    move || {
        (!editor.diagnostics.with(Vec::is_empty)).then(|| view! {
        <section class="diagnostics" data-testid="diagnostics">
            <header><span>"Diagnostics"</span><button class="link" on:click=move |_| editor.diagnostics.set(Vec::new())>"close"</button></header>
            <ul>
                {editor.diagnostics.get().into_iter().map(|d| {
                    let node = d.node_id().map(str::to_string);
                    let level = level_name(d.severity);
                    view! {
                        <li class=level data-testid="diagnostic" on:click=move |_| {
                            if let Some(id) = node.clone() { editor.selection.set(Selection::Node(id)); }
                        }>
                            <span class="code">{format!("{level}[{}]", d.code)}</span>" "{d.message.clone()}
                            <span class="where">{format!(" at {}", d.path)}</span>
                        </li>
                    }
                }).collect_view()}
            </ul>
        </section>
    })
    }
}

/// A diagnostic level's name, as the CLI prints it and the stylesheet's classes use it.
fn level_name(level: Level) -> &'static str {
    match level {
        Level::Error => "error",
        Level::Warning => "warning",
        Level::Note => "note",
    }
}
