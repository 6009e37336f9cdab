//! The Structured Output editor: a schema reference or inline fields, the field
//! builder (rows of name, type, required, description and constraints, nested for
//! objects, in `field_row.rs`, with their state in `edit/fields.rs`), a template,
//! the raw JSON view (`raw_schema.rs`) and the lowering preview of every provider
//! dialect (`lowering_preview.rs`).

use leptos::prelude::*;
use leptos::task::spawn_local;

use super::field_row::FieldRows;
use super::lowering_preview::LoweringPreview;
use super::raw_schema::RawSchema;
use crate::api;
use crate::edit::agent::{agent_schema, agent_value, edit_agent};
use crate::edit::fields::{Target, add_field, builder_for};
use crate::state::Editor;

/// Where an agent's schema comes from.
#[derive(Debug, Clone, PartialEq)]
enum Source {
    Inline,
    Reference(String),
}

/// The Structured Output section of an agent.
#[component]
pub fn SchemaEditor(id: String) -> impl IntoView {
    let editor = expect_context::<Editor>();
    let source = agent_value(editor, &id, |a| match (&a.output_schema, &a.output_schema_ref) {
        (Some(_), _) => Some(Source::Inline),
        (None, Some(r)) => Some(Source::Reference(r.clone())),
        (None, None) => None,
    });
    let source = Memo::new(move |_| source.get().flatten());
    let reference = Memo::new(move |_| match source.get() {
        Some(Source::Reference(r)) => Some(r),
        _ => None,
    });
    let body = {
        let id = id.clone();
        move || match source.get() {
            Some(Source::Inline) => view! {
                <FieldBuilder id=id.clone()/>
                <RawSchema id=id.clone() reference=None/>
            }
            .into_any(),
            Some(Source::Reference(r)) => view! { <RawSchema id=id.clone() reference=Some(r)/> }.into_any(),
            None => ().into_any(),
        }
    };
    view! {
        <section class="schema">
            <h4>"Structured Output"</h4>
            <SchemaSource id=id.clone() reference=reference/>
            {body}
            <LoweringPreview id=id/>
        </section>
    }
}

/// Where the schema comes from: inline fields, or a reference to a schema file.
#[component]
fn SchemaSource(id: String, reference: Memo<Option<String>>) -> impl IntoView {
    let editor = expect_context::<Editor>();
    let options = move || {
        let current = reference.get();
        let mut refs = editor.schema_refs.get();
        if let Some(r) = current.clone().filter(|r| !refs.contains(r)) {
            refs.push(r);
        }
        refs.into_iter()
            .map(|r| {
                let chosen = current.as_deref() == Some(r.as_str());
                view! { <option value=r.clone() prop:selected=chosen>{r.clone()}</option> }
            })
            .collect_view()
    };
    view! {
        <label>"Schema"
            <select data-testid="schema-source" on:change=move |ev| {
                let v = event_target_value(&ev);
                edit_agent(editor, &id, |a| if v.is_empty() {
                    a.output_schema_ref = None;
                    a.output_schema.get_or_insert_with(conclave_shared::empty_schema);
                } else {
                    a.output_schema = None;
                    a.output_schema_ref = Some(v);
                });
            }>
                <option value="" prop:selected=move || reference.get().is_none()>"Inline fields"</option>
                {options}
            </select>
        </label>
    }
}

/// The field builder for an inline schema: its rows, adding a field, and starting
/// from the findings template. Its rows are the session's rows for this agent
/// (`edit/fields.rs`), rebuilt only when the schema changes from elsewhere.
#[component]
fn FieldBuilder(id: String) -> impl IntoView {
    let editor = expect_context::<Editor>();
    let schema = agent_schema(editor, &id);
    let conclave = editor.conclave.with_untracked(|c| c.as_ref().map(|c| c.id.clone())).unwrap_or_default();
    let initial = schema.get_untracked().unwrap_or_else(conclave_shared::empty_schema);
    let builder = builder_for(editor, Target { conclave, node: id.clone() }, &initial);
    let follow = builder.clone();
    Effect::new(move |_| {
        if let Some(schema) = schema.get() {
            follow.follow(&schema);
        }
    });
    let leaving = builder.clone();
    on_cleanup(move || queue_microtask(move || leaving.flush(editor)));
    let (rows, extra, unreadable) = (builder.rows.clone(), builder.extra.clone(), builder.unreadable.clone());
    let unreadable_now = RwSignal::from(unreadable.clone());
    let stored = StoredValue::new(builder.clone());
    let add = move |_| stored.with_value(|b| add_field(editor, b, &b.rows));
    let template = move |_| {
        let id = id.clone();
        spawn_local(async move {
            match api::schema("review.findings.v1").await {
                Ok(schema) => edit_agent(editor, &id, |a| {
                    if a.output_schema.is_some() {
                        a.output_schema = Some(schema);
                    }
                }),
                Err(e) => editor.say(format!("The template could not be loaded: {}", e.message), true),
            }
        });
    };
    view! {
        <div class="builder">
            <div class="builder-actions">
                <button data-testid="field-add" on:click=add disabled=move || unreadable_now.with(Option::is_some)>"Add field"</button>
                <button data-testid="schema-template" on:click=template>"Start from template"</button>
            </div>
            {move || unreadable.get().map(|e| view! {
                <p class="error-text">{format!("The builder cannot show this schema ({e}); edit it as raw JSON below.")}</p>
            })}
            <FieldRows builder=builder rows=rows/>
            {move || extra.with(|extra| (!extra.is_empty()).then(|| view! {
                <p class="kept">{format!("Kept from the raw schema: {}", extra.keys().cloned().collect::<Vec<_>>().join(", "))}</p>
            }))}
        </div>
    }
}
