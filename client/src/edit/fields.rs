//! The field builder's rows, kept per agent for the whole session: each row has an id
//! of its own (never its name), the text an author typed that is not committed yet,
//! and the constraints its earlier types used. Rows are committed to the conclave as
//! one undoable edit, and only while every name is valid, so nothing an author types
//! is dropped or merged.
//!
//! The rows outlive the builder's view (signals counted by reference, kept in a
//! thread-local store), so invalid rows survive selecting another node and coming
//! back, and [`unsaved_problem`] can name them when nothing shows them.
//! `field_row.rs` and `builder.rs` (the components) show them.

use conclave_shared::fields::{Shelf, free_field_name, name_problem, parse_bound, parse_count, same_json};
use conclave_shared::number::shortest;
use conclave_shared::{Field, FieldType, FieldsDoc, fields_to_schema, schema_to_fields};
use leptos::prelude::*;
use serde_json::{Map, Value};
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};

use super::agent::edit_agent;
use crate::state::Editor;

/// A text input of a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Input {
    Name,
    Description,
    Min,
    Max,
    MinLength,
    MaxLength,
    MinItems,
    MaxItems,
    EnumValues,
}

impl Input {
    /// What the input shows for `f` when nothing is typed into it.
    pub fn shown(self, f: &Field) -> String {
        fn text(v: Option<u64>) -> String {
            v.map(|v| v.to_string()).unwrap_or_default()
        }
        let bound = |v: Option<f64>| v.map(shortest).unwrap_or_default();
        match self {
            Input::Name => f.name.clone(),
            Input::Description => f.description.clone(),
            Input::Min => bound(f.minimum),
            Input::Max => bound(f.maximum),
            Input::MinLength => text(f.min_length),
            Input::MaxLength => text(f.max_length),
            Input::MinItems => text(f.min_items),
            Input::MaxItems => text(f.max_items),
            Input::EnumValues => f.enum_values.join(", "),
        }
    }

    /// Puts typed `text` into `f`, or says why it cannot be.
    fn apply(self, f: &mut Field, text: &str) -> Result<(), String> {
        match self {
            Input::Name => f.name = text.trim().to_string(),
            Input::Description => f.description = text.to_string(),
            Input::Min => f.minimum = parse_bound(text, f.field_type)?,
            Input::Max => f.maximum = parse_bound(text, f.field_type)?,
            Input::MinLength => f.min_length = parse_count(text)?,
            Input::MaxLength => f.max_length = parse_count(text)?,
            Input::MinItems => f.min_items = parse_count(text)?,
            Input::MaxItems => f.max_items = parse_count(text)?,
            Input::EnumValues => {
                f.enum_values = text.split(',').map(str::trim).filter(|v| !v.is_empty()).map(str::to_string).collect()
            }
        }
        Ok(())
    }

    /// Whether a field like `f` has this input.
    pub fn applies_to(self, f: &Field) -> bool {
        let t = f.field_type;
        match self {
            Input::Name => true,
            Input::Description => t != FieldType::Custom,
            Input::Min | Input::Max => matches!(t, FieldType::Integer | FieldType::Number),
            Input::MinLength | Input::MaxLength => t == FieldType::String,
            Input::MinItems | Input::MaxItems => t == FieldType::Array,
            Input::EnumValues => {
                t == FieldType::Enum || (t == FieldType::Array && f.item_type == Some(FieldType::Enum))
            }
        }
    }

    /// The input's name in messages.
    fn label(self) -> &'static str {
        match self {
            Input::Name => "name",
            Input::Description => "description",
            Input::Min => "minimum",
            Input::Max => "maximum",
            Input::MinLength => "min length",
            Input::MaxLength => "max length",
            Input::MinItems => "min items",
            Input::MaxItems => "max items",
            Input::EnumValues => "values",
        }
    }
}

/// Text typed into an input and not yet in the row's field: still being typed
/// (`error` is `None`), or refused (`error` says why).
#[derive(Debug, Clone, PartialEq)]
pub struct Draft {
    pub text: String,
    pub error: Option<String>,
}

