//! The published JSON Schema of the conclave file format, generated from the
//! `conclave-shared` types so the two cannot drift apart.
//!
//! `docs/conclave-file.schema.json` is the checked-in copy; a test keeps it equal to
//! what this module generates.

use jsonschema::Validator;
use serde_json::Value;
use std::sync::OnceLock;

/// Identifier of version 1 of the format schema.
pub const FORMAT_SCHEMA_ID: &str = "urn:conclave:conclave-file:v1";

/// The format schema as a JSON value.
pub fn format_schema() -> Value {
    let generated = serde_json::to_value(schemars::schema_for!(conclave_shared::Conclave)).unwrap_or(Value::Null);
    let mut schema = serde_json::Map::new();
    schema.insert("$schema".into(), generated.get("$schema").cloned().unwrap_or(Value::Null));
    schema.insert("$id".into(), Value::String(FORMAT_SCHEMA_ID.into()));
    schema.insert("title".into(), Value::String("Conclave file (version 1)".into()));
    if let Value::Object(rest) = generated {
        for (key, value) in rest {
            schema.entry(key).or_insert(value);
        }
    }
    Value::Object(schema)
}

/// The format schema as pretty-printed file text.
pub fn format_schema_text() -> String {
    let mut text = serde_json::to_string_pretty(&format_schema()).unwrap_or_default();
    text.push('\n');
    text
}

/// A compiled validator for the format schema, built once per process.
pub fn format_validator() -> Option<&'static Validator> {
    static VALIDATOR: OnceLock<Option<Validator>> = OnceLock::new();
    VALIDATOR.get_or_init(|| jsonschema::validator_for(&format_schema()).ok()).as_ref()
}
