//! Runs in the editor: the run dialog (a repository and base ref for conclaves that
//! review code, an input otherwise), the watched run kept current from its event
//! stream, the dock under the canvas (the run panel with contradictions and the
//! report, and the diagnostics list), a node's outcome in the inspector, and the
//! list of recent runs.

use conclave_shared::api::{ReviewTarget, StartRun};
use conclave_shared::{EventKind, Level, NodeOutput, RunEvent, RunSummary};
use leptos::prelude::*;
use leptos::task::spawn_local;
use std::cell::RefCell;

use super::app::validate;
use crate::api;
use crate::run_view::RunView;
use crate::state::{Editor, Selection};

thread_local! {
    /// The event stream being followed, with its run's id; replaced when another run
    /// is watched.
    static STREAM: RefCell<Option<(String, web_sys::EventSource)>> = const { RefCell::new(None) };
}

/// Follows a run's events into the editor, opening its conclave when another one is open.
pub fn watch_run(editor: Editor, run_id: String) {
    replace_stream(None);
    spawn_local(async move {
        let record = match api::get_run(&run_id).await {
            Ok(r) => r,
            Err(e) => return editor.say(e.message, true),
        };
        let open = editor.conclave.with_untracked(|c| c.as_ref().map(|c| c.id.clone()));
        if open.as_deref() != Some(record.conclave.id.as_str()) {
            let stored = editor.catalog.with_untracked(|c| c.iter().any(|s| s.id == record.conclave.id));
            editor.open(record.conclave.clone(), stored);
        }
        editor.run.set(Some(RunView::new(record)));
        let source = api::follow_run(&run_id, move |event| apply(editor, &event));
        replace_stream(source.map(|source| (run_id, source)));
    });
}

/// Follows `stream` instead of the stream followed so far, which is closed.
fn replace_stream(stream: Option<(String, web_sys::EventSource)>) {
    if let Some((_, old)) = STREAM.with(|s| s.replace(stream)) {
        old.close();
    }
}

/// Closes the stream of run `run_id`, if it is the one followed. The server ends a
/// stream after `run_finished`, and an EventSource left open would reconnect to it.
fn stop_following(run_id: &str) {
    let finished = STREAM.with(|s| {
        let mut stream = s.borrow_mut();
        if stream.as_ref().is_some_and(|(id, _)| id == run_id) { stream.take() } else { None }
    });
    if let Some((_, source)) = finished {
        source.close();
    }
}

/// Applies one event to the watched run; once the run finishes, fetches its report.
fn apply(editor: Editor, event: &RunEvent) {
    editor.run.maybe_update(|run| run.as_mut().is_some_and(|run| run.apply(event)));
    if !matches!(event.kind, EventKind::RunFinished { .. }) {
        return;
    }
    stop_following(&event.run_id);
    let run_id = event.run_id.clone();
    if !editor.run.with_untracked(|r| r.as_ref().is_some_and(|r| r.id() == run_id)) {
        return;
    }
    spawn_local(async move {
        let report = api::report(&run_id).await;
        editor.run.update(|r| {
            if let Some(r) = r.as_mut().filter(|r| r.id() == run_id) {
                r.report =
                    Some(report.unwrap_or_else(|| "This run has no report (reports are made for review runs).".into()));
            }
        });
    });
}

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
        StartRun { conclave_id, input: None, review: Some(review) }
    } else {
        // Text that is not JSON is the input as a string, so a plain question works.
        let text = fields.input.get_untracked();
        let input = serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text));
        StartRun { conclave_id, input: Some(input), review: None }
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
        spawn_local(async move {
            match api::start_run(&request).await {
                Ok(started) => {
                    // The server says what it changed before starting (agents moved to the
                    // local model, say); the user should know why the run differs.
                    let mut message = format!("Run {} started", started.run_id);
                    if !started.notices.is_empty() {
                        message = format!("{message}. {}", started.notices.join(" "));
                    }
                    editor.say(message, false);
                    watch_run(editor, started.run_id);
                }
                Err(e) => {
                    editor.diagnostics.set(e.diagnostics);
                    editor.say(format!("The run did not start: {}", e.message), true);
                }
            }
        });
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

