//! The Structured Output editor: a schema reference or inline fields, the field
//! builder (rows of name, type, required, description and constraints, nested for
//! objects), a template, a raw JSON view that accepts pasted schemas, and the
//! lowering preview for the agent's provider.

use conclave_shared::api::{LowerRequest, LowerResponse};
use conclave_shared::{AgentConfig, Field, FieldType, FieldsDoc, fields_to_schema, schema_to_fields};
use leptos::prelude::*;
use leptos::task::spawn_local;

use super::inspector::edit_agent;
use crate::api;
use crate::state::Editor;

/// The Structured Output section of an agent.
#[component]
pub fn SchemaEditor(id: String, agent: AgentConfig) -> impl IntoView {
    let doc = agent.output_schema.as_ref().and_then(|s| schema_to_fields(s).ok());
    view! {
        <section class="schema">
            <h4>"Structured Output"</h4>
            <SchemaSource id=id.clone() reference=agent.output_schema_ref.clone()/>
            {doc.map(|doc| view! { <FieldBuilder id=id.clone() doc=doc/> })}
            {agent.output_schema.clone().map(|schema| view! { <RawSchema id=id.clone() schema=schema/> })}
            <LoweringPreview agent=agent/>
        </section>
    }
}

/// Where the schema comes from: inline fields, or a reference to a schema file.
#[component]
fn SchemaSource(id: String, reference: Option<String>) -> impl IntoView {
    let editor = expect_context::<Editor>();
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
                <option value="" selected=reference.is_none()>"Inline fields"</option>
                {move || editor.schema_refs.get().into_iter().map(|r| {
                    let chosen = reference.as_deref() == Some(r.as_str());
                    view! { <option value=r.clone() selected=chosen>{r.clone()}</option> }
                }).collect_view()}
            </select>
        </label>
    }
}

/// The field builder for an inline schema: its rows, adding a field, and starting
/// from the findings template.
#[component]
fn FieldBuilder(id: String, doc: FieldsDoc) -> impl IntoView {
    let editor = expect_context::<Editor>();
    let set_doc = Callback::new(move |doc: FieldsDoc| {
        edit_agent(editor, &id, |a| a.output_schema = Some(fields_to_schema(&doc)))
    });
    let extra = doc.extra.clone();
    let add = {
        let doc = doc.clone();
        move |_| {
            let mut d = doc.clone();
            d.fields.push(new_field(&d.fields));
            set_doc.run(d);
        }
    };
    let on_change = Callback::new(move |fields: Vec<Field>| set_doc.run(FieldsDoc { fields, extra: extra.clone() }));
    view! {
        <div class="builder">
            <div class="builder-actions">
                <button data-testid="field-add" on:click=add>"Add field"</button>
                <button data-testid="schema-template" on:click=move |_| {
                    spawn_local(async move {
                        if let Ok(schema) = api::schema("review.findings.v1").await
                            && let Ok(d) = schema_to_fields(&schema)
                        {
                            // The builder may have gone (another node selected) while the
                            // template loaded; then there is nothing to fill.
                            let _ = set_doc.try_run(d);
                        }
                    });
                }>"Start from template"</button>
            </div>
            <Rows fields=doc.fields.clone() on_change=on_change/>
            {(!doc.extra.is_empty()).then(|| view! {
                <p class="kept">{format!("Kept from the raw schema: {}", doc.extra.keys().cloned().collect::<Vec<_>>().join(", "))}</p>
            })}
        </div>
    }
}

/// The schema as raw JSON, where a pasted schema replaces the fields.
#[component]
fn RawSchema(id: String, schema: serde_json::Value) -> impl IntoView {
    let editor = expect_context::<Editor>();
    let raw = RwSignal::new(serde_json::to_string_pretty(&schema).unwrap_or_default());
    let raw_error = RwSignal::new(None::<String>);
    let apply = move |_| match serde_json::from_str::<serde_json::Value>(&raw.get_untracked()) {
        Ok(schema) if schema_to_fields(&schema).is_ok() => {
            raw_error.set(None);
            edit_agent(editor, &id, |a| a.output_schema = Some(schema));
        }
        Ok(_) => raw_error.set(Some("the root must be {\"type\": \"object\"}".into())),
        Err(e) => raw_error.set(Some(format!("not JSON: {e}"))),
    };
    view! {
        <details class="raw">
            <summary>"Raw JSON"</summary>
            <textarea data-testid="schema-json" rows="10" prop:value=move || raw.get() on:input=move |ev| raw.set(event_target_value(&ev))></textarea>
            <button data-testid="schema-json-apply" on:click=apply>"Apply"</button>
            {move || raw_error.get().map(|e| view! { <p class="error-text">{e}</p> })}
        </details>
    }
}

