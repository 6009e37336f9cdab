//! The right column: the selected node's settings. Agents get provider (with a probe
//! of the structured-output dialect its server speaks), model, prompt, turns, their
//! tools (`agent_tools.rs`), and, with the Structured Output chip, the field builder.
//!
//! The forms are built once per selected node (keyed by its id), and every input is
//! bound to a memo of its own value, so an edit elsewhere (a node dragged, a field
//! committed) changes only the inputs whose values changed, and focus and caret stay
//! where the author left them.

use conclave_shared::api::{ProbeRequest, ProviderProbe};
use conclave_shared::{AgentConfig, NodeKind};
use leptos::prelude::*;
use leptos::task::spawn_local;

use super::agent_tools::AgentTools;
use super::builder::SchemaEditor;
use super::kind_forms::{ApprovalForm, CacheSwitch, CommandForm, ConclaveForm, LoopForm, RouteForm};
use super::runs::RunOutcome;
use crate::api;
use crate::edit::agent::{agent_value, edit_agent, node_value, read_agent};
use crate::edit::press::commit_on_change;
use crate::on_demand::on_demand;
use crate::state::{Editor, Selection};

/// The inspector.
#[component]
pub fn Inspector() -> impl IntoView {
    let editor = expect_context::<Editor>();
    // Only a different node (or one deleted) rebuilds the forms; edits do not.
    let selected = Memo::new(move |_| match editor.selection.get() {
        Selection::Node(id) => {
            editor.conclave.with(|c| c.as_ref().and_then(|c| c.node(&id)).map(|n| (id.clone(), n.kind)))
        }
        _ => None,
    });
    view! {
        <aside class="inspector" data-testid="inspector">
            {move || selected.with(Option::is_none).then(|| view! {
                <p class="hint">"Select a node to edit it. Drag from a node's right port to another node's left port to connect them."</p>
            })}
            {on_demand(move || selected.get(), |(id, kind)| Suspend::new(split::node_form(id, kind)))}
        </aside>
    }
}

/// The node forms, split out of the editor's first download (`scripts/build-editor.sh`
/// runs `wasm_split_cli`): the browser fetches them when a node is first selected.
#[allow(unsafe_code)] // `#[lazy]` declares the split module's loader in an `unsafe extern` block.
mod split {
    use conclave_shared::NodeKind;
    use leptos::prelude::*;

    /// The form of node `id`, of kind `kind`.
    #[leptos::lazy]
    pub fn node_form(id: String, kind: NodeKind) -> AnyView {
        view! { <super::NodeForm id=id kind=kind/> }.into_any()
    }
}

/// A node's settings: its label, its outcome in the watched run (first, so that it
/// is in view after a run), and its kind's settings.
#[component]
fn NodeForm(id: String, kind: NodeKind) -> impl IntoView {
    let editor = expect_context::<Editor>();
    let label = node_value(editor, &id, |n| n.label.clone());
    let (label_input, label_change) = {
        let (read, write) = (id.clone(), id.clone());
        let current = move || editor.conclave.with_untracked(|c| c.as_ref()?.node(&read).map(|n| n.label.clone()));
        commit_on_change(current, move |v| {
            editor.edit(|c| {
                if let Some(n) = c.nodes.iter_mut().find(|n| n.id == write) {
                    n.label = v;
                }
            })
        })
    };
    view! {
        <h3>{format!("{} · {}", kind.as_str(), id)}</h3>
        <label>"Label"
            <input data-testid="node-label" prop:value=move || label.get().unwrap_or_default() on:input=label_input on:change=label_change />
        </label>
        <RunOutcome id=id.clone()/>
        {(kind == NodeKind::Agent).then(|| view! { <AgentForm id=id.clone()/> <CacheSwitch id=id.clone()/> })}
        {(kind == NodeKind::Route).then(|| view! { <RouteForm id=id.clone()/> })}
        {(kind == NodeKind::Command).then(|| view! { <CommandForm id=id.clone()/> })}
        {(kind == NodeKind::Loop).then(|| view! { <LoopForm id=id.clone()/> })}
        {(kind == NodeKind::Approval).then(|| view! { <ApprovalForm id=id.clone()/> })}
        {(kind == NodeKind::Conclave).then(|| view! { <ConclaveForm id=id/> })}
    }
}

