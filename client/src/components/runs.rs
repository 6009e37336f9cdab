//! Runs in the editor: the run dialog (a repository and base ref for review
//! conclaves, an input otherwise), live node states from the event stream, the run
//! panel with contradictions and the report, and the diagnostics list.

use conclave_shared::{EventKind, NodeOutput, RunEvent};
use leptos::prelude::*;
use leptos::task::spawn_local;
use std::cell::RefCell;

use crate::api;
use crate::state::{Editor, NodeRun, RunView, Selection};

thread_local! {
    /// The event stream being followed; replaced when another run is watched.
    static SOURCE: RefCell<Option<web_sys::EventSource>> = const { RefCell::new(None) };
}

/// Follows a run's events into the editor, opening its conclave when another one is open.
pub fn watch_run(editor: Editor, run_id: String) {
    SOURCE.with(|s| {
        if let Some(old) = s.borrow_mut().take() {
            old.close();
        }
    });
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
        let nodes = record
            .conclave
            .nodes
            .iter()
            .map(|n| (n.id.clone(), NodeRun { state: "queued".into(), ..NodeRun::default() }))
            .collect();
        editor.run.set(Some(RunView { run_id: run_id.clone(), status: "running".into(), nodes, ..RunView::default() }));
        let source = api::follow_run(&run_id, move |event| apply(editor, event));
        SOURCE.with(|s| *s.borrow_mut() = source);
    });
}

/// Applies one event to the watched run.
fn apply(editor: Editor, event: RunEvent) {
    let mut finished = None;
    editor.run.update(|run| {
        let Some(run) = run.as_mut().filter(|r| r.run_id == event.run_id) else { return };
        fn node<'a>(run: &'a mut RunView, id: &str) -> &'a mut NodeRun {
            run.nodes.entry(id.to_string()).or_default()
        }
        match event.kind {
            EventKind::NodeStarted { node_id } => node(run, &node_id).state = "running".into(),
            EventKind::NodeCompleted { node_id, output, .. } => {
                let n = node(run, &node_id);
                n.state = "succeeded".into();
                n.output = Some(match output {
                    NodeOutput::Json(v) => serde_json::to_string_pretty(&v).unwrap_or_default(),
                    NodeOutput::Text(t) => t,
                });
            }
            EventKind::NodeFailed { node_id, message, .. } => {
                let n = node(run, &node_id);
                n.state = "failed".into();
                n.error = Some(message);
            }
            EventKind::NodeSkipped { node_id, .. } => node(run, &node_id).state = "skipped".into(),
            EventKind::AttemptFailed { node_id, attempt, errors, .. } => {
                node(run, &node_id).attempts.push((attempt, errors))
            }
            EventKind::ContradictionDetected { contradiction, .. } if !run.contradictions.contains(&contradiction) => {
                run.contradictions.push(contradiction);
            }
            EventKind::RunFinished { status, error, .. } => {
                run.status = status.as_str().to_string();
                run.error = error;
                for n in run.nodes.values_mut().filter(|n| n.state == "queued" || n.state == "running") {
                    n.state = if status.as_str() == "cancelled" { "cancelled".into() } else { n.state.clone() };
                }
                finished = Some(run.run_id.clone());
            }
            _ => {}
        }
    });
    if let Some(run_id) = finished {
        SOURCE.with(|s| {
            if let Some(source) = s.borrow_mut().take() {
                source.close();
            }
        });
        spawn_local(async move {
            let report = api::report(&run_id).await;
            editor.run.update(|r| {
                if let Some(r) = r.as_mut().filter(|r| r.run_id == run_id) {
                    r.report = Some(
                        report.unwrap_or_else(|| "This run has no report (reports are made for review runs).".into()),
                    );
                }
            });
        });
    }
}

/// Whether the open conclave reviews code (its agents answer with the findings schema).
fn is_review(editor: Editor) -> bool {
    editor.conclave.with_untracked(|c| {
        c.as_ref().is_some_and(|c| {
            c.nodes
                .iter()
                .filter_map(|n| n.agent.as_ref())
                .any(|a| a.output_schema_ref.as_deref() == Some("review.findings.v1"))
        })
    })
}

/// The dialog that starts a run.
#[component]
pub fn RunDialog() -> impl IntoView {
    let editor = expect_context::<Editor>();
    let repository = RwSignal::new(".".to_string());
    let base = RwSignal::new(String::new());
    let input = RwSignal::new(String::new());
    let start = move || {
        let Some(id) = editor.conclave.with_untracked(|c| c.as_ref().map(|c| c.id.clone())) else { return };
        let review = is_review(editor).then(|| {
            let b = base.get_untracked();
            (repository.get_untracked(), (!b.trim().is_empty()).then(|| b.trim().to_string()))
        });
        let text = input.get_untracked();
        let value = serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text));
        editor.run_dialog.set(false);
        spawn_local(async move {
            match api::start_run(&id, value, review).await {
                Ok(run_id) => {
                    editor.say(format!("Run {run_id} started"), false);
                    watch_run(editor, run_id);
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
                {if is_review(editor) {
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

/// The watched run: status, contradictions and report.
#[component]
pub fn RunPanel() -> impl IntoView {
    let editor = expect_context::<Editor>();
    move || {
        editor.run.get().map(|run| {
            view! {
                <section class="run-panel">
                    <header>
                        <span>"Run "<code>{run.run_id.chars().take(13).collect::<String>()}</code></span>
                        <span class=format!("badge {}", run.status) data-testid="run-status">{run.status.clone()}</span>
                        <button class="link" on:click=move |_| editor.run.set(None)>"close"</button>
                    </header>
                    {run.error.clone().map(|e| view! { <p class="error-text">{e}</p> })}
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
                    let node = d.node_id();
                    view! {
                        <li class=d.severity.clone() data-testid="diagnostic" on:click=move |_| {
                            if let Some(id) = node.clone() { editor.selection.set(Selection::Node(id)); }
                        }>
                            <span class="code">{format!("{}[{}]", d.severity, d.code)}</span>" "{d.message.clone()}
                            <span class="where">{format!(" at {}", d.path)}</span>
                        </li>
                    }
                }).collect_view()}
            </ul>
        </section>
    })
    }
}
