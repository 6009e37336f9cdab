//! The field builder's model of an output schema, and the conversion both ways.
//!
//! A schema is a root object; each property is a [`Field`] with a name, a type
//! (string, integer, number, boolean, enum, object, array), required, description and
//! the constraints the builder edits. Anything else a property says (a `pattern`, a
//! `format`, a `$ref`) is kept in `extra` and flagged, never dropped; a property the
//! builder cannot show at all (an `anyOf`) is a `custom` field carried verbatim.
//!
//! Fields → schema → fields is the identity; schema → fields → schema keeps every
//! keyword (the `required` list may come back in property order).
//!
//! Besides the conversion, the rules the builder applies while an author edits: what a
//! type change keeps ([`Field::retype`], with a [`Shelf`] that remembers constraints
//! the new type does not use), what makes a name invalid ([`name_problem`]), the next
//! free default name ([`free_field_name`]), and how typed bounds and counts are read
//! ([`parse_bound`], [`parse_count`]), and [`same_json`], which sees a moved property.

mod retype;

pub use retype::Shelf;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::number::fixed;

/// What a field holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FieldType {
    /// Text.
    String,
    /// A whole number.
    Integer,
    /// Any number.
    Number,
    /// true or false.
    Boolean,
    /// One of listed strings.
    Enum,
    /// Nested fields.
    Object,
    /// A list of one item type.
    Array,
    /// A schema the builder cannot show; edited as raw JSON.
    Custom,
}

impl FieldType {
    /// Types a field (or an array's items) can have in the builder.
    pub const BUILDER: [FieldType; 7] = [
        FieldType::String,
        FieldType::Integer,
        FieldType::Number,
        FieldType::Boolean,
        FieldType::Enum,
        FieldType::Object,
        FieldType::Array,
    ];

    /// The name shown and stored.
    pub fn as_str(self) -> &'static str {
        match self {
            FieldType::String => "string",
            FieldType::Integer => "integer",
            FieldType::Number => "number",
            FieldType::Boolean => "boolean",
            FieldType::Enum => "enum",
            FieldType::Object => "object",
            FieldType::Array => "array",
            FieldType::Custom => "custom",
        }
    }

    /// Parses a name.
    pub fn parse(name: &str) -> Option<FieldType> {
        FieldType::BUILDER.into_iter().chain([FieldType::Custom]).find(|t| t.as_str() == name)
    }
}

/// One property of an object schema, as the builder shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Field {
    /// Property name.
    pub name: String,
    /// Its type.
    pub field_type: FieldType,
    /// Whether it must be present.
    pub required: bool,
    /// What it means, for the model.
    pub description: String,
    /// Lower bound, for integers and numbers.
    pub minimum: Option<f64>,
    /// Upper bound, for integers and numbers.
    pub maximum: Option<f64>,
    /// Shortest length, for strings.
    pub min_length: Option<u64>,
    /// Longest length, for strings.
    pub max_length: Option<u64>,
    /// Fewest items, for arrays.
    pub min_items: Option<u64>,
    /// Most items, for arrays.
    pub max_items: Option<u64>,
    /// Allowed values, for enums (and arrays of enums).
    pub enum_values: Vec<String>,
    /// The item type, for arrays.
    pub item_type: Option<FieldType>,
    /// Nested fields, for objects and arrays of objects.
    pub fields: Vec<Field>,
    /// Keywords the builder does not edit, kept as they were (the whole schema for
    /// `custom` fields).
    pub extra: Map<String, Value>,
}

impl Field {
    /// A new optional field of `field_type` with nothing else set.
    pub fn new(name: impl Into<String>, field_type: FieldType) -> Field {
        Field {
            name: name.into(),
            field_type,
            required: false,
            description: String::new(),
            minimum: None,
            maximum: None,
            min_length: None,
            max_length: None,
            min_items: None,
            max_items: None,
            enum_values: Vec::new(),
            item_type: (field_type == FieldType::Array).then_some(FieldType::String),
            fields: Vec::new(),
            extra: Map::new(),
        }
    }

