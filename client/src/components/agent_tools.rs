//! An agent's tools in the inspector: a switch for each built-in tool, and a chip
//! for each MCP tool it may call (`mcp:SERVER/TOOL`, or every tool of a server), each
//! with a button that takes it away. MCP tools are given by dragging them from the
//! palette.

use leptos::prelude::*;

use crate::edit::agent::{TOOLS, agent_value, edit_agent};
use crate::edit::mcp::tool_label;
use crate::state::Editor;

/// The tools of agent `id`.
#[component]
pub fn AgentTools(id: String) -> impl IntoView {
    let editor = expect_context::<Editor>();
    let mcp =
        agent_value(editor, &id, |a| a.tools.iter().filter(|t| tool_label(t).is_some()).cloned().collect::<Vec<_>>());
    let chips_of = id.clone();
    view! {
        <div class="tools">
            <span class="caption">"Tools"</span>
            {TOOLS.iter().map(|(tool, label)| {
                let on = agent_value(editor, &id, move |a| a.tools.iter().any(|t| t == tool));
                let id = id.clone();
                view! {
                    <label class="check"><input type="checkbox" data-testid=format!("node-tool-{tool}") prop:checked=move || on.get().unwrap_or(false) on:change=move |_| edit_agent(editor, &id, |a| {
                        if a.tools.iter().any(|t| t == tool) { a.tools.retain(|t| t != tool) } else { a.tools.push(tool.to_string()) }
                    }) />{*label}</label>
                }
            }).collect_view()}
            <div class="chips mcp-tools" data-testid="node-mcp-tools">
                {move || mcp.get().unwrap_or_default().into_iter().map(|tool| {
                    let (id, removed) = (chips_of.clone(), tool.clone());
                    view! {
                        <span class="chip" data-testid="node-mcp-tool" data-tool=tool.clone() title=tool.clone()>
                            {tool_label(&tool)}
                            <button class="chip-x" data-testid="chip-remove" title="Remove"
                                on:click=move |_| edit_agent(editor, &id, |a| a.tools.retain(|t| *t != removed))>"×"</button>
                        </span>
                    }
                }).collect_view()}
            </div>
            {move || mcp.with(|m| m.as_ref().is_none_or(Vec::is_empty)).then(|| view! {
                <p class="hint">"Drag an MCP server's tools from the palette onto the agent to let it call them."</p>
            })}
        </div>
    }
}
