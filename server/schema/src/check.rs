//! Checks that an author's output schema is itself a usable JSON Schema.
//!
//! A schema must pass its meta-schema (draft detected from `$schema`, 2020-12 when
//! absent), compile (regexes, local `$ref`s), and describe a JSON object at its root,
//! because every provider's structured-output mode requires an object answer.

use serde_json::Value;

/// The JSON Schema type names.
const TYPES: [&str; 7] = ["string", "number", "integer", "boolean", "object", "array", "null"];

/// One thing wrong with a schema, located by a JSON pointer into the schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaProblem {
    /// JSON pointer into the schema document (empty for the root).
    pub pointer: String,
    /// What is wrong.
    pub message: String,
}

/// Every problem found in `schema`; empty when it is usable as an output schema.
pub fn check_schema(schema: &Value) -> Vec<SchemaProblem> {
    let mut problems = Vec::new();
    if !schema.is_object() {
        problems.push(SchemaProblem {
            pointer: String::new(),
            message: format!("an output schema must be a JSON object, found {}", json_type(schema)),
        });
        return problems;
    }
    match jsonschema::meta::validator_for(schema) {
        Ok(meta) => {
            for err in meta.iter_errors(schema) {
                let pointer = err.instance_path().as_str().to_string();
                let message = match err.instance().as_ref() {
                    Value::String(name) if pointer.ends_with("/type") => {
                        format!("`{name}` is not a JSON Schema type; use one of: {}", TYPES.join(", "))
                    }
                    _ => err.to_string(),
                };
                problems.push(SchemaProblem { pointer, message });
            }
        }
        Err(err) => problems
            .push(SchemaProblem { pointer: "/$schema".to_string(), message: format!("unknown meta-schema: {err}") }),
    }
    if problems.is_empty()
        && let Err(err) = jsonschema::validator_for(schema)
    {
        problems.push(SchemaProblem {
            pointer: err.instance_path().as_str().to_string(),
            message: format!("schema does not compile: {err}"),
        });
    }
    if problems.is_empty() {
        match schema.get("type") {
            Some(Value::String(t)) if t == "object" => {}
            Some(other) => problems.push(SchemaProblem {
                pointer: "/type".to_string(),
                message: format!(
                    "the root of an output schema must have \"type\": \"object\", found {other}; wrap the value in an object property"
                ),
            }),
            None => problems.push(SchemaProblem {
                pointer: String::new(),
                message: "the root of an output schema must declare \"type\": \"object\"".to_string(),
            }),
        }
    }
    problems
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_plain_object_schema_is_fine() {
        let s = json!({"type":"object","properties":{"a":{"type":"string","maxLength":3}},"required":["a"]});
        assert_eq!(check_schema(&s), vec![]);
    }

    #[test]
    fn meta_schema_violations_are_located() {
        let s = json!({"type":"object","properties":{"a":{"type":"strnig"},"b":{"minimum":"one"}}});
        let problems = check_schema(&s);
        let pointers: Vec<&str> = problems.iter().map(|p| p.pointer.as_str()).collect();
        assert!(pointers.contains(&"/properties/a/type"), "{problems:?}");
        assert!(pointers.contains(&"/properties/b/minimum"), "{problems:?}");
    }

    #[test]
    fn bad_regex_and_dangling_ref_do_not_compile() {
        let regex = json!({"type":"object","properties":{"a":{"type":"string","pattern":"(unclosed"}}});
        assert!(!check_schema(&regex).is_empty());
        let dangling = json!({"type":"object","properties":{"a":{"$ref":"#/$defs/missing"}}});
        let problems = check_schema(&dangling);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].message.contains("does not compile"), "{problems:?}");
    }

    #[test]
    fn non_object_roots_are_refused() {
        assert_eq!(check_schema(&json!({"type":"array"}))[0].pointer, "/type");
        assert_eq!(check_schema(&json!([1]))[0].message, "an output schema must be a JSON object, found an array");
        assert_eq!(check_schema(&json!({"properties":{}}))[0].pointer, "");
    }

    #[test]
    fn unknown_meta_schema_is_an_error_not_a_panic() {
        let s = json!({"$schema":"https://example.invalid/meta","type":"object"});
        let problems = check_schema(&s);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].pointer, "/$schema");
    }
}
