//! Property tests of the field builder's conversion: fields → schema → fields is the
//! identity on random field trees, and schema → fields → schema keeps every keyword of
//! every schema in the lowering corpus.

use conclave_shared::{Field, FieldType, FieldsDoc, fields_to_schema, schema_to_fields};
use serde_json::{Map, Value, json};
use std::path::Path;

fn word(rng: &mut fastrand::Rng) -> String {
    (0..rng.usize(1..8)).map(|_| rng.lowercase()).collect()
}

fn kept(pairs: &[(&str, Value)]) -> Map<String, Value> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
}

/// A random field that respects the builder's invariants (only the constraints of its
/// type are set, names are unique among siblings).
fn random_field(rng: &mut fastrand::Rng, name: String, depth: usize) -> Field {
    let choices: &[FieldType] = if depth >= 2 {
        &[
            FieldType::String,
            FieldType::Integer,
            FieldType::Number,
            FieldType::Boolean,
            FieldType::Enum,
            FieldType::Custom,
        ]
    } else {
        &[
            FieldType::String,
            FieldType::Integer,
            FieldType::Number,
            FieldType::Boolean,
            FieldType::Enum,
            FieldType::Object,
            FieldType::Array,
            FieldType::Custom,
        ]
    };
    let field_type = choices[rng.usize(0..choices.len())];
    let mut f = Field::new(name, field_type);
    f.item_type = None;
    f.required = rng.bool();
    if rng.bool() && field_type != FieldType::Custom {
        f.description = format!("{} \"quoted\" {}", word(rng), word(rng));
    }
    match field_type {
        FieldType::String => {
            f.min_length = rng.bool().then(|| rng.u64(0..10));
            f.max_length = rng.bool().then(|| rng.u64(10..500));
            if rng.bool() {
                f.extra = kept(&[("pattern", json!("^[a-z]+$")), ("format", json!("email"))]);
            }
        }
        FieldType::Integer => {
            f.minimum = rng.bool().then(|| rng.i64(-100..10) as f64);
            f.maximum = rng.bool().then(|| rng.i64(10..1000) as f64);
            if rng.bool() {
                f.extra = kept(&[("multipleOf", json!(5))]);
            }
        }
        FieldType::Number => {
            f.minimum = rng.bool().then(|| rng.f64() * 10.0);
            f.maximum = rng.bool().then(|| 10.0 + rng.f64() * 10.0);
        }
        FieldType::Boolean => {
            if rng.bool() {
                f.extra = kept(&[("default", json!(true))]);
            }
        }
        FieldType::Enum => f.enum_values = (0..rng.usize(1..5)).map(|i| format!("{}{i}", word(rng))).collect(),
        FieldType::Object => {
            f.fields = random_fields(rng, depth + 1);
            if rng.bool() {
                f.extra = kept(&[("additionalProperties", json!(false))]);
            }
        }
        FieldType::Array => {
            let items = [
                FieldType::String,
                FieldType::Integer,
                FieldType::Number,
                FieldType::Boolean,
                FieldType::Enum,
                FieldType::Object,
            ];
            let item_type = items[rng.usize(0..items.len())];
            f.item_type = Some(item_type);
            match item_type {
                FieldType::Enum => f.enum_values = vec![word(rng) + "a", word(rng) + "b"],
                FieldType::Object => f.fields = random_fields(rng, depth + 1),
                _ => {}
            }
            if rng.bool() {
                f.max_items = Some(rng.u64(1..20));
            }
        }
        FieldType::Custom => {
            f.extra = if rng.bool() {
                kept(&[("anyOf", json!([{"type": "string"}, {"type": "integer"}])), ("description", json!("either"))])
            } else {
                kept(&[("$ref", json!("#/$defs/thing"))])
            };
        }
    }
    f
}

fn random_fields(rng: &mut fastrand::Rng, depth: usize) -> Vec<Field> {
    let mut names: Vec<String> = Vec::new();
    for _ in 0..rng.usize(0..5) {
        let name = word(rng);
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names.into_iter().map(|n| random_field(rng, n, depth)).collect()
}

#[test]
fn fields_to_schema_to_fields_is_the_identity() {
    let mut rng = fastrand::Rng::with_seed(11);
    for _ in 0..2000 {
        let mut extra = Map::new();
        if rng.bool() {
            extra.insert("$defs".into(), json!({"thing": {"type": "string"}}));
            extra.insert("additionalProperties".into(), json!(false));
        }
        let doc = FieldsDoc { fields: random_fields(&mut rng, 0), extra };
        let schema = fields_to_schema(&doc);
        let back = schema_to_fields(&schema).unwrap_or_else(|e| panic!("{e}: {schema}"));
        assert_eq!(back, doc, "schema was {schema}");
    }
}

/// `required` compared as a set, and the empty `properties`/`required` the builder
/// adds to objects ignored: neither changes what the schema means.
fn normalized(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut out = Map::new();
            for (k, v) in map {
                match (k.as_str(), v) {
                    ("required", Value::Array(items)) if items.is_empty() => {}
                    ("properties", Value::Object(p)) if p.is_empty() => {}
                    ("required", Value::Array(items)) => {
                        let mut sorted = items.clone();
                        sorted.sort_by_key(Value::to_string);
                        out.insert(k.clone(), Value::Array(sorted));
                    }
                    _ => {
                        out.insert(k.clone(), normalized(v));
                    }
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(normalized).collect()),
        other => other.clone(),
    }
}

#[test]
fn schema_to_fields_to_schema_keeps_every_keyword_of_the_corpus() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files: Vec<_> = std::fs::read_dir(root.join("tests/fixtures/schemas/corpus"))
        .expect("corpus")
        .map(|e| e.expect("entry").path())
        .collect();
    files.push(root.join("server/schema/schemas/review/findings/v1.schema.json"));
    files.sort();
    assert!(files.len() >= 16);
    for path in files {
        let schema: Value = serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("json");
        let doc = schema_to_fields(&schema).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let back = fields_to_schema(&doc);
        assert_eq!(normalized(&back), normalized(&schema), "{}", path.display());
    }
}

#[test]
fn what_the_builder_cannot_show_is_flagged_not_dropped() {
    let schema = json!({
        "type": "object",
        "properties": {
            "email": {"type": "string", "format": "email", "maxLength": 80},
            "either": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "tags": {"type": "array", "items": {"type": "string", "minLength": 1}}
        },
        "required": ["email"]
    });
    let doc = schema_to_fields(&schema).expect("object root");
    let flags: Vec<(String, FieldType, Vec<String>)> =
        doc.fields.iter().map(|f| (f.name.clone(), f.field_type, f.kept_keywords())).collect();
    assert_eq!(
        flags,
        vec![
            ("email".into(), FieldType::String, vec!["format".into()]),
            ("either".into(), FieldType::Custom, vec!["(whole schema)".into()]),
            ("tags".into(), FieldType::Array, vec!["items".into()]),
        ]
    );
    assert_eq!(doc.fields[0].max_length, Some(80));
    assert_eq!(fields_to_schema(&doc), schema);
    assert!(schema_to_fields(&json!({"type": "array"})).is_err());
}
