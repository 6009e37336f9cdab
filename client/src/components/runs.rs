//! Runs in the editor: the run dialog (a repository and base ref for conclaves that
//! review code, an input otherwise), the watched run kept current from its event
//! stream, and the dock under the canvas (the run panel with Cancel, the timeline,
//! a comparison with another run, contradictions and the report, and the
//! diagnostics list). A node's outcome in the inspector (with Run from here) is in
//! `runs/outcome.rs`, the timeline in `runs/timeline.rs`, and the run history with
//! its comparison of two runs in `runs/history.rs`.

mod history;
mod outcome;
mod timeline;

use conclave_shared::api::{ReviewTarget, StartRun, Started};
use conclave_shared::{EventKind, Level, RunEvent};
use leptos::prelude::*;
use leptos::task::spawn_local;
use std::cell::RefCell;

use super::app::validate;
use crate::api;
use crate::run_view::RunView;
use crate::state::{Editor, Selection};

pub use history::RunList;
pub use outcome::RunOutcome;

thread_local! {
    /// The event stream being followed, with its run's id; replaced when another run
    /// is watched.
    static STREAM: RefCell<Option<(String, web_sys::EventSource)>> = const { RefCell::new(None) };
}

/// Follows a run's events into the editor, opening its conclave when another one is open.
pub fn watch_run(editor: Editor, run_id: String) {
    spawn_local(async move {
        watch(editor, run_id).await;
    });
}

/// Watches run `run_id`: fetches its record, then follows its events. False when the
/// run could not be fetched (the status bar says why).
async fn watch(editor: Editor, run_id: String) -> bool {
    replace_stream(None);
    let record = match api::get_run(&run_id).await {
        Ok(r) => r,
        Err(e) => {
            editor.say(e.message, true);
            return false;
        }
    };
    let open = editor.conclave.with_untracked(|c| c.as_ref().map(|c| c.id.clone()));
    if open.as_deref() != Some(record.conclave.id.as_str()) {
        let stored = editor.catalog.with_untracked(|c| c.iter().any(|s| s.id == record.conclave.id));
        editor.open(record.conclave.clone(), stored);
    }
    let finished = record.summary.status.is_terminal();
    editor.run.set(Some(RunView::new(record)));
    if finished {
        // A finished run's record is complete; only its report is left to fetch.
        fetch_report(editor, run_id);
    } else {
        let source = api::follow_run(&run_id, move |event| apply(editor, &event));
        replace_stream(source.map(|source| (run_id, source)));
    }
    true
}

/// Starts a run and watches it, saying what the server changed before starting
/// (agents moved to the local model, say) so the user knows why the run differs.
pub fn start_and_watch(editor: Editor, request: StartRun) {
    spawn_local(async move {
        match api::start_run(&request).await {
            Ok(Started { run_id, notices }) => {
                let mut message = format!("Run {run_id} started");
                if !notices.is_empty() {
                    message = format!("{message}. {}", notices.join(" "));
                }
                editor.say(message, false);
                watch(editor, run_id).await;
            }
            Err(e) => {
                editor.diagnostics.set(e.diagnostics);
                editor.say(format!("The run did not start: {}", e.message), true);
            }
        }
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
    let offset = event.at_ms as i64 - js_sys::Date::now() as i64;
    editor.run.maybe_update(|run| {
        run.as_mut().is_some_and(|run| {
            run.clock_offset_ms = offset;
            run.apply(event)
        })
    });
    if !matches!(event.kind, EventKind::RunFinished { .. }) {
        return;
    }
    stop_following(&event.run_id);
    if editor.run.with_untracked(|r| r.as_ref().is_some_and(|r| r.id() == event.run_id)) {
        fetch_report(editor, event.run_id.clone());
    }
}

/// How often, and how many times, a finished run's report is asked for: the server
/// stores a review's reports just after the run's last event.
const REPORT_TRIES: u32 = 12;
const REPORT_RETRY_MS: i32 = 250;

/// Fetches the finished run's Markdown report into the watched run.
fn fetch_report(editor: Editor, run_id: String) {
    spawn_local(async move {
        let mut report = None;
        for attempt in 1..=REPORT_TRIES {
            report = api::report(&run_id).await;
            let watched = editor.run.with_untracked(|r| r.as_ref().is_some_and(|r| r.id() == run_id));
            if report.is_some() || !watched || attempt == REPORT_TRIES {
                break;
            }
            sleep(REPORT_RETRY_MS).await;
        }
        editor.run.update(|r| {
            if let Some(r) = r.as_mut().filter(|r| r.id() == run_id) {
                r.report =
                    Some(report.unwrap_or_else(|| "This run has no report (reports are made for review runs).".into()));
            }
        });
    });
}

/// Waits `ms` milliseconds without blocking the page.
async fn sleep(ms: i32) {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        let scheduled = web_sys::window()
            .is_some_and(|w| w.set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms).is_ok());
        if !scheduled {
            let _ = resolve.call0(&wasm_bindgen::JsValue::NULL);
        }
    });
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
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
                    {run.record.summary.error.clone().map(|e| view! { <p class="error-text" data-testid="run-error">{e}</p> })}
                    <timeline::Timeline/>
                    {run.comparison.clone().map(|c| view! { <history::ComparisonView comparison=c/> })}
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

/// Asks the server to cancel the run; its event stream then ends it `cancelled`.
fn cancel(editor: Editor, run_id: String) {
    spawn_local(async move {
        match api::cancel_run(&run_id).await {
            Ok(_) => editor.say(format!("Cancelling run {run_id}"), false),
            Err(e) => editor.say(format!("The run was not cancelled: {}", e.message), true),
        }
    });
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
