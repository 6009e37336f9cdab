//! An agent's output schema as raw JSON, for export (Copy) and import (paste, Apply).
//! For an inline schema it shows that schema; for a reference, the referenced schema
//! as the server resolves it. Applying pasted JSON makes the schema inline (the
//! reference cleared) in one undoable edit.

use conclave_shared::schema_to_fields;
use leptos::html;
use leptos::prelude::*;
use leptos::task::spawn_local;
use serde_json::Value;
use wasm_bindgen::JsCast;

use crate::api;
use crate::edit::agent::{agent_value, edit_agent};
use crate::loaded::loaded;
use crate::state::Editor;

/// The Raw JSON panel of agent `id`: of its inline schema, or of `reference`.
#[component]
pub fn RawSchema(id: String, reference: Option<String>) -> impl IntoView {
    let editor = expect_context::<Editor>();
    let inline = agent_value(editor, &id, |a| a.output_schema.as_ref().map(pretty));
    let fetched = reference.clone().map(|r| loaded(move || api_schema(r.clone())));
    // What the schema is now: `None` while a reference loads.
    let source = move || -> Option<Result<String, String>> {
        match fetched {
            Some(fetched) => fetched.get(),
            None => inline.get().flatten().map(Ok),
        }
    };
    // Text typed or pasted and not applied yet; it stays until applied.
    let draft = RwSignal::new(None::<String>);
    let problem = RwSignal::new(None::<String>);
    let copied = RwSignal::new(None::<String>);
    let area = NodeRef::<html::Textarea>::new();
    let shown = move || draft.get().or_else(|| source().and_then(Result::ok)).unwrap_or_default();
    let apply = move |_| {
        let text = shown();
        match parse_schema(&text) {
            Ok(schema) => {
                problem.set(None);
                draft.set(None);
                edit_agent(editor, &id, |a| {
                    a.output_schema = Some(schema);
                    a.output_schema_ref = None;
                });
            }
            Err(e) => problem.set(Some(e)),
        }
    };
    let copy = move |_| {
        if let Some(area) = area.get_untracked() {
            area.select();
        }
        copy_text(shown(), copied);
    };
    let title = match &reference {
        Some(r) => format!("Raw JSON of {r}"),
        None => "Raw JSON".to_string(),
    };
    view! {
        <details class="raw" data-testid="schema-raw">
            <summary>{title}</summary>
            {move || match source() {
                None => Some(view! { <p class="hint">"Loading the schema…"</p> }.into_any()),
                Some(Err(e)) => Some(view! { <p class="error-text">{e}</p> }.into_any()),
                Some(Ok(_)) => None,
            }}
            {reference.is_some().then(|| view! {
                <p class="hint">"Applying edited JSON here makes this agent's schema inline, no longer a reference (Undo brings the reference back)."</p>
            })}
            <textarea data-testid="schema-json" rows="12" node_ref=area spellcheck="false" aria-label="Schema as JSON"
                prop:value=shown on:input=move |ev| draft.update_untracked(|d| *d = Some(event_target_value(&ev)))></textarea>
            <div class="raw-actions">
                <button data-testid="schema-json-apply" on:click=apply>"Apply"</button>
                <button data-testid="schema-json-copy" on:click=copy>"Copy"</button>
                {move || copied.get().map(|m| view! { <span class="hint" data-testid="schema-json-copied">{m}</span> })}
            </div>
            {move || problem.get().map(|e| view! { <p class="error-text" data-testid="schema-json-error" role="alert">{e}</p> })}
        </details>
    }
}

/// A schema by reference, pretty-printed, or why it could not be loaded.
async fn api_schema(reference: String) -> Result<String, String> {
    match api::schema(&reference).await {
        Ok(schema) => Ok(pretty(&schema)),
        Err(e) => Err(format!("`{reference}` could not be loaded: {}", e.message)),
    }
}

fn pretty(schema: &Value) -> String {
    serde_json::to_string_pretty(schema).unwrap_or_default()
}

/// The schema in pasted text, or what is wrong with it.
fn parse_schema(text: &str) -> Result<Value, String> {
    let value: Value = serde_json::from_str(text)
        .map_err(|e| format!("This is not valid JSON ({e}). Fix it and apply again; nothing was changed."))?;
    if !value.is_object() {
        return Err("The schema must be a JSON object (`{ \"type\": \"object\", ... }`); nothing was changed.".into());
    }
    schema_to_fields(&value).map_err(|e| format!("Not applied: {e}."))?;
    Ok(value)
}

/// Puts `text` on the clipboard and says how that went in `outcome`. The textarea is
/// selected too, so Ctrl+C works where the browser refuses the clipboard.
fn copy_text(text: String, outcome: RwSignal<Option<String>>) {
    let write = web_sys::window()
        .and_then(|w| js_sys::Reflect::get(&w, &"navigator".into()).ok())
        .and_then(|n| js_sys::Reflect::get(&n, &"clipboard".into()).ok())
        .filter(|c| !c.is_undefined())
        .and_then(|c| {
            let f = js_sys::Reflect::get(&c, &"writeText".into()).ok()?.dyn_into::<js_sys::Function>().ok()?;
            f.call1(&c, &text.into()).ok()?.dyn_into::<js_sys::Promise>().ok()
        });
    let refused = "The browser refused the clipboard; the text is selected, press Ctrl+C.";
    match write {
        Some(promise) => spawn_local(async move {
            let done = wasm_bindgen_futures::JsFuture::from(promise).await.is_ok();
            outcome.set(Some(if done { "Copied to the clipboard." } else { refused }.to_string()));
        }),
        None => outcome.set(Some(refused.to_string())),
    }
}
