//! The left column: the catalog (open a conclave, or start an untitled one), the
//! palette of node kinds and capabilities (the MCP servers' tools from
//! `mcp_palette.rs`), and recent runs (`runs.rs`).

use leptos::prelude::*;

use super::mcp_palette::McpPalette;
use super::runs::RunList;
use crate::edit::agent::TOOLS;
use crate::edit::file::open_conclave;
use crate::edit::naming::open_untitled;
use crate::state::{Drag, Editor};

/// The left column.
#[component]
pub fn Sidebar() -> impl IntoView {
    view! {
        <aside class="sidebar">
            <Catalog/>
            <Palette/>
            <RunList/>
        </aside>
    }
}

/// The conclaves on the server: open one, or start a new untitled one.
#[component]
fn Catalog() -> impl IntoView {
    let editor = expect_context::<Editor>();
    let create = move || {
        if editor.dirty.get_untracked() && !confirm("Discard unsaved changes?") {
            return;
        }
        open_untitled(editor);
    };
    let open = move |id: String| {
        if editor.dirty.get_untracked() && !confirm("Discard unsaved changes?") {
            return;
        }
        open_conclave(editor, id);
    };
    view! {
        <section>
            <h3>"Conclaves"</h3>
            <div class="new-row">
                <button data-testid="conclave-new" title="Start an untitled conclave; name it in the toolbar" on:click=move |_| create()>"New"</button>
            </div>
            <ul class="catalog">
                <For each=move || editor.catalog.get() key=|s| s.id.clone() children=move |s| {
                    let id = s.id.clone();
                    let current = id.clone();
                    view! {
                        <li data-testid="conclave-item" data-conclave-id=id.clone()
                            class:active=move || editor.conclave.with(|c| c.as_ref().is_some_and(|c| c.id == current))
                            on:click=move |_| open(id.clone())>
                            <span>{s.name.clone().unwrap_or_else(|| s.id.clone())}</span>
                            {(s.errors > 0).then(|| view! { <span class="badge error">{format!("{} errors", s.errors)}</span> })}
                        </li>
                    }
                }/>
            </ul>
        </section>
    }
}

/// What can be dragged onto the canvas: node kinds, and capabilities for agents.
#[component]
fn Palette() -> impl IntoView {
    view! {
        <section>
            <h3>"Nodes"</h3>
            <PaletteItem testid="palette-trigger" item="trigger" label="Trigger" class="kind-trigger"/>
            <PaletteItem testid="palette-agent" item="agent" label="Agent" class="kind-agent"/>
            <PaletteItem testid="palette-route" item="route" label="Route" class="kind-route"/>
            <PaletteItem testid="palette-command" item="command" label="Command" class="kind-command"/>
            <PaletteItem testid="palette-loop" item="loop" label="Loop" class="kind-loop"/>
            <PaletteItem testid="palette-approval" item="approval" label="Approval" class="kind-approval"/>
            <PaletteItem testid="palette-conclave" item="conclave" label="Conclave" class="kind-conclave"/>
            <PaletteItem testid="palette-output" item="output" label="Output" class="kind-output"/>
            <h3>"Capabilities"</h3>
            <p class="hint">"Drop these onto an agent."</p>
            <PaletteItem testid="palette-structured-output" item="structured-output" label="Structured Output" class="capability"/>
            {TOOLS.iter().map(|(id, label)| view! {
                <PaletteItem testid=format!("palette-tool-{id}") item=format!("tool:{id}") label=*label class="capability"/>
            }).collect_view()}
            <McpPalette/>
        </section>
    }
}

/// One palette entry; pressing it starts a drag of `item` (see [`Drag::Palette`]).
#[component]
fn PaletteItem(
    #[prop(into)] testid: String,
    #[prop(into)] item: String,
    label: &'static str,
    class: &'static str,
) -> impl IntoView {
    let editor = expect_context::<Editor>();
    view! {
        <div class=format!("palette-item {class}") data-testid=testid
            on:pointerdown=move |ev: web_sys::PointerEvent| {
                ev.prevent_default();
                editor.drag.set(Some(Drag::Palette { item: item.clone(), x: ev.client_x() as f64, y: ev.client_y() as f64 }));
            }>{label}</div>
    }
}

/// Asks the user to confirm; without a window to ask in, the answer is yes.
fn confirm(text: &str) -> bool {
    web_sys::window().and_then(|w| w.confirm_with_message(text).ok()).unwrap_or(true)
}