/// One field of the builder, for the session.
#[derive(Debug, Clone)]
pub struct Row {
    /// Stable while the row exists; what the view is keyed by.
    pub id: u64,
    /// The field as the row has it; its nested fields are `children`.
    pub field: ArcRwSignal<Field>,
    /// Nested rows (for objects and arrays of objects).
    pub children: ArcRwSignal<Vec<Row>>,
    /// Constraints earlier types of this row used.
    shelf: ArcStoredValue<Shelf>,
    /// Text typed into inputs and not in `field`.
    pub drafts: ArcRwSignal<BTreeMap<Input, Draft>>,
}

static NEXT_ROW: AtomicU64 = AtomicU64::new(1);

impl Row {
    /// A row for `field`, with rows for its nested fields.
    pub fn new(mut field: Field) -> Row {
        let children = std::mem::take(&mut field.fields).into_iter().map(Row::new).collect();
        Row {
            id: NEXT_ROW.fetch_add(1, Ordering::Relaxed),
            field: ArcRwSignal::new(field),
            children: ArcRwSignal::new(children),
            shelf: ArcStoredValue::new(Shelf::default()),
            drafts: ArcRwSignal::new(BTreeMap::new()),
        }
    }

    /// The row's field with its nested fields.
    pub fn full_field(&self) -> Field {
        let mut f = self.field.get_untracked();
        f.fields = self.children.with_untracked(|c| c.iter().map(Row::full_field).collect());
        f
    }

    /// What `input` shows: the typed text, else the field's value.
    pub fn text(&self, input: Input) -> String {
        self.drafts
            .with(|d| d.get(&input).map(|d| d.text.clone()))
            .unwrap_or_else(|| self.field.with(|f| input.shown(f)))
    }

    /// The refusal of what was typed into `input`, if any.
    pub fn input_error(&self, input: Input) -> Option<String> {
        self.drafts.with(|d| d.get(&input).and_then(|d| d.error.clone()))
    }

    /// Remembers a keystroke's text without re-rendering anything.
    pub fn typing(&self, input: Input, text: String) {
        self.drafts.update_untracked(|d| {
            let error = d.remove(&input).and_then(|d| d.error);
            d.insert(input, Draft { text, error });
        });
    }

    /// Takes the text of `input` into the field (on `change`); refused text stays
    /// typed, with its error.
    pub fn change(&self, input: Input, text: &str) {
        let mut next = self.field.get_untracked();
        match input.apply(&mut next, text) {
            Ok(()) => {
                if self.drafts.with_untracked(|d| d.contains_key(&input)) {
                    self.drafts.update(|d| {
                        d.remove(&input);
                    });
                }
                if self.field.with_untracked(|f| *f != next) {
                    self.field.set(next);
                }
            }
            Err(error) => self.drafts.update(|d| {
                d.insert(input, Draft { text: text.to_string(), error: Some(error) });
            }),
        }
    }

    /// Changes the row's type, keeping what still applies and shelving the rest.
    pub fn retype(&self, to: FieldType) {
        let (next, shelf) = self.full_field().retype(to, &self.shelf.get_value());
        self.shelf.set_value(shelf);
        self.replace(next);
    }

    /// Changes an array row's item type, the same way.
    pub fn retype_items(&self, to: Option<FieldType>) {
        let (next, shelf) = self.full_field().retype_items(to, &self.shelf.get_value());
        self.shelf.set_value(shelf);
        self.replace(next);
    }

    /// Sets the whole field; nested rows are kept when the nested fields are the same.
    fn replace(&self, mut next: Field) {
        let fields = std::mem::take(&mut next.fields);
        if self.full_field().fields != fields {
            self.children.set(fields.into_iter().map(Row::new).collect());
        }
        // Text refused for the old type (1.5 as an integer's bound) is tried again for
        // the new one, where it may be fine; an input the new type lacks lets it go.
        let refused: Vec<(Input, String)> = self.drafts.with_untracked(|d| {
            d.iter().filter(|(_, d)| d.error.is_some()).map(|(i, d)| (*i, d.text.clone())).collect()
        });
        self.drafts.update(|d| d.retain(|_, draft| draft.error.is_none()));
        let retry: Vec<(Input, String)> = refused.into_iter().filter(|(input, _)| input.applies_to(&next)).collect();
        self.field.set(next);
        for (input, text) in retry {
            self.change(input, &text);
        }
    }