/// A constraint's value as its input shows it: empty when unset.
fn shown(value: Option<impl ToString>) -> String {
    value.map(|v| v.to_string()).unwrap_or_default()
}

/// A new string field named `field1`, `field2`, ..., whichever is free.
fn new_field(existing: &[Field]) -> Field {
    let name = (1..).map(|n| format!("field{n}")).find(|n| !existing.iter().any(|f| &f.name == n)).unwrap_or_default();
    let mut f = Field::new(name, FieldType::String);
    f.item_type = None;
    f
}

/// Rows of fields; `on_change` gets the whole edited list.
#[component]
fn Rows(fields: Vec<Field>, on_change: Callback<Vec<Field>>) -> AnyView {
    fields
        .iter()
        .enumerate()
        .map(|(index, field)| {
            let all = fields.clone();
            let update = Callback::new(move |f: Option<Field>| {
                let mut next = all.clone();
                match f {
                    Some(f) => next[index] = f,
                    None => {
                        next.remove(index);
                    }
                }
                on_change.run(next);
            });
            view! { <Row field=field.clone() update=update/> }
        })
        .collect_view()
        .into_any()
}

/// How a row's editors change their field: each applies its change to a copy of the
/// field and hands the copy to the row's `update`, which rebuilds the schema.
#[derive(Debug, Clone, Copy)]
struct FieldEdit {
    field: StoredValue<Field>,
    update: Callback<Option<Field>>,
}

impl FieldEdit {
    fn apply(self, change: impl FnOnce(&mut Field)) {
        let mut next = self.field.get_value();
        change(&mut next);
        self.update.run(Some(next));
    }

    fn remove(self) {
        self.update.run(None);
    }
}

/// One field: `update` gets the edited field, or `None` to remove it.
#[component]
fn Row(field: Field, update: Callback<Option<Field>>) -> AnyView {
    let edit = FieldEdit { field: StoredValue::new(field.clone()), update };
    let t = field.field_type;
    let nested =
        matches!(t, FieldType::Object) || (t == FieldType::Array && field.item_type == Some(FieldType::Object));
    let kept = field.kept_keywords();
    view! {
        <div class="field-row" data-testid="field-row">
            <div class="field-main">
                <input data-testid="field-name" prop:value=field.name.clone() placeholder="name"
                    on:change=move |ev| { let v = event_target_value(&ev); edit.apply(move |f| f.name = v); } />
                <TypeSelect current=t edit=edit/>
                <button class="remove" data-testid="field-remove" title="Remove field" on:click=move |_| edit.remove()>"×"</button>
            </div>
            <div class="field-second">
                <input data-testid="field-description" placeholder="description for the model" prop:value=field.description.clone()
                    on:change=move |ev| { let v = event_target_value(&ev); edit.apply(move |f| f.description = v); } />
                <label class="check"><input type="checkbox" data-testid="field-required" prop:checked=field.required
                    on:change=move |ev| { let on = event_target_checked(&ev); edit.apply(move |f| f.required = on); } />"required"</label>
            </div>
            <Constraints field=field.clone() edit=edit/>
            {(!kept.is_empty()).then(|| view! { <p class="kept" data-testid="field-kept">{format!("kept: {}", kept.join(", "))}</p> })}
            {nested.then(|| view! { <NestedFields fields=field.fields.clone() edit=edit/> })}
        </div>
    }
    .into_any()
}

/// A field's type; changing it keeps the name, whether it is required and the
/// description, and starts the constraints afresh.
#[component]
fn TypeSelect(current: FieldType, edit: FieldEdit) -> impl IntoView {
    view! {
        <select data-testid="field-type" on:change=move |ev| {
            let v = FieldType::parse(&event_target_value(&ev)).unwrap_or(FieldType::String);
            edit.apply(move |f| {
                let (name, required, description) = (f.name.clone(), f.required, f.description.clone());
                *f = Field::new(name, v);
                f.required = required;
                f.description = description;
                if v != FieldType::Array { f.item_type = None; }
            });
        }>
            {FieldType::BUILDER.iter().chain(current.eq(&FieldType::Custom).then_some(&FieldType::Custom)).map(|ft| view! {
                <option value=ft.as_str() selected=*ft == current>{ft.as_str()}</option>
            }).collect_view()}
        </select>
    }
}

