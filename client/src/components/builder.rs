//! The Structured Output editor: a schema reference or inline fields, the field
//! builder (rows of name, type, required, description and constraints, nested for
//! objects), a template, a raw JSON view that accepts pasted schemas, and the
//! lowering preview for the agent's provider.

use conclave_shared::{AgentConfig, Field, FieldType, FieldsDoc, fields_to_schema, schema_to_fields};
use leptos::prelude::*;
use leptos::task::spawn_local;

use super::inspector::edit_agent;
use crate::api;
use crate::state::Editor;

/// The Structured Output section of an agent.
#[component]
pub fn SchemaEditor(id: String, agent: AgentConfig) -> impl IntoView {
    let editor = expect_context::<Editor>();
    let doc = agent.output_schema.as_ref().and_then(|s| schema_to_fields(s).ok());
    let reference = agent.output_schema_ref.clone();
    let raw = RwSignal::new(
        agent.output_schema.as_ref().map(|s| serde_json::to_string_pretty(s).unwrap_or_default()).unwrap_or_default(),
    );
    let raw_error = RwSignal::new(None::<String>);
    let (rid, tid, aid) = (id.clone(), id.clone(), id.clone());
    let set_doc = {
        let id = id.clone();
        move |doc: FieldsDoc| edit_agent(editor, &id, |a| a.output_schema = Some(fields_to_schema(&doc)))
    };
    view! {
        <section class="schema">
            <h4>"Structured Output"</h4>
            <label>"Schema"
                <select data-testid="schema-source" on:change=move |ev| {
                    let v = event_target_value(&ev);
                    edit_agent(editor, &rid, |a| if v.is_empty() {
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
            {doc.clone().map(|doc| {
                let set = set_doc.clone();
                let template = set_doc.clone();
                view! {
                    <div class="builder">
                        <div class="builder-actions">
                            <button data-testid="field-add" on:click={
                                let (doc, set) = (doc.clone(), set.clone());
                                move |_| { let mut d = doc.clone(); d.fields.push(new_field(&d.fields)); set(d); }
                            }>"Add field"</button>
                            <button data-testid="schema-template" on:click=move |_| {
                                let template = template.clone();
                                spawn_local(async move {
                                    if let Ok(schema) = api::schema("review.findings.v1").await
                                        && let Ok(d) = schema_to_fields(&schema)
                                    {
                                        template(d);
                                    }
                                });
                            }>"Start from template"</button>
                        </div>
                        <Rows fields=doc.fields.clone() on_change=Callback::new({
                            let (doc, set) = (doc.clone(), set.clone());
                            move |fields: Vec<Field>| set(FieldsDoc { fields, extra: doc.extra.clone() })
                        })/>
                        {(!doc.extra.is_empty()).then(|| view! {
                            <p class="kept">{format!("Kept from the raw schema: {}", doc.extra.keys().cloned().collect::<Vec<_>>().join(", "))}</p>
                        })}
                    </div>
                }
            })}
            {agent.output_schema.is_some().then(|| view! {
                <details class="raw">
                    <summary>"Raw JSON"</summary>
                    <textarea data-testid="schema-json" rows="10" prop:value=move || raw.get() on:input=move |ev| raw.set(event_target_value(&ev))></textarea>
                    <button data-testid="schema-json-apply" on:click=move |_| {
                        match serde_json::from_str::<serde_json::Value>(&raw.get_untracked()) {
                            Ok(schema) if schema_to_fields(&schema).is_ok() => {
                                raw_error.set(None);
                                edit_agent(editor, &tid, |a| a.output_schema = Some(schema));
                            }
                            Ok(_) => raw_error.set(Some("the root must be {\"type\": \"object\"}".into())),
                            Err(e) => raw_error.set(Some(format!("not JSON: {e}"))),
                        }
                    }>"Apply"</button>
                    {move || raw_error.get().map(|e| view! { <p class="error-text">{e}</p> })}
                </details>
            })}
            <LoweringPreview id=aid agent=agent/>
        </section>
    }
}

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

/// One field: `update` gets the edited field, or `None` to remove it.
#[component]
fn Row(field: Field, update: Callback<Option<Field>>) -> AnyView {
    let f = field.clone();
    let with = move |change: Box<dyn FnOnce(&mut Field)>| {
        let mut next = f.clone();
        change(&mut next);
        update.run(Some(next));
    };
    let number = |text: String| text.trim().parse::<f64>().ok();
    let count = |text: String| text.trim().parse::<u64>().ok();
    let t = field.field_type;
    let nested =
        matches!(t, FieldType::Object) || (t == FieldType::Array && field.item_type == Some(FieldType::Object));
    let kept = field.kept_keywords();
    let w = with.clone();
    let w2 = with.clone();
    let w3 = with.clone();
    let w4 = with.clone();
    view! {
        <div class="field-row" data-testid="field-row">
            <div class="field-main">
                <input data-testid="field-name" prop:value=field.name.clone() placeholder="name"
                    on:change=move |ev| { let v = event_target_value(&ev); w(Box::new(move |f| f.name = v)); } />
                <select data-testid="field-type" on:change=move |ev| {
                    let v = FieldType::parse(&event_target_value(&ev)).unwrap_or(FieldType::String);
                    w2(Box::new(move |f| {
                        let (name, required, description) = (f.name.clone(), f.required, f.description.clone());
                        *f = Field::new(name, v);
                        f.required = required;
                        f.description = description;
                        if v != FieldType::Array { f.item_type = None; }
                    }));
                }>
                    {FieldType::BUILDER.iter().chain(t.eq(&FieldType::Custom).then_some(&FieldType::Custom)).map(|ft| view! {
                        <option value=ft.as_str() selected=*ft == t>{ft.as_str()}</option>
                    }).collect_view()}
                </select>
                <button class="remove" data-testid="field-remove" title="Remove field" on:click=move |_| update.run(None)>"×"</button>
            </div>
            <div class="field-second">
                <input data-testid="field-description" placeholder="description for the model" prop:value=field.description.clone()
                    on:change=move |ev| { let v = event_target_value(&ev); w4(Box::new(move |f| f.description = v)); } />
                <label class="check"><input type="checkbox" data-testid="field-required" prop:checked=field.required
                    on:change=move |ev| { let on = event_target_checked(&ev); w3(Box::new(move |f| f.required = on)); } />"required"</label>
            </div>
            <div class="constraints">
                {matches!(t, FieldType::Integer | FieldType::Number).then(|| {
                    let (a, b) = (with.clone(), with.clone());
                    view! {
                        <input data-testid="field-min" placeholder="minimum" prop:value=field.minimum.map(|v| v.to_string()).unwrap_or_default()
                            on:change=move |ev| { let v = number(event_target_value(&ev)); a(Box::new(move |f| f.minimum = v)); } />
                        <input data-testid="field-max" placeholder="maximum" prop:value=field.maximum.map(|v| v.to_string()).unwrap_or_default()
                            on:change=move |ev| { let v = number(event_target_value(&ev)); b(Box::new(move |f| f.maximum = v)); } />
                    }
                })}
                {(t == FieldType::String).then(|| {
                    let (a, b) = (with.clone(), with.clone());
                    view! {
                        <input data-testid="field-min-length" placeholder="min length" prop:value=field.min_length.map(|v| v.to_string()).unwrap_or_default()
                            on:change=move |ev| { let v = count(event_target_value(&ev)); a(Box::new(move |f| f.min_length = v)); } />
                        <input data-testid="field-max-length" placeholder="max length" prop:value=field.max_length.map(|v| v.to_string()).unwrap_or_default()
                            on:change=move |ev| { let v = count(event_target_value(&ev)); b(Box::new(move |f| f.max_length = v)); } />
                    }
                })}
                {(t == FieldType::Enum || (t == FieldType::Array && field.item_type == Some(FieldType::Enum))).then(|| {
                    let a = with.clone();
                    view! {
                        <input data-testid="field-enum-values" placeholder="values, comma-separated" prop:value=field.enum_values.join(", ")
                            on:change=move |ev| {
                                let values: Vec<String> = event_target_value(&ev).split(',').map(|v| v.trim().to_string()).filter(|v| !v.is_empty()).collect();
                                a(Box::new(move |f| f.enum_values = values));
                            } />
                    }
                })}
                {(t == FieldType::Array).then(|| {
                    let a = with.clone();
                    let item = field.item_type;
                    view! {
                        <select data-testid="field-item-type" on:change=move |ev| {
                            let v = FieldType::parse(&event_target_value(&ev));
                            a(Box::new(move |f| { f.item_type = v; f.fields.clear(); f.enum_values.clear(); }));
                        }>
                            {[FieldType::String, FieldType::Integer, FieldType::Number, FieldType::Boolean, FieldType::Enum, FieldType::Object].iter().map(|ft| view! {
                                <option value=ft.as_str() selected=Some(*ft) == item>{format!("items: {}", ft.as_str())}</option>
                            }).collect_view()}
                        </select>
                    }
                })}
            </div>
            {(!kept.is_empty()).then(|| view! { <p class="kept" data-testid="field-kept">{format!("kept: {}", kept.join(", "))}</p> })}
            {nested.then(|| {
                let (a, b) = (with.clone(), with.clone());
                let fields = field.fields.clone();
                let existing = fields.clone();
                view! {
                    <div class="nested">
                        <Rows fields=fields on_change=Callback::new(move |fs: Vec<Field>| a(Box::new(move |f| f.fields = fs)))/>
                        <button class="link" data-testid="field-add-nested" on:click=move |_| {
                            let added = new_field(&existing);
                            b(Box::new(move |f| f.fields.push(added)));
                        }>"+ nested field"</button>
                    </div>
                }
            })}
        </div>
    }
    .into_any()
}

/// What the agent's provider will receive, with every change listed.
#[component]
fn LoweringPreview(id: String, agent: AgentConfig) -> impl IntoView {
    let result = RwSignal::new(None::<Result<api::Lowering, String>>);
    let _ = id;
    let (schema, reference, provider) =
        (agent.output_schema.clone(), agent.output_schema_ref.clone(), agent.provider.clone());
    spawn_local(async move {
        let outcome = api::lower(schema.as_ref(), reference.as_deref(), &provider).await.map_err(|e| e.message);
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
                                <li class=format!("note {}", n.kind)><code>{if n.path.is_empty() { "/".to_string() } else { n.path }}</code>" "{n.message}</li>
                            }).collect_view()}</ul> }.into_any()
                        }}
                    }.into_any()
                }
            }}
        </div>
    }
}
