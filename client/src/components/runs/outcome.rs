//! A node's outcome in the watched run, at the bottom of the inspector: its state,
//! attempts, time and cost, its error, its tool calls (`tool_calls.rs`), what it
//! received and what it produced (each collapsible), and, once the run has finished, Run from here: re-run this node and
//! everything downstream of it, reusing the watched run's other outputs.

use conclave_shared::api::StartRun;
use conclave_shared::number::fixed;
use conclave_shared::{NodeOutput, NodeState, NodeSummary};
use leptos::prelude::*;

use super::tool_calls::ToolCalls;
use crate::edit::watch::start_and_watch;
use crate::run_view::dollars;
use crate::state::Editor;

/// The node's outcome in the watched run.
#[component]
pub fn RunOutcome(id: String) -> impl IntoView {
    let editor = expect_context::<Editor>();
    // Kept outside the view so that a redraw (a new event) keeps what is open.
    let show_input = RwSignal::new(false);
    let show_output = RwSignal::new(true);
    move || {
        editor.run.with(|run| {
            let run = run.as_ref()?;
            let node = run.node(&id)?.clone();
            let attempts = run.attempts.get(&id).cloned().unwrap_or_default();
            let calls = run.tools.get(&id).cloned().unwrap_or_default();
            let finished = !run.is_running();
            let (run_id, conclave_id, from) = (run.id().to_string(), run.record.conclave.id.clone(), id.clone());
            Some(view! {
                <section class="node-run">
                    <h4>{format!("In run: {}", node.state.as_str())}</h4>
                    <p class="facts">{facts(&node)}</p>
                    {node.reused_from.clone().map(|r| view! {
                        <p class="hint">{format!("Output reused from run {}", r.chars().take(13).collect::<String>())}</p>
                    })}
                    {attempts.into_iter().map(|a| view! {
                        <p class="attempt">{shown(&format!("Attempt {} failed: {}", a.attempt, a.errors.join("; ")))}</p>
                    }).collect_view()}
                    {node.error.as_deref().map(|e| view! { <p class="error-text">{shown(e)}</p> })}
                    <ToolCalls calls=calls/>
                    {node.input.as_deref().map(shown).map(|text| view! {
                        <Collapsible title="Input" open=show_input toggle="node-input-toggle" testid="node-input" text=text/>
                    })}
                    {node.output.as_ref().map(|o| shown(&output_text(o))).map(|text| view! {
                        <Collapsible title="Output" open=show_output toggle="node-output-toggle" testid="node-output" text=text/>
                    })}
                    {finished.then(|| view! {
                        <button data-testid="run-from-here" title="Re-run this node and everything downstream of it, reusing this run's other outputs"
                            on:click=move |_| run_from_here(editor, conclave_id.clone(), from.clone(), run_id.clone())>
                            "Run from here"
                        </button>
                    })}
                </section>
            })
        })
    }
}

/// A titled block of text that opens and closes with a click on its title.
#[component]
fn Collapsible(
    title: &'static str,
    open: RwSignal<bool>,
    toggle: &'static str,
    testid: &'static str,
    text: String,
) -> impl IntoView {
    view! {
        <div class="io">
            <button class="io-toggle" data-testid=toggle aria-expanded=move || open.get().to_string()
                on:click=move |_| open.update(|o| *o = !*o)>
                {move || if open.get() { format!("▾ {title}") } else { format!("▸ {title}") }}
            </button>
            {move || open.get().then(|| view! { <pre class="output" data-testid=testid>{text.clone()}</pre> })}
        </div>
    }
}

/// Starts a run from `node_id` reusing run `reuse_run`, and watches it. The server
/// runs the saved conclave, so unsaved changes would not be in it: the user saves
/// first.
fn run_from_here(editor: Editor, conclave_id: String, node_id: String, reuse_run: String) {
    if editor.dirty.get_untracked() {
        editor.say("Save the conclave before running from a node", true);
        return;
    }
    let request = StartRun { conclave_id, from_node: Some(node_id), reuse_run: Some(reuse_run), ..StartRun::default() };
    start_and_watch(editor, request);
}

/// One line of facts: attempts, time, tokens and cost, as far as they are known.
fn facts(node: &NodeSummary) -> String {
    let mut parts = Vec::new();
    if node.attempts > 0 {
        parts.push(format!("{} attempt{}", node.attempts, if node.attempts == 1 { "" } else { "s" }));
    }
    if let (Some(start), Some(end), None) = (node.started_ms, node.finished_ms, &node.reused_from) {
        parts.push(format!("{} s", fixed(end.saturating_sub(start) as f64 / 1000.0, 1)));
    }
    if let Some(usage) = &node.usage {
        parts.push(format!("{} tokens in, {} out", usage.input_tokens, usage.output_tokens));
        parts.push(usage.cost_usd.map_or_else(|| "cost unknown".to_string(), dollars));
    }
    if parts.is_empty() && node.state == NodeState::Queued {
        parts.push("waiting for its inputs".to_string());
    }
    parts.join(" · ")
}

/// Model text as the editor shows it: as text (a view never renders it as HTML),
/// with invisible and bidirectional characters written as escapes.
pub(super) fn shown(text: &str) -> String {
    conclave_shared::invisible::escape_invisible(text).into_owned()
}

/// A node's output as the inspector shows it: JSON pretty-printed, text as is.
fn output_text(output: &NodeOutput) -> String {
    match output {
        NodeOutput::Json(value) => serde_json::to_string_pretty(value).unwrap_or_default(),
        NodeOutput::Text(text) => text.clone(),
    }
}
