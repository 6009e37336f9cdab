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
        return Err(format!("`{text}` is too large for a bound (at most {MAX_EXACT_INTEGER:.0} either way)"));
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
mod tests {
    use super::*;

    fn field(name: &str, t: FieldType) -> Field {
        Field { item_type: (t == FieldType::Array).then_some(FieldType::String), ..Field::new(name, t) }
    }

    /// Retypes through `types` in order, carrying the shelf.
    fn through(start: &Field, types: &[FieldType]) -> (Field, Shelf) {
        types.iter().fold((start.clone(), Shelf::default()), |(f, shelf), t| f.retype(*t, &shelf))
    }

    #[test]
    fn a_type_change_keeps_name_required_and_description() {
        let f = Field { required: true, description: "where it is".into(), ..field("line", FieldType::String) };
        let (g, _) = f.retype(FieldType::Integer, &Shelf::default());
        assert_eq!((g.name.as_str(), g.required, g.description.as_str()), ("line", true, "where it is"));
        assert_eq!(g.field_type, FieldType::Integer);
    }

    #[test]
    fn integer_and_number_keep_their_bounds() {
        let f = Field { minimum: Some(1.0), maximum: Some(10.0), ..field("line", FieldType::Integer) };
        let (g, shelf) = f.retype(FieldType::Number, &Shelf::default());
        assert_eq!((g.minimum, g.maximum), (Some(1.0), Some(10.0)));
        let (h, _) = g.retype(FieldType::Integer, &shelf);
        assert_eq!(h, f);
    }

    #[test]
    fn a_fractional_bound_waits_while_the_field_is_an_integer() {
        let f = Field { minimum: Some(0.5), maximum: Some(3.0), ..field("score", FieldType::Number) };
        let (g, shelf) = f.retype(FieldType::Integer, &Shelf::default());
        assert_eq!((g.minimum, g.maximum), (None, Some(3.0)), "an integer cannot take 0.5");
        let (h, _) = g.retype(FieldType::Number, &shelf);
        assert_eq!(h, f, "0.5 comes back with the number type");
    }

    #[test]
    fn constraints_of_another_type_come_back_when_the_author_switches_back() {
        let f = Field { max_length: Some(200), min_length: Some(1), ..field("summary", FieldType::String) };
        let (g, shelf) = f.retype(FieldType::Boolean, &Shelf::default());
        assert_eq!(fields_to_schema_of(&g), json!({"type": "boolean"}), "a boolean has no lengths");
        let (h, _) = g.retype(FieldType::String, &shelf);
        assert_eq!(h, f);
    }

    #[test]
    fn a_cleared_constraint_stays_cleared() {
        let f = Field { max_length: Some(200), ..field("summary", FieldType::String) };
        let (g, shelf) = f.retype(FieldType::Integer, &Shelf::default());
        let (mut h, shelf) = g.retype(FieldType::String, &shelf);
        h.max_length = None;
        let (i, shelf) = h.retype(FieldType::Integer, &shelf);
        let (j, _) = i.retype(FieldType::String, &shelf);
        assert_eq!(j.max_length, None);
    }

    #[test]
    fn an_enum_keeps_its_values_while_it_stays_an_enum() {
        let f = Field { enum_values: vec!["high".into(), "low".into()], ..field("level", FieldType::Enum) };
        let (list, shelf) = f.retype(FieldType::Array, &Shelf::default());
        assert_eq!(
            fields_to_schema_of(&list),
            json!({"type": "array", "items": {"type": "string", "enum": ["high", "low"]}}),
            "an enum made a list is a list of that enum"
        );
        let (text, shelf) = list.retype(FieldType::String, &shelf);
        assert!(text.enum_values.is_empty());
        let (back, _) = text.retype(FieldType::Enum, &shelf);
        assert_eq!(back, f);
    }

    #[test]
    fn arrays_keep_their_item_counts_and_items_through_a_change_of_items() {
        let f = Field {
            min_items: Some(1),
            max_items: Some(5),
            item_type: Some(FieldType::Enum),
            enum_values: vec!["a".into()],
            ..field("tags", FieldType::Array)
        };
        let (g, shelf) = f.retype_items(Some(FieldType::Integer), &Shelf::default());
        assert_eq!((g.min_items, g.max_items, g.enum_values.len()), (Some(1), Some(5), 0));
        let (h, _) = g.retype_items(Some(FieldType::Enum), &shelf);
        assert_eq!(h, f, "the enum values come back with enum items");
    }

