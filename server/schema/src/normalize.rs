//! Normalizing an author's schema before lowering: every object schema gets
//! `properties` and `required`, so each lowering can rely on them being there.

use serde_json::{Value, json};

use super::walk::{is_object_schema, walk_mut};

/// Why a schema cannot be used as an output schema.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NormalizeError {
    /// The root does not describe a JSON object.
    #[error(
        "the root of an output schema must be {{\"type\": \"object\"}}, found {0}; wrap the value in an object property"
    )]
    NotObjectRoot(String),
}

/// Returns the normalized copy of `schema`.
pub fn normalize(schema: &Value) -> Result<Value, NormalizeError> {
    let root_type = schema.get("type");
    if root_type != Some(&json!("object")) {
        let found = root_type.map_or_else(|| "a schema without \"type\"".to_string(), |t| format!("\"type\": {t}"));
        return Err(NormalizeError::NotObjectRoot(found));
    }
    let mut out = schema.clone();
    walk_mut(&mut out, &mut |obj, _| {
        if is_object_schema(obj) {
            obj.entry("properties").or_insert_with(|| json!({}));
            obj.entry("required").or_insert_with(|| json!([]));
        }
    });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_nodes_get_properties_and_required() {
        let schema = json!({"type": "object", "properties": {"inner": {"type": "object"}, "list": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}}}});
        let n = normalize(&schema).expect("normalizes");
        assert_eq!(n["required"], json!([]));
        assert_eq!(n["properties"]["inner"], json!({"type": "object", "properties": {}, "required": []}));
        assert_eq!(n["properties"]["list"]["items"]["required"], json!([]));
        assert_eq!(n["properties"]["list"].get("required"), None, "arrays are not objects");
    }

    #[test]
    fn non_object_roots_are_refused_with_what_was_found() {
        assert_eq!(
            normalize(&json!({"type": "array"})).expect_err("array root").to_string(),
            "the root of an output schema must be {\"type\": \"object\"}, found \"type\": \"array\"; wrap the value in an object property"
        );
        assert!(normalize(&json!({"anyOf": []})).is_err());
    }
}
