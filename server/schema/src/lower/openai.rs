//! Lowering for OpenAI strict structured outputs: every object closed, every property
//! required (optional ones made nullable), `oneOf` as `anyOf`, and keywords strict
//! mode rejects dropped. Nulls the lowering introduced are removed from answers before
//! validation, so the original schema still judges them.

use serde_json::{Value, json};

use super::rewrite::{
    COMMON_FORMATS, Lowered, Notes, check_format, close_object, drop_keyword, has_external_refs, one_of_to_any_of,
    strip_metadata, unsupported,
};
use crate::walk::{escape, is_object_schema, resolve_local, walk_mut};
use conclave_shared::{LowerTarget, NoteKind};

/// Keywords strict mode does not accept.
const UNSUPPORTED: &[&str] = &[
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "default",
    "patternProperties",
    "unevaluatedProperties",
    "unevaluatedItems",
    "propertyNames",
    "minProperties",
    "maxProperties",
    "contains",
    "minContains",
    "maxContains",
    "uniqueItems",
    "minLength",
    "maxLength",
    "prefixItems",
];

/// Documented limits of strict mode.
const MAX_PROPERTIES: usize = 5000;
const MAX_DEPTH: usize = 10;
const MAX_ENUM_VALUES: usize = 1000;

pub(super) fn lower_for_openai(mut schema: Value) -> Lowered {
    if has_external_refs(&schema) {
        return unsupported(LowerTarget::OpenAi, schema, "", "external `$ref`s are not supported");
    }
    let mut notes = Notes::default();
    strip_metadata(&mut schema, &mut notes);
    let mut optionals: Vec<(String, Vec<String>)> = Vec::new();
    let (mut properties, mut enum_values) = (0usize, 0usize);
    walk_mut(&mut schema, &mut |obj, path| {
        for keyword in UNSUPPORTED {
            drop_keyword(obj, path, keyword, "not supported in strict mode", &mut notes);
        }
        one_of_to_any_of(obj, path, &mut notes);
        check_format(obj, path, COMMON_FORMATS, &mut notes);
        enum_values += obj.get("enum").and_then(Value::as_array).map_or(0, Vec::len);
        if is_object_schema(obj) {
            close_object(obj, path, &mut notes);
            let names: Vec<String> = obj
                .get("properties")
                .and_then(Value::as_object)
                .map(|p| p.keys().cloned().collect())
                .unwrap_or_default();
            properties += names.len();
            let required: Vec<&str> = obj
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let optional: Vec<String> = names.iter().filter(|n| !required.contains(&n.as_str())).cloned().collect();
            obj.insert("required".into(), json!(names));
            if !optional.is_empty() {
                optionals.push((path.to_string(), optional));
            }
        }
    });
    // Deepest first, so that wrapping a property in `anyOf` never moves one not yet done.
    optionals.sort_by_key(|(path, _)| std::cmp::Reverse(path.matches('/').count()));
    for (path, names) in optionals {
        for name in names {
            let pointer = format!("{path}/properties/{}", escape(&name));
            if let Some(property) = schema.pointer_mut(&pointer) {
                make_nullable(property);
            }
            notes.add(
                &pointer,
                NoteKind::Tightened,
                format!("optional property `{name}` is required and nullable in strict mode; a null answer is removed before validation"),
            );
        }
    }
    let depth = object_depth(&schema, 0);
    if depth > MAX_DEPTH {
        notes.add("", NoteKind::Limit, format!("objects nest {depth} levels deep; strict mode allows {MAX_DEPTH}"));
    }
    if properties > MAX_PROPERTIES {
        notes.add("", NoteKind::Limit, format!("{properties} properties in all; strict mode allows {MAX_PROPERTIES}"));
    }
    if enum_values > MAX_ENUM_VALUES {
        notes.add(
            "",
            NoteKind::Limit,
            format!("{enum_values} enum values in all; strict mode allows {MAX_ENUM_VALUES}"),
        );
    }
    notes.0.sort_by(|a, b| a.path.cmp(&b.path));
    Lowered { target: LowerTarget::OpenAi, schema, notes: notes.0, native: true }
}

