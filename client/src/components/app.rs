//! The editor's root: layout, toolbar (name and file, undo and redo, auto-layout,
//! validate, save, evals, settings, run), the unsaved-changes guard, and the initial loads
//! (catalog, providers, schema references). Shortcuts are in `keyboard.rs`.

use conclave_shared::api::Validation;
use leptos::prelude::*;
use leptos::task::spawn_local;

use super::canvas::Canvas;
use super::inspector::Inspector;
use super::runs::{Dock, RunDialog, open_run_dialog};
use super::save_conflict::SaveConflict;
use super::sidebar::Sidebar;
use crate::api;
use crate::edit::arrange::auto_layout;
use crate::edit::file::{save, validate};
use crate::edit::keyboard::install_keyboard;
use crate::edit::naming::{file_of, id_for_name, rename};
use crate::edit::pointer::install_pointer_handlers;
use crate::edit::press::{after_press, install_press_tracking};
use crate::state::{Editor, commit_pending_input};

/// The editor.
#[component]
pub fn App() -> impl IntoView {
    let editor = Editor::new();
    provide_context(editor);
    spawn_local(async move {
        if let Ok(list) = api::list_conclaves().await {
            editor.catalog.set(list);
        }
        if let Ok(providers) = api::providers().await {
            editor.providers.set(providers);
        }
        if let Ok(refs) = api::schema_refs().await {
            editor.schema_refs.set(refs.into_iter().map(|r| r.reference).collect());
        }
    });
    install_pointer_handlers(editor);
    install_press_tracking();
    install_keyboard(editor);
    let _leave = window_event_listener(leptos::ev::beforeunload, move |ev: web_sys::BeforeUnloadEvent| {
        if editor.dirty.get_untracked() {
            ev.prevent_default();
            ev.set_return_value("You have unsaved changes.");
        }
    });
    // A memo, so the canvas is built when a conclave opens or closes, not again on
    // every edit of the open one.
    let open = Memo::new(move |_| editor.conclave.with(Option::is_some));
    view! {
        <div class="shell">
            <Toolbar/>
            <SaveConflict/>
            <div class="body">
                <Sidebar/>
                <main class="stage">
                    <div class="canvas-area">
                        {move || match open.get() {
                            true => view! { <Canvas/> }.into_any(),
                            false => view! {
                                <div class="empty-stage">
                                    <h2>"No conclave open"</h2>
                                    <p>"Open one from the list, or create a new one and drag nodes from the palette onto the canvas."</p>
                                </div>
                            }.into_any(),
                        }}
                    </div>
                    <Dock/>
                </main>
                <Inspector/>
            </div>
            <StatusBar/>
            <RunDialog/>
        </div>
    }
}

/// Shows a validation's outcome in the status bar and its diagnostics in their list.
fn show_validation(editor: Editor, validation: Validation) {
    let errors = validation.errors;
    editor.say(if errors == 0 { "No errors".to_string() } else { format!("{errors} error(s)") }, errors > 0);
    editor.diagnostics.set(validation.diagnostics);
}

#[component]
fn Toolbar() -> impl IntoView {
    let editor = expect_context::<Editor>();
    let open = move || editor.conclave.with(Option::is_some);
    let name = move || editor.conclave.with(|c| c.as_ref().map(|c| c.name.clone()).unwrap_or_default());
    // While the name is typed, an unsaved conclave's file follows it before the change
    // is committed (on leaving the field).
    let typed = RwSignal::new(None::<String>);
    let file = move || {
        let id = match typed.get() {
            Some(name) if !editor.stored.get() => Some(id_for_name(editor, &name)),
            _ => editor.conclave.with(|c| c.as_ref().map(|c| c.id.clone())),
        };
        id.map(|id| file_of(&id))
    };
    let file_title = move || {
        if editor.stored.get() {
            "Saved as this file"
        } else {
            "Will be saved as this file; the name sets it until the first save"
        }
    };
    view! {
        <header class="toolbar">
            <span class="brand">"Conclave"</span>
            <input class="title" data-testid="conclave-name" placeholder="Conclave name" aria-label="Conclave name" prop:value=name disabled=move || !open()
                on:input=move |ev| typed.set(Some(event_target_value(&ev)))
                on:change=move |ev| { typed.set(None); let name = event_target_value(&ev); after_press(move || rename(editor, name)); }
                on:blur=move |_| typed.set(None) />
            <code class="file" data-testid="conclave-file" class:unsaved=move || !editor.stored.get() title=file_title>{file}</code>
            <span class="dirty" class:visible=move || editor.dirty.get() title="Unsaved changes">"●"</span>
            <div class="spacer"></div>
            <button data-testid="undo" disabled=move || editor.undo_stack.with(Vec::is_empty) title="Undo (Ctrl+Z)"
                on:click=move |_| { commit_pending_input(); editor.undo(); }>"Undo"</button>
            <button data-testid="redo" disabled=move || editor.redo_stack.with(Vec::is_empty) title="Redo (Ctrl+Shift+Z)"
                on:click=move |_| { commit_pending_input(); editor.redo(); }>"Redo"</button>
            <button data-testid="auto-layout" disabled=move || !open() on:click=move |_| auto_layout(editor)
                title="Lay the graph out from left to right">"Auto-layout"</button>
            <button data-testid="validate" disabled=move || !open() on:click=move |_| validate(editor, move |v| show_validation(editor, v))>"Validate"</button>
            <button data-testid="save" class="primary" disabled=move || !open() on:click=move |_| save(editor) title="Save (Ctrl+S)">"Save"</button>
            <button data-testid="evals" disabled=move || !open() class:active=move || editor.evals.get()
                title="The evals kept of this conclave (conclave eval)"
                on:click=move |_| editor.evals.update(|shown| *shown = !*shown)>"Evals"</button>
            <button data-testid="settings" disabled=move || !open() class:active=move || editor.settings.get()
                title="The conclave's settings: the MCP servers its agents may call"
                on:click=move |_| editor.settings.update(|shown| *shown = !*shown)>"Settings"</button>
            <button data-testid="run" class="accent" disabled=move || !open() on:click=move |_| {
                if editor.dirty.get_untracked() || !editor.stored.get_untracked() {
                    editor.say("Save the conclave before running it", true);
                } else {
                    open_run_dialog(editor);
                }
            }>"Run"</button>
        </header>
    }
}

#[component]
fn StatusBar() -> impl IntoView {
    let editor = expect_context::<Editor>();
    view! {
        <footer class="status" class:error=move || editor.message.with(|m| m.as_ref().is_some_and(|m| m.1)) data-testid="status">
            {move || editor.message.get().map(|m| m.0).unwrap_or_else(|| "Ready".into())}
        </footer>
    }
}
