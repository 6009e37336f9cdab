//! The right column: the selected node's settings. Agents get provider, model, prompt,
//! turns, their tools, and, with the Structured Output chip, the field builder.

use conclave_shared::{AgentConfig, NodeKind};
use leptos::prelude::*;

use super::builder::SchemaEditor;
use super::runs::RunOutcome;
use super::sidebar::TOOLS;
use crate::state::{Editor, Selection};

/// The inspector.
#[component]
pub fn Inspector() -> impl IntoView {
    let editor = expect_context::<Editor>();
    let selected = move || match editor.selection.get() {
        Selection::Node(id) => editor.conclave.with(|c| c.as_ref().and_then(|c| c.node(&id).cloned())),
        _ => None,
    };
    view! {
        <aside class="inspector" data-testid="inspector">
            {move || match selected() {
                None => view! { <p class="hint">"Select a node to edit it. Drag from a node's right port to another node's left port to connect them."</p> }.into_any(),
                Some(node) => {
                    let id = node.id.clone();
                    let label_id = id.clone();
                    view! {
                        <h3>{format!("{} · {}", node.kind.as_str(), node.id)}</h3>
                        <label>"Label"
                            <input data-testid="node-label" prop:value=node.label.clone()
                                on:change=move |ev| { let v = event_target_value(&ev); let id = label_id.clone(); editor.edit(move |c| if let Some(n) = c.nodes.iter_mut().find(|n| n.id == id) { n.label = v; }); } />
                        </label>
                        {(node.kind == NodeKind::Agent).then(|| node.agent.clone().map(|a| view! { <AgentForm id=id.clone() agent=a/> }))}
                        <RunOutcome id=id/>
                    }.into_any()
                }
            }}
        </aside>
    }
}

/// Applies a change to the agent of node `id`.
pub fn edit_agent(editor: Editor, id: &str, change: impl FnOnce(&mut AgentConfig)) {
    editor.edit(|c| {
        if let Some(a) = c.nodes.iter_mut().find(|n| n.id == id).and_then(|n| n.agent.as_mut()) {
            change(a);
        }
    });
}

#[component]
fn AgentForm(id: String, agent: AgentConfig) -> impl IntoView {
    let editor = expect_context::<Editor>();
    let (p, m, s, t) = (id.clone(), id.clone(), id.clone(), id.clone());
    let current_provider = agent.provider.clone();
    let structured = agent.output_schema.is_some() || agent.output_schema_ref.is_some();
    view! {
        <label>"Provider"
            <select data-testid="node-provider" on:change=move |ev| { let v = event_target_value(&ev); edit_agent(editor, &p, |a| a.provider = v); }>
                {move || {
                    let mut names: Vec<(String, bool)> = editor.providers.get().into_iter().map(|p| (p.name, p.configured)).collect();
                    if !names.iter().any(|(n, _)| *n == current_provider) {
                        names.push((current_provider.clone(), false));
                    }
                    names.into_iter().map(|(name, configured)| {
                        let text = if configured { name.clone() } else { format!("{name} (not configured)") };
                        view! { <option value=name.clone() selected=name == current_provider>{text}</option> }
                    }).collect_view()
                }}
            </select>
        </label>
        <label>"Model"
            <input data-testid="node-model" prop:value=agent.model.clone() on:change=move |ev| { let v = event_target_value(&ev); edit_agent(editor, &m, |a| a.model = v); } />
        </label>
        <label>"System prompt"
            <textarea data-testid="node-prompt" rows="6" prop:value=agent.system_prompt.clone()
                on:change=move |ev| { let v = event_target_value(&ev); edit_agent(editor, &s, |a| a.system_prompt = v); }></textarea>
        </label>
        <label>"Max turns"
            <input type="number" min="1" data-testid="node-max-turns" prop:value=agent.turns().to_string()
                on:change=move |ev| { let v = event_target_value(&ev).parse().ok(); edit_agent(editor, &t, |a| a.max_turns = v); } />
        </label>
        <div class="tools">
            <span class="caption">"Tools"</span>
            {TOOLS.iter().map(|(tool, label)| {
                let on = agent.tools.iter().any(|t| t == tool);
                let id = id.clone();
                view! {
                    <label class="check"><input type="checkbox" prop:checked=on on:change=move |_| edit_agent(editor, &id, |a| {
                        if a.tools.iter().any(|t| t == tool) { a.tools.retain(|t| t != tool) } else { a.tools.push(tool.to_string()) }
                    }) />{*label}</label>
                }
            }).collect_view()}
        </div>
        {if structured {
            view! { <SchemaEditor id=id.clone() agent=agent.clone()/> }.into_any()
        } else {
            view! { <p class="hint">"No Structured Output: this agent answers in free text. Drag the Structured Output chip onto it to give it a schema."</p> }.into_any()
        }}
    }
}