/// Lets `schema` also accept null.
fn make_nullable(schema: &mut Value) {
    let Value::Object(obj) = schema else { return };
    match obj.get_mut("type") {
        Some(Value::String(t)) => {
            let t = t.clone();
            obj.insert("type".into(), json!([t, "null"]));
        }
        Some(Value::Array(types)) => {
            if !types.iter().any(|t| t == "null") {
                types.push(json!("null"));
            }
        }
        _ => {
            let inner = std::mem::take(obj);
            obj.insert("anyOf".into(), json!([Value::Object(inner), {"type": "null"}]));
            return;
        }
    }
    if let Some(Value::Array(values)) = obj.get_mut("enum")
        && !values.iter().any(Value::is_null)
    {
        values.push(Value::Null);
    }
}

fn object_depth(schema: &Value, depth: usize) -> usize {
    let Value::Object(obj) = schema else { return depth };
    let here = if is_object_schema(obj) { depth + 1 } else { depth };
    obj.iter()
        .filter(|(k, _)| !matches!(k.as_str(), "enum" | "const" | "$defs" | "definitions"))
        .map(|(_, v)| match v {
            Value::Object(map) if map.values().all(Value::is_object) && !map.contains_key("type") => {
                map.values().map(|c| object_depth(c, here)).max().unwrap_or(here)
            }
            Value::Array(items) => items.iter().map(|c| object_depth(c, here)).max().unwrap_or(here),
            other => object_depth(other, here),
        })
        .max()
        .unwrap_or(here)
}

/// Removes `null` values that the original schema does not allow at optional
/// properties: strict mode made those properties required and nullable, and a model
/// answers null where the author meant "absent".
pub fn remove_lowering_nulls(value: &mut Value, original: &Value) {
    strip(value, original, original, 0);
}

fn strip(value: &mut Value, schema: &Value, root: &Value, depth: usize) {
    if depth > 64 {
        return;
    }
    let schema = deref(schema, root);
    match value {
        Value::Object(map) => {
            let Some(properties) = schema.get("properties").and_then(Value::as_object) else { return };
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            map.retain(|key, v| {
                !(v.is_null()
                    && !required.contains(&key.as_str())
                    && properties.get(key).is_some_and(|p| !allows_null(p, root, 0)))
            });
            for (key, v) in map.iter_mut() {
                if let Some(p) = properties.get(key) {
                    strip(v, p, root, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for item in items {
                    strip(item, item_schema, root, depth + 1);
                }
            }
        }
        _ => {}
    }
}

fn deref<'a>(schema: &'a Value, root: &'a Value) -> &'a Value {
    let mut current = schema;
    for _ in 0..32 {
        match current.get("$ref").and_then(Value::as_str).and_then(|r| resolve_local(root, r)) {
            Some(target) => current = target,
            None => break,
        }
    }
    current
}

fn allows_null(schema: &Value, root: &Value, depth: usize) -> bool {
    if depth > 32 {
        return true;
    }
    let schema = deref(schema, root);
    let Some(obj) = schema.as_object() else { return schema != &Value::Bool(false) };
    if let Some(c) = obj.get("const") {
        return c.is_null();
    }
    if let Some(Value::Array(values)) = obj.get("enum") {
        return values.iter().any(Value::is_null);
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = obj.get(key) {
            return branches.iter().any(|b| allows_null(b, root, depth + 1));
        }
    }
    match obj.get("type") {
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(types)) => types.iter().any(|t| t == "null"),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nulls_for_optional_non_nullable_properties_are_removed() {
        let original = json!({
            "type": "object",
            "properties": {
                "a": {"type": "string"},
                "b": {"type": ["string", "null"]},
                "c": {"type": "string"},
                "items": {"type": "array", "items": {"$ref": "#/$defs/item"}}
            },
            "required": ["c"],
            "$defs": {"item": {"type": "object", "properties": {"note": {"type": "string"}}, "required": []}}
        });
        let mut value = json!({"a": null, "b": null, "c": null, "items": [{"note": null}, {"note": "x"}]});
        remove_lowering_nulls(&mut value, &original);
        assert_eq!(value, json!({"b": null, "c": null, "items": [{}, {"note": "x"}]}));
    }

    #[test]
    fn nullable_keeps_enums_consistent_and_wraps_refs() {
        let mut s = json!({"type": "string", "enum": ["a", "b"]});
        make_nullable(&mut s);
        assert_eq!(s, json!({"type": ["string", "null"], "enum": ["a", "b", null]}));
        let mut r = json!({"$ref": "#/$defs/x"});
        make_nullable(&mut r);
        assert_eq!(r, json!({"anyOf": [{"$ref": "#/$defs/x"}, {"type": "null"}]}));
    }
}
