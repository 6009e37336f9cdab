//! Visiting every subschema of a JSON Schema, with its JSON pointer.
//!
//! Subschemas are found under the keywords that hold schemas (`properties`, `items`,
//! `anyOf`, `$defs`, ...); values of other keywords (an `enum` list, a `const`) are
//! never mistaken for schemas.

use serde_json::{Map, Value};

/// Keywords whose value is one subschema.
const SINGLE: &[&str] =
    &["items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames", "unevaluatedItems"];
/// Keywords whose value is an array of subschemas.
const LIST: &[&str] = &["anyOf", "oneOf", "allOf", "prefixItems"];
/// Keywords whose value maps names to subschemas.
const MAP: &[&str] = &["properties", "$defs", "definitions", "patternProperties", "dependentSchemas"];

/// Calls `visit` on every schema object in `schema`, parents before children, with the
/// JSON pointer of each. `visit` may change the object; children are found afterwards.
pub fn walk_mut(schema: &mut Value, visit: &mut dyn FnMut(&mut Map<String, Value>, &str)) {
    walk_at(schema, "", visit);
}

fn walk_at(schema: &mut Value, path: &str, visit: &mut dyn FnMut(&mut Map<String, Value>, &str)) {
    let Value::Object(obj) = schema else { return };
    visit(obj, path);
    for key in SINGLE {
        if let Some(child) = obj.get_mut(*key) {
            walk_at(child, &format!("{path}/{key}"), visit);
        }
    }
    for key in LIST {
        if let Some(Value::Array(items)) = obj.get_mut(*key) {
            for (i, child) in items.iter_mut().enumerate() {
                walk_at(child, &format!("{path}/{key}/{i}"), visit);
            }
        }
    }
    for key in MAP {
        if let Some(Value::Object(children)) = obj.get_mut(*key) {
            for (name, child) in children.iter_mut() {
                walk_at(child, &format!("{path}/{key}/{}", escape(name)), visit);
            }
        }
    }
}

/// Escapes one JSON pointer segment.
pub fn escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

/// True when the schema object describes a JSON object.
pub fn is_object_schema(obj: &Map<String, Value>) -> bool {
    match obj.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "object"),
        _ => obj.contains_key("properties"),
    }
}

/// Resolves a local `$ref` (`#/$defs/name` or any `#/...` pointer) against `root`.
pub fn resolve_local<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    root.pointer(pointer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn visits_every_subschema_but_not_enum_values() {
        let mut schema = json!({
            "type": "object",
            "properties": {"a/b": {"type": "array", "items": {"type": "object", "properties": {}}}},
            "$defs": {"d": {"anyOf": [{"type": "string"}, {"enum": [{"type": "not a schema"}]}]}}
        });
        let mut seen = Vec::new();
        walk_mut(&mut schema, &mut |_, path| seen.push(path.to_string()));
        assert_eq!(
            seen,
            vec!["", "/properties/a~1b", "/properties/a~1b/items", "/$defs/d", "/$defs/d/anyOf/0", "/$defs/d/anyOf/1"]
        );
    }
}