/// What a probe found, in one line.
fn describe_probe(found: &ProviderProbe) -> String {
    let mut said = match (&found.dialect, &found.error) {
        (Some(dialect), _) if found.valid => format!("Speaks {dialect}"),
        (Some(dialect), _) => format!("Speaks {dialect}, but its answer did not match the schema"),
        (None, Some(error)) => format!("Probe failed: {error}"),
        (None, None) => "Probe failed".to_string(),
    };
    if !found.rejected.is_empty() {
        let rejected: Vec<&str> = found.rejected.iter().map(|r| r.dialect.as_str()).collect();
        said.push_str(&format!(" (rejected {})", rejected.join(", ")));
    }
    said
}

/// Handlers for a text input bound to one agent setting.
fn agent_text(
    editor: Editor,
    id: &str,
    read: fn(&AgentConfig) -> String,
    write: fn(&mut AgentConfig, String),
) -> (impl Fn(web_sys::Event) + use<>, impl Fn(web_sys::Event) + use<>) {
    let (r, w) = (id.to_string(), id.to_string());
    commit_on_change(move || read_agent(editor, &r, read), move |v| edit_agent(editor, &w, |a| write(a, v)))
}

/// An agent's settings.
#[component]
fn AgentForm(id: String) -> impl IntoView {
    let editor = expect_context::<Editor>();
    let provider = agent_value(editor, &id, |a| a.provider.clone());
    let model = agent_value(editor, &id, |a| a.model.clone());
    let prompt = agent_value(editor, &id, |a| a.system_prompt.clone());
    let turns = agent_value(editor, &id, |a| a.turns().to_string());
    let structured = agent_value(editor, &id, |a| a.output_schema.is_some() || a.output_schema_ref.is_some());
    let (model_input, model_change) = agent_text(editor, &id, |a| a.model.clone(), |a, v| a.model = v);
    let (prompt_input, prompt_change) =
        agent_text(editor, &id, |a| a.system_prompt.clone(), |a, v| a.system_prompt = v);
    let (turns_input, turns_change) =
        agent_text(editor, &id, |a| a.turns().to_string(), |a, v| a.max_turns = v.trim().parse().ok());
    let p = id.clone();
    let providers = move || {
        let current = provider.get().unwrap_or_default();
        let mut names: Vec<(String, bool)> =
            editor.providers.get().into_iter().map(|p| (p.name, p.configured)).collect();
        if !names.iter().any(|(n, _)| *n == current) {
            names.push((current.clone(), false));
        }
        names
            .into_iter()
            .map(|(name, configured)| {
                let text = if configured { name.clone() } else { format!("{name} (not configured)") };
                view! { <option value=name.clone() prop:selected=name == current>{text}</option> }
            })
            .collect_view()
    };
    let (probe_result, probing) = (RwSignal::new(None::<String>), RwSignal::new(false));
    let probe_click = move |_| {
        let name = provider.get_untracked().unwrap_or_default();
        let model = model.get_untracked().unwrap_or_default();
        let request = ProbeRequest { model: (!model.trim().is_empty()).then_some(model) };
        probing.set(true);
        probe_result.set(Some(format!("Asking {name}…")));
        spawn_local(async move {
            let said = match api::probe_provider(&name, &request).await {
                Ok(found) => describe_probe(&found),
                Err(e) => format!("Probe failed: {}", e.message),
            };
            probe_result.set(Some(said));
            probing.set(false);
        });
    };
    view! {
        <label>"Provider"
            <div class="provider-row">
                <select data-testid="node-provider" on:change=move |ev| { let v = event_target_value(&ev); probe_result.set(None); edit_agent(editor, &p, |a| a.provider = v); }>
                    {providers}
                </select>
                <button type="button" data-testid="node-provider-probe" title="Send one tiny structured request and report which structured-output dialect the provider's server speaks" prop:disabled=move || probing.get() on:click=probe_click>"Probe"</button>
            </div>
        </label>
        {move || probe_result.get().map(|said| view! { <p class="probe-result" data-testid="node-provider-probe-result">{said}</p> })}
        <label>"Model"
            <input data-testid="node-model" prop:value=move || model.get().unwrap_or_default() on:input=model_input on:change=model_change />
        </label>
        <label>"System prompt"
            <textarea data-testid="node-prompt" rows="6" prop:value=move || prompt.get().unwrap_or_default() on:input=prompt_input on:change=prompt_change></textarea>
        </label>
        <label>"Max turns"
            <input type="number" min="1" data-testid="node-max-turns" prop:value=move || turns.get().unwrap_or_default() on:input=turns_input on:change=turns_change />
        </label>
        <AgentTools id=id.clone()/>
        {move || match structured.get() {
            Some(true) => view! { <SchemaEditor id=id.clone()/> }.into_any(),
            _ => view! { <p class="hint">"No Structured Output: this agent answers in free text. Drag the Structured Output chip onto it to give it a schema."</p> }.into_any(),
        }}
    }
}
