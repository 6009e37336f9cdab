//! The field builder's rows on screen: one row per field (name, type, reorder and
//! remove buttons, description, required, the constraints its type allows, nested
//! rows for objects), keyed by the row's own id. A keystroke touches only the row's
//! typed text; `change` (Tab, Enter, leaving the input), selects, checkboxes and
//! buttons commit the builder (`edit/fields.rs`). A `change` fired by a pointer press
//! elsewhere (a click on this row's "required" box) is committed at the pointer's
//! release (`edit/press.rs`), so the click lands on the page it was pressed on.

use conclave_shared::FieldType;
use leptos::html;
use leptos::prelude::*;

use crate::edit::fields::{Builder, Input, Row, add_field};
use crate::edit::press::after_press;
use crate::state::Editor;

/// The rows of one list of fields (the root's or an object's).
#[component]
pub fn FieldRows(builder: Builder, rows: ArcRwSignal<Vec<Row>>) -> impl IntoView {
    let list = rows.clone();
    view! {
        <For each=move || list.get() key=|row: &Row| row.id children=move |row: Row| {
            view! { <FieldRow builder=builder.clone() siblings=rows.clone() row=row/> }
        }/>
    }
}

/// One field.
#[component]
fn FieldRow(builder: Builder, siblings: ArcRwSignal<Vec<Row>>, row: Row) -> AnyView {
    let editor = expect_context::<Editor>();
    let id = row.id;
    let field = RwSignal::from(row.field.clone());
    let siblings = RwSignal::from(siblings);
    let problems = RwSignal::from(builder.problems.clone());
    let (r, b) = (StoredValue::new(row.clone()), StoredValue::new(builder.clone()));
    let commit = move || b.with_value(|b| b.commit(editor));
    let ty = Memo::new(move |_| field.with(|f| f.field_type));
    let custom = Memo::new(move |_| ty.get() == FieldType::Custom);
    let nested = Memo::new(move |_| {
        field.with(|f| {
            f.field_type == FieldType::Object
                || (f.field_type == FieldType::Array && f.item_type == Some(FieldType::Object))
        })
    });
    let kept = Memo::new(move |_| field.with(|f| f.kept_keywords()));
    let name_ref = NodeRef::<html::Input>::new();
    Effect::new(move |_| {
        if let Some(input) = name_ref.get()
            && b.with_value(|b| b.focus.get_value()) == Some(id)
        {
            b.with_value(|b| b.focus.set_value(None));
            request_animation_frame(move || {
                let _ = input.focus();
                input.select();
            });
        }
    });
    let (up, down) = (NodeRef::<html::Button>::new(), NodeRef::<html::Button>::new());
    let shift = move |delta: isize, button: NodeRef<html::Button>| {
        let moved = siblings.try_update(|list| {
            let from = list.iter().position(|x| x.id == id)?;
            let to = from.checked_add_signed(delta).filter(|to| *to < list.len())?;
            list.swap(from, to);
            Some(())
        });
        if moved.flatten().is_some() {
            commit();
        }
        // Moving a row moves its element, which takes focus from the button pressed.
        request_animation_frame(move || {
            if let Some(button) = button.get_untracked() {
                let _ = button.focus();
            }
        });
    };
    let remove = move |_| {
        siblings.update(|list| list.retain(|x| x.id != id));
        commit();
    };
    let add_nested = move |_| b.with_value(|b| r.with_value(|r| add_field(editor, b, &r.children)));
    let children = row.children.clone();
    view! {
        <div class="field-row" class:invalid=move || problems.with(|p| p.contains_key(&id)) data-testid="field-row">
            <div class="field-main">
                <input data-testid="field-name" node_ref=name_ref placeholder="name" aria-label="Field name"
                    prop:value=move || r.with_value(|r| r.text(Input::Name))
                    on:input=move |ev| r.with_value(|r| r.typing(Input::Name, event_target_value(&ev)))
                    on:change=move |ev| commit_text(editor, b, r, Input::Name, event_target_value(&ev)) />
                <TypeSelect ty=ty on_pick=Callback::new(move |t| { r.with_value(|r| r.retype(t)); commit(); })/>
                <div class="order">
                    <button class="icon" data-testid="field-up" node_ref=up title="Move up" aria-label="Move field up"
                        on:click=move |_| shift(-1, up)>"↑"</button>
                    <button class="icon" data-testid="field-down" node_ref=down title="Move down" aria-label="Move field down"
                        on:click=move |_| shift(1, down)>"↓"</button>
                </div>
                <button class="icon remove" data-testid="field-remove" title="Remove field" aria-label="Remove field" on:click=remove>"×"</button>
            </div>
            {move || problems.with(|p| p.get(&id).cloned()).map(|p| view! { <p class="field-error" data-testid="field-error" role="alert">{p}</p> })}
            <div class="field-second">
                // A custom field's description is part of its raw schema.
                {move || (!custom.get()).then(|| text_input(b, r, Input::Description, "field-description", "description for the model"))}
                <label class="check"><input type="checkbox" data-testid="field-required" prop:checked=move || field.with(|f| f.required)
                    on:change=move |ev| { let on = event_target_checked(&ev); field.update(|f| f.required = on); commit(); } />"required"</label>
            </div>
            <Constraints builder=b row=r/>
            {move || (!kept.get().is_empty()).then(|| view! { <p class="kept" data-testid="field-kept">{format!("kept: {}", kept.get().join(", "))}</p> })}
            {move || nested.get().then(|| view! {
                <div class="nested">
                    <FieldRows builder=b.get_value() rows=children.clone()/>
                    <button class="link" data-testid="field-add-nested" on:click=add_nested>"+ nested field"</button>
                </div>
            })}
        </div>
    }
    .into_any()
}

