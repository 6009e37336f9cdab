//! The watched run: fetching a run and following its event stream into the editor
//! (opening its conclave when another one is open), starting a run and watching it,
//! fetching a finished run's report, and cancelling a run.

use conclave_shared::api::{ApprovalDecision, StartRun, Started};
use conclave_shared::{EventKind, RunEvent};
use leptos::prelude::*;
use leptos::task::spawn_local;
use std::cell::RefCell;

use crate::api;
use crate::run_view::RunView;
use crate::state::Editor;

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

pub use split::watch;

/// Watching a run (its record's and its events' decoders above all), split out of the
/// editor's first download (`scripts/build-editor.sh` runs `wasm_split_cli`): the
/// browser fetches it when a run is first watched.
#[allow(unsafe_code)] // `#[lazy]` declares the split module's loader in an `unsafe extern` block.
mod split {
    use crate::state::Editor;

    /// Watches run `run_id`: fetches its record, then follows its events. False when
    /// the run could not be fetched (the status bar says why).
    #[leptos::lazy]
    pub async fn watch(editor: Editor, run_id: String) -> bool {
        super::follow(editor, run_id).await
    }
}

/// Watches run `run_id`: fetches its record, then follows its events. False when the
/// run could not be fetched (the status bar says why).
async fn follow(editor: Editor, run_id: String) -> bool {
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
        // A finished run's record is complete; its report is left to fetch, and its
        // tool calls to read from its events (the stream ends after the last one).
        fetch_report(editor, run_id.clone());
    }
    let source = api::follow_run(&run_id, move |event| apply(editor, &event));
    replace_stream(source.map(|source| (run_id, source)));
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

/// Approves (or rejects) at waiting approval node `node_id` of run `run_id`, then
/// watches the run go on.
pub fn decide_and_watch(editor: Editor, run_id: String, node_id: String, approve: bool) {
    spawn_local(async move {
        let decision = ApprovalDecision { approve, comment: None, by: Some("editor".into()) };
        match api::decide_approval(&run_id, &node_id, &decision).await {
            Ok(_) => {
                let done = if approve { "Approved" } else { "Rejected" };
                editor.say(format!("{done} at {node_id}; the run goes on"), false);
                watch(editor, run_id).await;
            }
            Err(e) => editor.say(format!("The decision was not recorded: {}", e.message), true),
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
    // A run that had finished when it was opened had its report fetched then.
    if editor.run.with_untracked(|r| r.as_ref().is_some_and(|r| r.id() == event.run_id && !r.complete)) {
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

/// Asks the server to cancel the run; its event stream then ends it `cancelled`.
pub fn cancel(editor: Editor, run_id: String) {
    spawn_local(async move {
        match api::cancel_run(&run_id).await {
            Ok(_) => editor.say(format!("Cancelling run {run_id}"), false),
            Err(e) => editor.say(format!("The run was not cancelled: {}", e.message), true),
        }
    });
}