    /// Keywords kept but not shown by the builder, for flagging in the editor.
    pub fn kept_keywords(&self) -> Vec<String> {
        if self.field_type == FieldType::Custom {
            return vec!["(whole schema)".into()];
        }
        self.extra.keys().cloned().collect()
    }
}

/// A whole output schema as the builder shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FieldsDoc {
    /// The root object's fields.
    pub fields: Vec<Field>,
    /// Root keywords the builder does not edit (`$defs`, `additionalProperties`, ...).
    pub extra: Map<String, Value>,
}

/// The schema a fresh Structured Output chip sets.
pub fn empty_schema() -> Value {
    json!({"type": "object", "properties": {}, "required": []})
}

/// Keywords the builder edits on an object (everything else is `extra`).
const OBJECT_KEYS: &[&str] = &["type", "properties", "required", "description"];

/// The builder's view of a schema; an error when the root is not an object.
pub fn schema_to_fields(schema: &Value) -> Result<FieldsDoc, String> {
    let obj = schema.as_object().ok_or("the schema is not a JSON object")?;
    if obj.get("type") != Some(&json!("object")) {
        return Err("the root of an output schema must have \"type\": \"object\"".into());
    }
    let (fields, mut extra) = object_fields(obj);
    if let Some(d) = obj.get("description") {
        extra.insert("description".into(), d.clone());
    }
    Ok(FieldsDoc { fields, extra })
}

/// The schema for the builder's fields.
pub fn fields_to_schema(doc: &FieldsDoc) -> Value {
    let mut obj = object_schema(&doc.fields);
    for (k, v) in &doc.extra {
        obj.insert(k.clone(), v.clone());
    }
    Value::Object(obj)
}

/// What is wrong with the name of field `index` among its siblings `names`, if
/// anything: every field needs a name, and sibling names must be unique (two fields of
/// one name would become one property, losing the other).
pub fn name_problem(names: &[&str], index: usize) -> Option<String> {
    let name = *names.get(index)?;
    if name.trim().is_empty() {
        return Some("a field needs a name".into());
    }
    match names.iter().filter(|n| **n == name).count() {
        0 | 1 => None,
        2 => Some(format!("two fields are named `{name}`: names must be unique")),
        n => Some(format!("{n} fields are named `{name}`: names must be unique")),
    }
}

/// The first of `field_1`, `field_2`, ... that no sibling uses.
pub fn free_field_name(names: &[&str]) -> String {
    (1..=names.len() + 1).map(|n| format!("field_{n}")).find(|n| !names.contains(&n.as_str())).unwrap_or_default()
}

/// Reads a typed `minimum` or `maximum` for a field of `field_type`: empty is no
/// bound; an integer field takes whole numbers only, so `1.5` is an error rather than
/// being cut to `1`.
pub fn parse_bound(text: &str, field_type: FieldType) -> Result<Option<f64>, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    let value =
        text.parse::<f64>().ok().filter(|v| v.is_finite()).ok_or_else(|| format!("`{text}` is not a number"))?;
    if field_type == FieldType::Integer && value.fract() != 0.0 {
        return Err(format!("`{text}` is not a whole number: an integer field's bounds must be whole numbers"));
    }
    if field_type == FieldType::Integer && value.abs() > MAX_EXACT_INTEGER {
        let most = fixed(MAX_EXACT_INTEGER, 0);
        return Err(format!("`{text}` is too large for a bound (at most {most} either way)"));
    }
    Ok(Some(value))
}

/// Reads a typed length or item count: empty is no limit; otherwise a whole number, 0
/// or more.
pub fn parse_count(text: &str) -> Result<Option<u64>, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    text.parse::<u64>().map(Some).map_err(|_| format!("`{text}` is not a count: use a whole number, 0 or more"))
}

