//! A tool call's arguments as both OpenAI APIs send them: a string holding a JSON
//! object (empty for a tool without parameters).

use conclave_core::ProviderError;
use serde_json::Value;

/// A JSON object parsed from a tool call's argument string.
pub(super) fn parse_arguments(name: &str, text: &str) -> Result<Value, ProviderError> {
    if text.trim().is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    serde_json::from_str(text)
        .map_err(|e| ProviderError::Malformed(format!("tool call `{name}` has arguments that are not JSON: {e}")))
}