/// Takes `text` into `input` of row `r` and commits the builder (on `change`): at
/// once, or at the pointer's release when a press took the focus from the input.
/// The row and builder are taken now, while they surely exist.
fn commit_text(editor: Editor, b: StoredValue<Builder>, r: StoredValue<Row>, input: Input, text: String) {
    let (builder, row) = (b.get_value(), r.get_value());
    after_press(move || {
        row.change(input, &text);
        builder.commit(editor);
    });
}

/// A text input of a row: keystrokes stay in the row, `change` commits.
fn text_input(
    b: StoredValue<Builder>,
    r: StoredValue<Row>,
    input: Input,
    testid: &'static str,
    placeholder: &'static str,
) -> impl IntoView {
    let editor = expect_context::<Editor>();
    view! {
        <input data-testid=testid placeholder=placeholder aria-label=placeholder
            aria-invalid=move || r.with_value(|r| r.input_error(input).is_some()).to_string()
            prop:value=move || r.with_value(|r| r.text(input))
            on:input=move |ev| r.with_value(|r| r.typing(input, event_target_value(&ev)))
            on:change=move |ev| commit_text(editor, b, r, input, event_target_value(&ev)) />
    }
}

/// A constraint's input under its caption (a filled input shows no placeholder).
fn constraint(
    b: StoredValue<Builder>,
    r: StoredValue<Row>,
    input: Input,
    testid: &'static str,
    caption: &'static str,
) -> impl IntoView {
    let wide = input == Input::EnumValues;
    view! { <label class="constraint" class:wide=wide>{caption}{text_input(b, r, input, testid, caption)}</label> }
}

/// A field's type. Changing it keeps what still applies (`Field::retype`).
#[component]
fn TypeSelect(ty: Memo<FieldType>, on_pick: Callback<FieldType>) -> impl IntoView {
    view! {
        <select data-testid="field-type" aria-label="Field type" on:change=move |ev| {
            if let Some(t) = FieldType::parse(&event_target_value(&ev)) { on_pick.run(t); }
        }>
            {FieldType::BUILDER.iter().map(|ft| {
                let ft = *ft;
                view! { <option value=ft.as_str() prop:selected=move || ty.get() == ft>{ft.as_str()}</option> }
            }).collect_view()}
            {move || (ty.get() == FieldType::Custom).then(|| view! { <option value="custom" prop:selected=true>"custom"</option> })}
        </select>
    }
}

/// The constraints a field's type allows: bounds for numbers, lengths for strings,
/// values for enums, item type and counts for arrays; and what was refused.
#[component]
fn Constraints(builder: StoredValue<Builder>, row: StoredValue<Row>) -> impl IntoView {
    let editor = expect_context::<Editor>();
    let field = RwSignal::from(row.with_value(|r| r.field.clone()));
    let shape = Memo::new(move |_| field.with(|f| (f.field_type, f.item_type)));
    let b = builder;
    let inputs = move || {
        let (t, item) = shape.get();
        let is_enum = t == FieldType::Enum || (t == FieldType::Array && item == Some(FieldType::Enum));
        view! {
            {matches!(t, FieldType::Integer | FieldType::Number).then(|| view! {
                {constraint(b, row, Input::Min, "field-min", "minimum")}
                {constraint(b, row, Input::Max, "field-max", "maximum")}
            })}
            {(t == FieldType::String).then(|| view! {
                {constraint(b, row, Input::MinLength, "field-min-length", "min length")}
                {constraint(b, row, Input::MaxLength, "field-max-length", "max length")}
            })}
            {(t == FieldType::Array).then(|| view! {
                <ItemTypeSelect current=item on_pick=Callback::new(move |t| {
                    row.with_value(|r| r.retype_items(t));
                    b.with_value(|b| b.commit(editor));
                })/>
                {constraint(b, row, Input::MinItems, "field-min-items", "min items")}
                {constraint(b, row, Input::MaxItems, "field-max-items", "max items")}
            })}
            {is_enum.then(|| constraint(b, row, Input::EnumValues, "field-enum-values", "values, comma-separated"))}
        }
    };
    let refused =
        move || row.with_value(|r| r.drafts.with(|d| d.values().filter_map(|d| d.error.clone()).collect::<Vec<_>>()));
    view! {
        <div class="constraints">{inputs}</div>
        {move || refused().into_iter().map(|e| view! { <p class="input-error" data-testid="input-error" role="alert">{e}</p> }).collect_view()}
    }
}

/// An array field's item type; enum values and nested fields follow it
/// (`Field::retype_items`).
#[component]
fn ItemTypeSelect(current: Option<FieldType>, on_pick: Callback<Option<FieldType>>) -> impl IntoView {
    const ITEM_TYPES: [FieldType; 6] = [
        FieldType::String,
        FieldType::Integer,
        FieldType::Number,
        FieldType::Boolean,
        FieldType::Enum,
        FieldType::Object,
    ];
    view! {
        <select data-testid="field-item-type" aria-label="Item type" on:change=move |ev| on_pick.run(FieldType::parse(&event_target_value(&ev)))>
            {current.is_none().then(|| view! { <option value="" prop:selected=true>"items: (raw)"</option> })}
            {ITEM_TYPES.iter().map(|ft| view! {
                <option value=ft.as_str() prop:selected=Some(*ft) == current>{format!("items: {}", ft.as_str())}</option>
            }).collect_view()}
        </select>
    }
}