    /// Takes every typed text that was never committed (the view went away while an
    /// input had focus), here and in nested rows.
    fn flush(&self) {
        let pending: Vec<(Input, String)> = self.drafts.with_untracked(|d| {
            d.iter().filter(|(_, d)| d.error.is_none()).map(|(i, d)| (*i, d.text.clone())).collect()
        });
        for (input, text) in pending {
            self.change(input, &text);
        }
        self.children.with_untracked(|c| c.iter().for_each(Row::flush));
    }
}

/// Where a builder's rows belong: an agent node of an open conclave.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Target {
    pub conclave: String,
    pub node: String,
}

/// The rows of one agent's inline schema.
#[derive(Debug, Clone)]
pub struct Builder {
    pub target: Target,
    /// The root rows.
    pub rows: ArcRwSignal<Vec<Row>>,
    /// Root keywords the builder does not edit.
    pub extra: ArcRwSignal<Map<String, Value>>,
    /// Why the schema cannot be shown as rows, if it cannot.
    pub unreadable: ArcRwSignal<Option<String>>,
    /// Name problems by row id.
    pub problems: ArcRwSignal<HashMap<u64, String>>,
    /// The row whose name takes focus when it appears (a row just added).
    pub focus: ArcStoredValue<Option<u64>>,
    /// The schema the rows agree with: the one they were built from or last wrote.
    base: ArcStoredValue<Value>,
}

thread_local! {
    static BUILDERS: RefCell<HashMap<Target, Builder>> = RefCell::new(HashMap::new());
    static EDITOR: Cell<Option<Editor>> = const { Cell::new(None) };
}

/// The builder of `target`, whose agent's inline schema is now `schema`: the session's
/// rows when they agree with it, else rows built afresh.
pub fn builder_for(editor: Editor, target: Target, schema: &Value) -> Builder {
    EDITOR.set(Some(editor));
    BUILDERS.with(|all| {
        let mut all = all.borrow_mut();
        if let Some(b) = all.get(&target).filter(|b| b.base.with_value(|base| same_json(base, schema))) {
            return b.clone();
        }
        let b = Builder {
            target: target.clone(),
            rows: ArcRwSignal::new(Vec::new()),
            extra: ArcRwSignal::new(Map::new()),
            unreadable: ArcRwSignal::new(None),
            problems: ArcRwSignal::new(HashMap::new()),
            focus: ArcStoredValue::new(None),
            base: ArcStoredValue::new(Value::Null),
        };
        b.rebuild(schema);
        all.insert(target, b.clone());
        b
    })
}

/// What keeps the open conclave from being saved as its authors typed it: the first
/// row of a field builder with an invalid name or refused text, as a sentence naming
/// the agent and the row. Rows that no longer agree with their agent's schema (it
/// changed since, by undo, raw JSON or a template) do not count: they are rebuilt.
pub fn unsaved_problem() -> Option<String> {
    let editor = EDITOR.get()?;
    let builders: Vec<Builder> = BUILDERS.with(|all| {
        let mut list: Vec<Builder> = all.borrow().values().cloned().collect();
        list.sort_by(|a, b| a.target.cmp(&b.target));
        list
    });
    editor.conclave.with_untracked(|c| {
        let c = c.as_ref()?;
        builders.iter().filter(|b| b.target.conclave == c.id).find_map(|b| {
            let schema = c.node(&b.target.node)?.agent.as_ref()?.output_schema.as_ref()?;
            if !b.base.with_value(|base| same_json(base, schema)) {
                return None;
            }
            let (row, problem) = first_problem(&b.rows.get_untracked(), "")?;
            Some(format!(
                "The field builder of agent `{}` has input that is not saved: {row}: {problem}. Fix it there, then save again.",
                b.target.node
            ))
        })
    })
}

/// Adds a string field named `field_1`, `field_2`, ... (the first free one) to `rows`,
/// commits it, and has its name take focus with its text selected, so typing replaces it.
pub fn add_field(editor: Editor, builder: &Builder, rows: &ArcRwSignal<Vec<Row>>) {
    let name = rows.with_untracked(|rows| {
        let names: Vec<String> = rows.iter().map(|r| r.field.with_untracked(|f| f.name.clone())).collect();
        free_field_name(&names.iter().map(String::as_str).collect::<Vec<_>>())
    });
    let row = Row::new(Field { item_type: None, ..Field::new(name, FieldType::String) });
    builder.focus.set_value(Some(row.id));
    rows.update(|rows| rows.push(row));
    builder.commit(editor);
}