    #[test]
    fn nested_fields_follow_an_object_into_an_array_and_back() {
        let f = Field { fields: vec![field("x", FieldType::Integer)], ..field("point", FieldType::Object) };
        let (list, shelf) = f.retype(FieldType::Array, &Shelf::default());
        assert_eq!((list.item_type, list.fields.len()), (Some(FieldType::Object), 1));
        assert_eq!(list.retype(FieldType::Object, &shelf).0, f);
    }

    #[test]
    fn kept_keywords_stay_where_they_mean_something() {
        let mut f = field("code", FieldType::String);
        f.extra.insert("pattern".into(), json!("^[A-Z]+$"));
        f.extra.insert("default".into(), json!("AB"));
        f.extra.insert("title".into(), json!("Code"));
        let (e, shelf) = f.retype(FieldType::Enum, &Shelf::default());
        assert_eq!(
            e.kept_keywords(),
            vec!["pattern".to_string(), "title".into()],
            "a default string may not be a value"
        );
        let (i, shelf) = e.retype(FieldType::Integer, &shelf);
        assert_eq!(i.kept_keywords(), vec!["title".to_string()]);
        let (back, _) = i.retype(FieldType::String, &shelf);
        assert_eq!(back, f);
    }

    #[test]
    fn a_custom_field_comes_back_whole() {
        let schema =
            json!({"type": "object", "properties": {"either": {"anyOf": [{"type": "string"}], "description": "one"}}});
        let f = schema_to_fields(&schema).expect("object").fields.remove(0);
        let (s, shelf) = f.retype(FieldType::String, &Shelf::default());
        assert_eq!(s.description, "one", "the description is read out of the raw schema");
        assert_eq!(s.retype(FieldType::Custom, &shelf).0, f);
    }

    #[test]
    fn any_trip_through_other_types_comes_back_to_the_same_field() {
        let mut rng = fastrand::Rng::with_seed(7);
        for _ in 0..3000 {
            let f = random_field(&mut rng);
            let mut types: Vec<FieldType> =
                (0..rng.usize(1..6)).map(|_| FieldType::BUILDER[rng.usize(0..FieldType::BUILDER.len())]).collect();
            types.push(f.field_type);
            let (back, _) = through(&f, &types);
            assert_eq!(back, f, "through {types:?}");
        }
    }

    #[test]
    fn item_counts_round_trip_through_the_schema() {
        let f = Field { min_items: Some(0), max_items: Some(20), ..field("tags", FieldType::Array) };
        let schema = fields_to_schema(&FieldsDoc { fields: vec![f.clone()], extra: Map::new() });
        assert_eq!(
            schema["properties"]["tags"],
            json!({"type": "array", "items": {"type": "string"}, "minItems": 0, "maxItems": 20})
        );
        assert_eq!(schema_to_fields(&schema).expect("object").fields, vec![f]);
    }

