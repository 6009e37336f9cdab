//! The form that adds or edits one MCP server of the open conclave: its name, its
//! transport (stdio: program, arguments one per line and the sandbox's network
//! switch; HTTP: the URL and headers whose values come from environment variables),
//! what is wrong with it as it is typed, and Add (or Apply), one undoable edit.

use leptos::prelude::*;

use crate::edit::mcp::{Draft, Transport, put_server, server_names};
use crate::state::Editor;

/// The server form, starting from `draft`; it closes by clearing `form`.
#[component]
pub fn ServerForm(draft: Draft, form: RwSignal<Option<Draft>>) -> impl IntoView {
    let editor = expect_context::<Editor>();
    let adding = draft.was.is_none();
    let start = draft.clone();
    let draft = RwSignal::new(draft);
    // Problems show once the form was touched, not on an empty new form.
    let touched = RwSignal::new(!adding);
    let set = move |change: fn(&mut Draft, String)| {
        move |ev: web_sys::Event| {
            let value = event_target_value(&ev);
            touched.set(true);
            draft.update(|d| change(d, value));
        }
    };
    let problems = move || {
        let names = server_names(editor);
        if touched.get() { draft.with(|d| d.problems(&names)) } else { Vec::new() }
    };
    let transport = Memo::new(move |_| draft.with(|d| d.transport));
    let apply = move |_| {
        touched.set(true);
        let d = draft.get_untracked();
        if put_server(editor, &d).is_ok() {
            form.set(None);
            editor.say(format!("MCP server {} {}", d.name.trim(), if adding { "added" } else { "changed" }), false);
        }
    };
    view! {
        <div class="mcp-form" data-testid="mcp-form">
            <label>"Name"
                <input data-testid="mcp-name" placeholder="docs" prop:value=start.name.clone() on:input=set(|d, v| d.name = v) />
            </label>
            <label>"Transport"
                <select data-testid="mcp-transport" on:change=set(|d, v| d.transport = if v == "http" { Transport::Http } else { Transport::Stdio })>
                    <option value="stdio" prop:selected=start.transport == Transport::Stdio>"stdio (a program Conclave starts)"</option>
                    <option value="http" prop:selected=start.transport == Transport::Http>"HTTP (a URL)"</option>
                </select>
            </label>
            {move || match transport.get() {
                Transport::Stdio => view! { <StdioFields draft=draft touched=touched/> }.into_any(),
                Transport::Http => view! { <HttpFields draft=draft touched=touched/> }.into_any(),
            }}
            <ul class="mcp-problems">
                {move || problems().into_iter().map(|p| view! { <li class="error-text" data-testid="mcp-error">{p}</li> }).collect_view()}
            </ul>
            <div class="mcp-actions">
                <button data-testid="mcp-cancel" on:click=move |_| form.set(None)>"Cancel"</button>
                <button class="primary" data-testid="mcp-apply" on:click=apply>{if adding { "Add" } else { "Apply" }}</button>
            </div>
        </div>
    }
}

/// A stdio server's program, arguments and network switch.
#[component]
fn StdioFields(draft: RwSignal<Draft>, touched: RwSignal<bool>) -> impl IntoView {
    let start = draft.get_untracked();
    let set = move |change: fn(&mut Draft, String)| {
        move |ev: web_sys::Event| {
            let value = event_target_value(&ev);
            touched.set(true);
            draft.update(|d| change(d, value));
        }
    };
    view! {
        <label>"Program"
            <input data-testid="mcp-program" placeholder="mcp-server-git" prop:value=start.program on:input=set(|d, v| d.program = v) />
        </label>
        <label>"Arguments, one per line"
            <textarea data-testid="mcp-args" rows="3" prop:value=start.args on:input=set(|d, v| d.args = v)></textarea>
        </label>
        <label class="check">
            <input type="checkbox" data-testid="mcp-network" prop:checked=start.network
                on:change=move |ev| { let on = event_target_checked(&ev); touched.set(true); draft.update(|d| d.network = on); } />
            "Network: the server's sandbox lets it connect out"
        </label>
    }
}

/// An HTTP server's URL and its headers, each a name and the environment variable
/// of the Conclave process that holds its value.
#[component]
fn HttpFields(draft: RwSignal<Draft>, touched: RwSignal<bool>) -> impl IntoView {
    let start = draft.get_untracked();
    // Rows are drawn again when one is added or removed, from the draft's values.
    let rows = Memo::new(move |_| draft.with(|d| d.headers.len()));
    let cell = move |row: usize, name: bool| {
        move |ev: web_sys::Event| {
            let value = event_target_value(&ev);
            touched.set(true);
            draft.update(|d| {
                if let Some((h, v)) = d.headers.get_mut(row) {
                    *(if name { h } else { v }) = value;
                }
            });
        }
    };
    view! {
        <label>"URL"
            <input data-testid="mcp-url" placeholder="https://tracker.example/mcp" prop:value=start.url
                on:input=move |ev| { let v = event_target_value(&ev); touched.set(true); draft.update(|d| d.url = v); } />
        </label>
        <span class="caption">"Headers (the value is read from an environment variable, never stored in the file)"</span>
        {move || (0..rows.get()).map(|row| {
            let (header, variable) = draft.with_untracked(|d| d.headers.get(row).cloned().unwrap_or_default());
            view! {
                <div class="mcp-header" data-testid="mcp-header">
                    <input data-testid="mcp-header-name" placeholder="Authorization" aria-label="Header" prop:value=header on:input=cell(row, true) />
                    <input data-testid="mcp-header-env" placeholder="TRACKER_TOKEN" aria-label="Environment variable" prop:value=variable on:input=cell(row, false) />
                    <button data-testid="mcp-header-remove" title="Remove the header"
                        on:click=move |_| draft.update(|d| { if row < d.headers.len() { d.headers.remove(row); } })>"×"</button>
                </div>
            }
        }).collect_view()}
        <button data-testid="mcp-header-add" on:click=move |_| draft.update(|d| d.headers.push(Default::default()))>"Add header"</button>
    }
}
