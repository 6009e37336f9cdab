//! Runs in the editor: the run dialog (a repository and base ref for conclaves that
//! review code, an input otherwise) and the dock under the canvas (the run panel
//! with Cancel, the timeline, a comparison with another run, contradictions and the
//! report, the diagnostics list, the Evals panel of `evals.rs` and the Settings
//! panel of `settings.rs`); the watched run itself is kept current by
//! `edit/watch.rs`. A node's outcome in the inspector (with Run from here, and its
//! tool calls from `runs/tool_calls.rs`) is in `runs/outcome.rs`, the timeline in
//! `runs/timeline.rs`, and the run history with its comparison of two runs in
//! `runs/history.rs`.

mod history;
mod outcome;
mod timeline;
mod tool_calls;

use conclave_shared::api::{ReviewTarget, StartRun};
use conclave_shared::{Level, NodeState};
use leptos::prelude::*;

use super::evals::EvalsPanel;
use super::settings::SettingsPanel;
use crate::edit::file::validate;
use crate::edit::watch::{cancel, decide_and_watch, start_and_watch};
use crate::run_view::RunView;
use crate::state::{Editor, Selection};
use outcome::shown;

pub use history::RunList;
pub use outcome::RunOutcome;

/// Opens the run dialog once the server has said whether the conclave reviews code,
/// since that decides what the dialog asks for.
pub fn open_run_dialog(editor: Editor) {
    validate(editor, move |_| editor.run_dialog.set(true));
}

/// What the run dialog's fields ask for, as the body that starts the run.
fn start_request(editor: Editor, conclave_id: String, fields: RunFields) -> StartRun {
    if untrack(|| editor.reviews_code()) {
        let base = fields.base.get_untracked().trim().to_string();
        let review = ReviewTarget {
            repository: fields.repository.get_untracked(),
            base: (!base.is_empty()).then_some(base),
            ..ReviewTarget::default()
        };
        StartRun { conclave_id, review: Some(review), ..StartRun::default() }
    } else {
        // Text that is not JSON is the input as a string, so a plain question works.
        let text = fields.input.get_untracked();
        let input = serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text));
        StartRun { conclave_id, input: Some(input), ..StartRun::default() }
    }
}

/// The run dialog's fields.
#[derive(Debug, Clone, Copy)]
struct RunFields {
    repository: RwSignal<String>,
    base: RwSignal<String>,
    input: RwSignal<String>,
}

/// The dialog that starts a run.
#[component]
pub fn RunDialog() -> impl IntoView {
    let editor = expect_context::<Editor>();
    let fields = RunFields {
        repository: RwSignal::new(".".to_string()),
        base: RwSignal::new(String::new()),
        input: RwSignal::new(String::new()),
    };
    let RunFields { repository, base, input } = fields;
    let start = move || {
        let Some(id) = editor.conclave.with_untracked(|c| c.as_ref().map(|c| c.id.clone())) else { return };
        let request = start_request(editor, id, fields);
        editor.run_dialog.set(false);
        start_and_watch(editor, request);
    };
    move || {
        editor.run_dialog.get().then(|| view! {
        <div class="modal-back">
            <div class="modal" data-testid="run-dialog">
                <h3>"Run"</h3>
                {if editor.reviews_code() {
                    view! {
                        <label>"Repository" <input data-testid="run-repository" prop:value=move || repository.get() on:input=move |ev| repository.set(event_target_value(&ev)) /></label>
                        <label>"Base ref (empty: the working tree against HEAD)" <input data-testid="run-base" placeholder="main" prop:value=move || base.get() on:input=move |ev| base.set(event_target_value(&ev)) /></label>
                    }.into_any()
                } else {
                    view! {
                        <label>"Input (JSON or text)" <textarea data-testid="run-input" rows="6" prop:value=move || input.get() on:input=move |ev| input.set(event_target_value(&ev))></textarea></label>
                    }.into_any()
                }}
                <div class="modal-actions">
                    <button on:click=move |_| editor.run_dialog.set(false)>"Cancel"</button>
                    <button class="accent" data-testid="run-start" on:click=move |_| start()>"Start"</button>
                </div>
            </div>
        </div>
    })
    }
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
    move || {
        editor.run.get().map(|run| {
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
        })
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