/// The constraints a field's type allows: bounds for numbers, lengths for strings,
/// values for enums, and the item type for arrays.
#[component]
fn Constraints(field: Field, edit: FieldEdit) -> impl IntoView {
    let number = |text: String| text.trim().parse::<f64>().ok();
    let count = |text: String| text.trim().parse::<u64>().ok();
    let t = field.field_type;
    let is_enum = t == FieldType::Enum || (t == FieldType::Array && field.item_type == Some(FieldType::Enum));
    view! {
        <div class="constraints">
            {matches!(t, FieldType::Integer | FieldType::Number).then(|| view! {
                <input data-testid="field-min" placeholder="minimum" prop:value=shown(field.minimum)
                    on:change=move |ev| { let v = number(event_target_value(&ev)); edit.apply(move |f| f.minimum = v); } />
                <input data-testid="field-max" placeholder="maximum" prop:value=shown(field.maximum)
                    on:change=move |ev| { let v = number(event_target_value(&ev)); edit.apply(move |f| f.maximum = v); } />
            })}
            {(t == FieldType::String).then(|| view! {
                <input data-testid="field-min-length" placeholder="min length" prop:value=shown(field.min_length)
                    on:change=move |ev| { let v = count(event_target_value(&ev)); edit.apply(move |f| f.min_length = v); } />
                <input data-testid="field-max-length" placeholder="max length" prop:value=shown(field.max_length)
                    on:change=move |ev| { let v = count(event_target_value(&ev)); edit.apply(move |f| f.max_length = v); } />
            })}
            {is_enum.then(|| view! {
                <input data-testid="field-enum-values" placeholder="values, comma-separated" prop:value=field.enum_values.join(", ")
                    on:change=move |ev| {
                        let values: Vec<String> = event_target_value(&ev).split(',').map(|v| v.trim().to_string()).filter(|v| !v.is_empty()).collect();
                        edit.apply(move |f| f.enum_values = values);
                    } />
            })}
            {(t == FieldType::Array).then(|| view! { <ItemTypeSelect current=field.item_type edit=edit/> })}
        </div>
    }
}

/// An array field's item type; changing it clears what belonged to the old one.
#[component]
fn ItemTypeSelect(current: Option<FieldType>, edit: FieldEdit) -> impl IntoView {
    const ITEM_TYPES: [FieldType; 6] = [
        FieldType::String,
        FieldType::Integer,
        FieldType::Number,
        FieldType::Boolean,
        FieldType::Enum,
        FieldType::Object,
    ];
    view! {
        <select data-testid="field-item-type" on:change=move |ev| {
            let v = FieldType::parse(&event_target_value(&ev));
            edit.apply(move |f| { f.item_type = v; f.fields.clear(); f.enum_values.clear(); });
        }>
            {ITEM_TYPES.iter().map(|ft| view! {
                <option value=ft.as_str() selected=Some(*ft) == current>{format!("items: {}", ft.as_str())}</option>
            }).collect_view()}
        </select>
    }
}

/// The fields of an object (or of an array's object items), with a button to add one.
#[component]
fn NestedFields(fields: Vec<Field>, edit: FieldEdit) -> impl IntoView {
    let existing = fields.clone();
    view! {
        <div class="nested">
            <Rows fields=fields on_change=Callback::new(move |fs: Vec<Field>| edit.apply(move |f| f.fields = fs))/>
            <button class="link" data-testid="field-add-nested" on:click=move |_| {
                let added = new_field(&existing);
                edit.apply(move |f| f.fields.push(added));
            }>"+ nested field"</button>
        </div>
    }
}

/// What the agent's provider will receive, with every change listed.
#[component]
fn LoweringPreview(agent: AgentConfig) -> impl IntoView {
    let result = RwSignal::new(None::<Result<LowerResponse, String>>);
    // An inline schema wins over a reference, as it does when the agent runs.
    let request = LowerRequest {
        schema_ref: if agent.output_schema.is_none() { agent.output_schema_ref.clone() } else { None },
        schema: agent.output_schema.clone(),
        provider: agent.provider.clone(),
    };
    spawn_local(async move {
        let outcome = api::lower(&request).await.map_err(|e| e.message);
        result.set(Some(outcome));
    });
    view! {
        <div class="lowering" data-testid="lowering-preview">
            <h4>"Lowering preview"</h4>
            {move || match result.get() {
                None => view! { <p class="hint">"…"</p> }.into_any(),
                Some(Err(e)) => view! { <p class="error-text">{e}</p> }.into_any(),
                Some(Ok(l)) => {
                    let how = if l.native { format!("native structured output ({})", l.target) } else { "prompt contract".to_string() };
                    view! {
                        <p>{how}</p>
                        {if l.notes.is_empty() {
                            view! { <p class="hint">"Nothing is dropped or changed."</p> }.into_any()
                        } else {
                            view! { <ul>{l.notes.into_iter().map(|n| view! {
                                <li class=format!("note {}", n.kind.as_str())><code>{if n.path.is_empty() { "/".to_string() } else { n.path }}</code>" "{n.message}</li>
                            }).collect_view()}</ul> }.into_any()
                        }}
                    }.into_any()
                }
            }}
        </div>
    }
}