/// The dock under the canvas: the last validation's diagnostics and the watched run.
/// It takes its own space, so it never covers the canvas it reports on.
#[component]
pub fn Dock() -> impl IntoView {
    view! {
        <div class="dock" data-testid="dock">
            <Diagnostics/>
            <RunPanel/>
        </div>
    }
}

/// The watched run: status, contradictions and report.
#[component]
pub fn RunPanel() -> impl IntoView {
    let editor = expect_context::<Editor>();
    move || {
        editor.run.get().map(|run| {
            let status = run.record.summary.status.as_str();
            view! {
                <section class="run-panel">
                    <header>
                        <span>"Run "<code>{run.id().chars().take(13).collect::<String>()}</code></span>
                        <span class=format!("badge {status}") data-testid="run-status">{status}</span>
                        <button class="link" on:click=move |_| editor.run.set(None)>"close"</button>
                    </header>
                    {run.record.summary.error.clone().map(|e| view! { <p class="error-text">{e}</p> })}
                    <div data-testid="contradictions" class="contradictions">
                        <h4>{format!("Contradictions ({})", run.contradictions.len())}</h4>
                        {run.contradictions.iter().map(|c| view! {
                            <div class="contradiction">
                                <strong>{format!("{}:{}", c.file, c.line)}</strong>" "{c.summary.clone()}
                            </div>
                        }).collect_view()}
                    </div>
                    {run.report.clone().map(|r| view! { <pre class="report" data-testid="report">{r}</pre> })}
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

/// The node's outcome in the watched run: its state, failed attempts, error and output.
#[component]
pub fn RunOutcome(id: String) -> impl IntoView {
    let editor = expect_context::<Editor>();
    move || {
        editor.run.with(|run| {
            let run = run.as_ref()?;
            let node = run.node(&id)?;
            let attempts = run.attempts.get(&id).cloned().unwrap_or_default();
            let output = node.output.as_ref().map(output_text);
            Some(view! {
                <section class="node-run">
                    <h4>{format!("In run: {}", node.state.as_str())}</h4>
                    {attempts.into_iter().map(|a| view! {
                        <p class="attempt">{format!("Attempt {} failed: {}", a.attempt, a.errors.join("; "))}</p>
                    }).collect_view()}
                    {node.error.clone().map(|e| view! { <p class="error-text">{e}</p> })}
                    {output.map(|o| view! { <pre class="output" data-testid="node-output">{o}</pre> })}
                </section>
            })
        })
    }
}

/// A node's output as the inspector shows it: JSON pretty-printed, text as is.
fn output_text(output: &NodeOutput) -> String {
    match output {
        NodeOutput::Json(value) => serde_json::to_string_pretty(value).unwrap_or_default(),
        NodeOutput::Text(text) => text.clone(),
    }
}

/// Recent runs; clicking one watches it.
#[component]
pub fn RunList() -> impl IntoView {
    let editor = expect_context::<Editor>();
    let runs = RwSignal::new(Vec::<RunSummary>::new());
    let refresh = move || {
        spawn_local(async move {
            if let Ok(list) = api::runs().await {
                runs.set(list);
            }
        })
    };
    refresh();
    view! {
        <section>
            <h3>"Runs" <button class="link" on:click=move |_| refresh()>"refresh"</button></h3>
            <ul class="runs">
                <For each=move || runs.get() key=|r| r.id.clone() children=move |r| {
                    let id = r.id.clone();
                    let status = r.status.as_str();
                    view! {
                        <li data-testid="run-item" on:click=move |_| watch_run(editor, id.clone())>
                            <span>{r.conclave_id.clone()}</span>
                            <span class=format!("badge {status}")>{status}</span>
                        </li>
                    }
                }/>
            </ul>
        </section>
    }
}
