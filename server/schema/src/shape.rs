//! Recognising findings-shaped output from a schema: an array of objects with `file`,
//! `line`, and `severity` or `stance`. This is the one place that decides it; loading
//! a conclave records the answer per agent, and every later stage reads that.

use conclave_shared::Severity;
use serde_json::{Map, Value, json};

use crate::walk::resolve_local;

/// Output in the findings shape (`review.findings.v1`): `findings`, and `counts`
/// with the number of each severity among them, as an analyzer's reader builds it.
pub fn findings_document(findings: Vec<Value>) -> Value {
    let count = |severity: Severity| findings.iter().filter(|f| f["severity"] == severity.as_str()).count();
    let counts: Map<String, Value> = Severity::ALL.iter().map(|&s| (s.as_str().to_string(), json!(count(s)))).collect();
    json!({"findings": findings, "counts": counts})
}

/// The root property holding findings, when `schema` describes findings-shaped output.
pub fn findings_field(schema: &Value) -> Option<String> {
    let properties = schema.get("properties")?.as_object()?;
    properties.iter().find_map(|(name, property)| {
        let property = deref(property, schema);
        let is_array = property.get("type").is_some_and(|t| t == "array");
        let items = deref(property.get("items")?, schema);
        let item_props = items.get("properties")?.as_object()?;
        let shaped = item_props.contains_key("file")
            && item_props.contains_key("line")
            && (item_props.contains_key("severity") || item_props.contains_key("stance"));
        (is_array && shaped).then(|| name.clone())
    })
}

fn deref<'a>(schema: &'a Value, root: &'a Value) -> &'a Value {
    match schema.get("$ref").and_then(Value::as_str).and_then(|r| resolve_local(root, r)) {
        Some(target) => target,
        None => schema,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn findings_shape_is_recognised_from_the_schema() {
        let builtin = crate::SchemaCatalog::with_roots(vec![]).resolve("review.findings.v1").expect("built-in").schema;
        assert_eq!(findings_field(&builtin), Some("findings".to_string()));
        let by_ref = json!({"type": "object", "properties": {"issues": {"type": "array", "items": {"$ref": "#/$defs/i"}}},
            "$defs": {"i": {"type": "object", "properties": {"file": {}, "line": {}, "stance": {}}}}});
        assert_eq!(findings_field(&by_ref), Some("issues".to_string()));
        let no_line = json!({"type": "object", "properties": {"items": {"type": "array", "items": {"type": "object", "properties": {"file": {}, "severity": {}}}}}});
        assert_eq!(findings_field(&no_line), None);
    }
}