/// Whether two JSON values are the same, including the order of every object's keys.
/// `==` on JSON values ignores key order, but a schema's property order is what the
/// model sees and what the author arranged, so moving a field is a change.
pub fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|((ka, va), (kb, vb))| ka == kb && same_json(va, vb))
        }
        (Value::Array(a), Value::Array(b)) => a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same_json(a, b)),
        _ => a == b,
    }
}

/// The largest whole number a bound keeps exactly (2^53).
const MAX_EXACT_INTEGER: f64 = 9_007_199_254_740_992.0;

fn object_fields(obj: &Map<String, Value>) -> (Vec<Field>, Map<String, Value>) {
    let required: Vec<&str> = obj
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let fields = obj
        .get("properties")
        .and_then(Value::as_object)
        .map(|props| props.iter().map(|(name, s)| field_from(name, s, required.contains(&name.as_str()))).collect())
        .unwrap_or_default();
    let extra =
        obj.iter().filter(|(k, _)| !OBJECT_KEYS.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect();
    (fields, extra)
}

fn object_schema(fields: &[Field]) -> Map<String, Value> {
    let mut obj = Map::new();
    obj.insert("type".into(), json!("object"));
    obj.insert("properties".into(), Value::Object(fields.iter().map(|f| (f.name.clone(), field_schema(f))).collect()));
    obj.insert(
        "required".into(),
        json!(fields.iter().filter(|f| f.required).map(|f| f.name.as_str()).collect::<Vec<_>>()),
    );
    obj
}

/// The builder type of a property schema, or `None` when it must be `custom`.
fn type_of(s: &Map<String, Value>) -> Option<FieldType> {
    match s.get("type")?.as_str()? {
        "string" if s.get("enum").is_some_and(|e| e.as_array().is_some_and(|v| v.iter().all(Value::is_string))) => {
            Some(FieldType::Enum)
        }
        "string" => Some(FieldType::String),
        "integer" => Some(FieldType::Integer),
        "number" => Some(FieldType::Number),
        "boolean" => Some(FieldType::Boolean),
        "object" => Some(FieldType::Object),
        "array" => Some(FieldType::Array),
        _ => None,
    }
}

fn field_from(name: &str, schema: &Value, required: bool) -> Field {
    let custom = || Field {
        field_type: FieldType::Custom,
        required,
        extra: schema.as_object().cloned().unwrap_or_default(),
        item_type: None,
        ..Field::new(name, FieldType::Custom)
    };
    let Some(s) = schema.as_object() else { return custom() };
    let Some(field_type) = type_of(s) else { return custom() };
    let mut f = Field { required, item_type: None, ..Field::new(name, field_type) };
    let mut used: Vec<&str> = vec!["type", "description"];
    if let Some(d) = s.get("description").and_then(Value::as_str) {
        f.description = d.to_string();
    } else {
        used.retain(|k| *k != "description");
    }
    match field_type {
        FieldType::Integer | FieldType::Number => {
            f.minimum = s.get("minimum").and_then(Value::as_f64);
            f.maximum = s.get("maximum").and_then(Value::as_f64);
            used.extend(["minimum", "maximum"].iter().filter(|k| s.get(**k).is_some_and(Value::is_number)));
        }
        FieldType::String => {
            f.min_length = s.get("minLength").and_then(Value::as_u64);
            f.max_length = s.get("maxLength").and_then(Value::as_u64);
            used.extend(["minLength", "maxLength"].iter().filter(|k| s.get(**k).is_some_and(Value::is_u64)));
        }
        FieldType::Enum => {
            f.enum_values = s
                .get("enum")
                .and_then(Value::as_array)
                .map(|v| v.iter().filter_map(Value::as_str).map(str::to_string).collect())
                .unwrap_or_default();
            used.push("enum");
        }
        FieldType::Object => {
            let (nested, extra) = object_fields(s);
            f.fields = nested;
            f.extra = extra.into_iter().filter(|(k, _)| k != "description").collect();
            return f;
        }
        FieldType::Array => {
            f.min_items = s.get("minItems").and_then(Value::as_u64);
            f.max_items = s.get("maxItems").and_then(Value::as_u64);
            used.extend(["minItems", "maxItems"].iter().filter(|k| s.get(**k).is_some_and(Value::is_u64)));
            let items = s.get("items").and_then(Value::as_object);
            match items.and_then(|i| type_of(i).map(|t| (i, t))) {
                Some((items, item_type)) if is_plain_items(items, item_type) => {
                    f.item_type = Some(item_type);
                    used.push("items");
                    match item_type {
                        FieldType::Enum => {
                            f.enum_values = items["enum"]
                                .as_array()
                                .map(|v| v.iter().filter_map(Value::as_str).map(str::to_string).collect())
                                .unwrap_or_default()
                        }
                        FieldType::Object => {
                            let (nested, _) = object_fields(items);
                            f.fields = nested;
                        }
                        _ => {}
                    }
                }
                _ => f.item_type = None,
            }
        }
        FieldType::Boolean | FieldType::Custom => {}
    }
    f.extra = s.iter().filter(|(k, _)| !used.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect();
    f
}

/// Whether array items are exactly what the builder writes for `item_type` (anything
/// more and the whole `items` stays in `extra`).
fn is_plain_items(items: &Map<String, Value>, item_type: FieldType) -> bool {
    let allowed: &[&str] = match item_type {
        FieldType::Enum => &["type", "enum"],
        FieldType::Object => &["type", "properties", "required"],
        _ => &["type"],
    };
    items.keys().all(|k| allowed.contains(&k.as_str()))
        && (item_type != FieldType::Object
            || items.get("properties").and_then(Value::as_object).is_some_and(|p| {
                let required = items.get("required").and_then(Value::as_array).cloned().unwrap_or_default();
                p.values().all(Value::is_object)
                    && required.iter().all(|r| r.as_str().is_some_and(|r| p.contains_key(r)))
            }))
}

/// A bound as JSON: whole values as integers (`1`, not `1.0`), as authors write them.
fn number(value: f64) -> Value {
    if value.fract() == 0.0 && value.abs() < 9.0e15 { json!(value as i64) } else { json!(value) }
}

fn field_schema(f: &Field) -> Value {
    if f.field_type == FieldType::Custom {
        return Value::Object(f.extra.clone());
    }
    let mut s = Map::new();
    match f.field_type {
        FieldType::Object => return Value::Object(with_description(object_schema(&f.fields), f, true)),
        FieldType::Enum => {
            s.insert("type".into(), json!("string"));
            s.insert("enum".into(), json!(f.enum_values));
        }
        FieldType::Array => {
            s.insert("type".into(), json!("array"));
            if let Some(item_type) = f.item_type {
                let items = match item_type {
                    FieldType::Object => Value::Object(object_schema(&f.fields)),
                    FieldType::Enum => json!({"type": "string", "enum": f.enum_values}),
                    other => json!({"type": other.as_str()}),
                };
                s.insert("items".into(), items);
            }
        }
        other => {
            s.insert("type".into(), json!(other.as_str()));
        }
    }
    Value::Object(with_description(s, f, false))
}

/// Adds the description, the constraints and the kept keywords.
fn with_description(mut s: Map<String, Value>, f: &Field, object: bool) -> Map<String, Value> {
    if !f.description.is_empty() {
        s.insert("description".into(), json!(f.description));
    }
    if !object {
        if let Some(v) = f.minimum {
            s.insert("minimum".into(), number(v));
        }
        if let Some(v) = f.maximum {
            s.insert("maximum".into(), number(v));
        }
        if let Some(v) = f.min_length {
            s.insert("minLength".into(), json!(v));
        }
        if let Some(v) = f.max_length {
            s.insert("maxLength".into(), json!(v));
        }
        if let Some(v) = f.min_items {
            s.insert("minItems".into(), json!(v));
        }
        if let Some(v) = f.max_items {
            s.insert("maxItems".into(), json!(v));
        }
    }
    for (k, v) in &f.extra {
        s.entry(k.clone()).or_insert_with(|| v.clone());
    }
    s
}

#[cfg(test)]
mod tests;
