//! The left column: the catalog (open or create a conclave), the palette of node
//! kinds and capabilities, and recent runs.

use conclave_shared::Conclave;
use leptos::prelude::*;
use leptos::task::spawn_local;

use super::runs::watch_run;
use crate::api;
use crate::state::{Drag, Editor};

/// Tools an agent can be given, by id.
pub const TOOLS: [(&str, &str); 3] = [("read_file", "Read file"), ("list_files", "List files"), ("grep", "Grep")];

/// The left column.
#[component]
pub fn Sidebar() -> impl IntoView {
    let editor = expect_context::<Editor>();
    let new_id = RwSignal::new(String::new());
    let runs = RwSignal::new(Vec::<conclave_shared::RunSummary>::new());
    let refresh_runs = move || {
        spawn_local(async move {
            if let Ok(list) = api::runs().await {
                runs.set(list);
            }
        })
    };
    refresh_runs();
    let create = move || {
        let id = new_id.get_untracked().trim().to_lowercase().replace(' ', "-");
        if id.is_empty() {
            editor.say("Give the new conclave an id, such as `my-review`", true);
            return;
        }
        let conclave = Conclave {
            version: 1,
            id: id.clone(),
            name: id,
            description: String::new(),
            settings: Default::default(),
            nodes: Vec::new(),
            edges: Vec::new(),
        };
        editor.open(conclave, false);
        new_id.set(String::new());
        editor.say("New conclave: drag a Trigger, Agents and an Output onto the canvas", false);
    };
    let open = move |id: String| {
        if editor.dirty.get_untracked() && !confirm("Discard unsaved changes?") {
            return;
        }
        spawn_local(async move {
            match api::get_conclave(&id).await {
                Ok(conclave) => editor.open(conclave, true),
                Err(e) => editor.say(e.message, true),
            }
        });
    };
    let palette = |testid: &'static str, item: &'static str, label: &'static str, class: &'static str| {
        view! {
            <div class=format!("palette-item {class}") data-testid=testid
                on:pointerdown=move |ev: web_sys::PointerEvent| {
                    ev.prevent_default();
                    editor.drag.set(Some(Drag::Palette { item: item.to_string(), x: ev.client_x() as f64, y: ev.client_y() as f64 }));
                }>{label}</div>
        }
    };
    view! {
        <aside class="sidebar">
            <section>
                <h3>"Conclaves"</h3>
                <div class="new-row">
                    <input placeholder="new-conclave-id" prop:value=move || new_id.get() on:input=move |ev| new_id.set(event_target_value(&ev))
                        on:keydown=move |ev: web_sys::KeyboardEvent| if ev.key() == "Enter" { create() } />
                    <button data-testid="conclave-new" on:click=move |_| create()>"New"</button>
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
            <section>
                <h3>"Nodes"</h3>
                {palette("palette-trigger", "trigger", "Trigger", "kind-trigger")}
                {palette("palette-agent", "agent", "Agent", "kind-agent")}
                {palette("palette-output", "output", "Output", "kind-output")}
                <h3>"Capabilities"</h3>
                <p class="hint">"Drop these onto an agent."</p>
                {palette("palette-structured-output", "structured-output", "Structured Output", "capability")}
                {TOOLS.iter().map(|(id, label)| {
                    let testid = format!("palette-tool-{id}");
                    let item = format!("tool:{id}");
                    view! {
                        <div class="palette-item capability" data-testid=testid
                            on:pointerdown=move |ev: web_sys::PointerEvent| {
                                ev.prevent_default();
                                editor.drag.set(Some(Drag::Palette { item: item.clone(), x: ev.client_x() as f64, y: ev.client_y() as f64 }));
                            }>{*label}</div>
                    }
                }).collect_view()}
            </section>
            <section>
                <h3>"Runs" <button class="link" on:click=move |_| refresh_runs()>"refresh"</button></h3>
                <ul class="runs">
                    <For each=move || runs.get() key=|r| r.id.clone() children=move |r| {
                        let id = r.id.clone();
                        view! {
                            <li data-testid="run-item" on:click=move |_| watch_run(editor, id.clone())>
                                <span>{r.conclave_id.clone()}</span>
                                <span class=format!("badge {}", r.status.as_str())>{r.status.as_str()}</span>
                            </li>
                        }
                    }/>
                </ul>
            </section>
        </aside>
    }
}

fn confirm(text: &str) -> bool {
    web_sys::window().and_then(|w| w.confirm_with_message(text).ok()).unwrap_or(true)
}