impl Builder {
    /// Rebuilds the rows from `schema` (it changed from elsewhere).
    fn rebuild(&self, schema: &Value) {
        self.base.set_value(schema.clone());
        self.problems.set(HashMap::new());
        match schema_to_fields(schema) {
            Ok(doc) => {
                self.rows.set(doc.fields.into_iter().map(Row::new).collect());
                self.extra.set(doc.extra);
                self.unreadable.set(None);
            }
            Err(e) => {
                self.rows.set(Vec::new());
                self.extra.set(Map::new());
                self.unreadable.set(Some(e));
            }
        }
    }

    /// Follows the agent's schema: rows are rebuilt only when it is not the one they
    /// agree with, so the builder's own commits never rebuild them.
    pub fn follow(&self, schema: &Value) {
        if !self.base.with_value(|base| same_json(base, schema)) {
            self.rebuild(schema);
        }
    }

    /// Writes the rows to the agent as one undoable edit, when every name is valid and
    /// the agent still has the schema the rows agree with; otherwise shows the rows'
    /// problems and writes nothing.
    pub fn commit(&self, editor: Editor) {
        let mut problems = HashMap::new();
        self.rows.with_untracked(|rows| name_problems(rows, &mut problems));
        if self.problems.with_untracked(|p| *p != problems) {
            self.problems.set(problems.clone());
        }
        if !problems.is_empty() || self.unreadable.with_untracked(Option::is_some) {
            return;
        }
        let doc = FieldsDoc {
            fields: self.rows.with_untracked(|rows| rows.iter().map(Row::full_field).collect()),
            extra: self.extra.get_untracked(),
        };
        let schema = fields_to_schema(&doc);
        let base = self.base.get_value();
        if same_json(&schema, &base) || !self.agrees(editor, &base) {
            return;
        }
        self.base.set_value(schema.clone());
        edit_agent(editor, &self.target.node, |a| a.output_schema = Some(schema));
    }

    /// Commits whatever was typed and never committed (the view is going away).
    pub fn flush(&self, editor: Editor) {
        let before: Vec<Field> = self.rows.with_untracked(|rows| rows.iter().map(Row::full_field).collect());
        self.rows.with_untracked(|rows| rows.iter().for_each(Row::flush));
        let after: Vec<Field> = self.rows.with_untracked(|rows| rows.iter().map(Row::full_field).collect());
        if after != before {
            self.commit(editor);
        }
    }

    /// Whether the open conclave is this builder's and its agent has `schema`.
    fn agrees(&self, editor: Editor, schema: &Value) -> bool {
        editor.conclave.with_untracked(|c| {
            c.as_ref()
                .filter(|c| c.id == self.target.conclave)
                .and_then(|c| c.node(&self.target.node)?.agent.as_ref()?.output_schema.as_ref())
                .is_some_and(|now| same_json(now, schema))
        })
    }
}

/// The name problems of `rows` and their nested rows, by row id.
fn name_problems(rows: &[Row], out: &mut HashMap<u64, String>) {
    let names: Vec<String> = rows.iter().map(|r| r.field.with_untracked(|f| f.name.clone())).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    for (index, row) in rows.iter().enumerate() {
        if let Some(problem) = name_problem(&names, index) {
            out.insert(row.id, problem);
        }
        row.children.with_untracked(|c| name_problems(c, out));
    }
}

/// The first row (depth first) with a name problem or refused text, as
/// (`field 2 (`summary`)`, the problem).
fn first_problem(rows: &[Row], within: &str) -> Option<(String, String)> {
    let mut problems = HashMap::new();
    name_problems(rows, &mut problems);
    rows.iter().enumerate().find_map(|(index, row)| {
        let name = row.field.with_untracked(|f| f.name.clone());
        let here = match name.is_empty() {
            true => format!("{within}field {}", index + 1),
            false => format!("{within}field {} (`{name}`)", index + 1),
        };
        let refused = row.drafts.with_untracked(|d| {
            d.iter().find_map(|(input, d)| d.error.as_ref().map(|e| format!("its {}: {e}", input.label())))
        });
        problems
            .get(&row.id)
            .cloned()
            .or(refused)
            .map(|p| (here.clone(), p))
            .or_else(|| row.children.with_untracked(|c| first_problem(c, &format!("{here} › "))))
    })
}