    #[test]
    fn integer_bounds_are_written_as_integers() {
        let f = Field { minimum: Some(1.0), maximum: Some(-3.0), ..field("line", FieldType::Integer) };
        let text = serde_json::to_string(&fields_to_schema_of(&f)).expect("json");
        assert_eq!(text, r#"{"type":"integer","minimum":1,"maximum":-3}"#);
        let number = Field { minimum: Some(0.25), ..field("score", FieldType::Number) };
        assert_eq!(fields_to_schema_of(&number), json!({"type": "number", "minimum": 0.25}));
    }

    #[test]
    fn typed_bounds_and_counts_are_read_exactly_or_refused() {
        assert_eq!(parse_bound(" 1 ", FieldType::Integer), Ok(Some(1.0)));
        assert_eq!(parse_bound("", FieldType::Integer), Ok(None));
        assert_eq!(parse_bound("1.5", FieldType::Number), Ok(Some(1.5)));
        assert_eq!(
            parse_bound("1.5", FieldType::Integer),
            Err("`1.5` is not a whole number: an integer field's bounds must be whole numbers".into())
        );
        assert_eq!(parse_bound("ten", FieldType::Number), Err("`ten` is not a number".into()));
        assert_eq!(parse_bound("inf", FieldType::Number), Err("`inf` is not a number".into()));
        assert!(parse_bound("1e300", FieldType::Integer).is_err_and(|e| e.contains("too large")));
        assert_eq!(parse_count("200"), Ok(Some(200)));
        assert_eq!(parse_count(""), Ok(None));
        assert_eq!(parse_count("-1"), Err("`-1` is not a count: use a whole number, 0 or more".into()));
    }

    #[test]
    fn moving_a_property_is_a_change() {
        let a = json!({"properties": {"x": {"type": "string"}, "y": {"enum": [1, 2]}}});
        let moved = json!({"properties": {"y": {"enum": [1, 2]}, "x": {"type": "string"}}});
        assert_eq!(a, moved, "serde_json's == ignores key order");
        assert!(!same_json(&a, &moved));
        assert!(same_json(&a, &a.clone()));
        assert!(!same_json(&json!([1, 2]), &json!([2, 1])));
    }

    #[test]
    fn names_must_be_present_and_unique() {
        let names = ["summary", "", "line", "summary"];
        let problems: Vec<Option<String>> = (0..names.len()).map(|i| name_problem(&names, i)).collect();
        assert_eq!(
            problems,
            vec![
                Some("two fields are named `summary`: names must be unique".into()),
                Some("a field needs a name".into()),
                None,
                Some("two fields are named `summary`: names must be unique".into()),
            ]
        );
        assert_eq!(free_field_name(&[]), "field_1");
        assert_eq!(free_field_name(&["field_1", "field_3"]), "field_2");
        assert_eq!(free_field_name(&["field_2", "field_1"]), "field_3");
    }

    fn fields_to_schema_of(f: &Field) -> Value {
        fields_to_schema(&FieldsDoc { fields: vec![f.clone()], extra: Map::new() })["properties"][&f.name].clone()
    }

    /// A random field as the builder makes them (only its type's constraints set).
    fn random_field(rng: &mut fastrand::Rng) -> Field {
        let types = [FieldType::BUILDER.as_slice(), &[FieldType::Custom]].concat();
        let t = types[rng.usize(0..types.len())];
        let mut f = Field { required: rng.bool(), ..field("f", t) };
        if rng.bool() && t != FieldType::Custom {
            f.description = "what it is".into();
        }
        let maybe = |rng: &mut fastrand::Rng, v: u64| rng.bool().then_some(v);
        match t {
            FieldType::String => (f.min_length, f.max_length) = (maybe(rng, 1), maybe(rng, 80)),
            FieldType::Integer => (f.minimum, f.maximum) = (rng.bool().then_some(-2.0), rng.bool().then_some(9.0)),
            FieldType::Number => (f.minimum, f.maximum) = (rng.bool().then_some(0.5), rng.bool().then_some(9.0)),
            FieldType::Enum => f.enum_values = vec!["a".into(), "b".into()],
            FieldType::Object => f.fields = vec![field("x", FieldType::Boolean)],
            FieldType::Array => {
                let items = [FieldType::String, FieldType::Enum, FieldType::Object, FieldType::Number];
                f.item_type = Some(items[rng.usize(0..items.len())]);
                (f.min_items, f.max_items) = (maybe(rng, 1), maybe(rng, 9));
                if f.item_type == Some(FieldType::Enum) {
                    f.enum_values = vec!["c".into()];
                }
                if f.item_type == Some(FieldType::Object) {
                    f.fields = vec![field("y", FieldType::String)];
                }
            }
            FieldType::Custom => {
                f.extra = json!({"anyOf": [{"type": "string"}]}).as_object().cloned().unwrap_or_default()
            }
            FieldType::Boolean => {}
        }
        if rng.bool() && t != FieldType::Custom {
            f.extra.insert("title".into(), json!("T"));
        }
        if rng.bool() && t == FieldType::String {
            f.extra.insert("pattern".into(), json!("^x"));
        }
        f
    }
}
