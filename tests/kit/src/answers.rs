//! Answers made up from the request: a minimal valid instance of the schema an
//! OpenAI Chat Completions request asks for (or a short text), so a whole review can
//! run against the fake server without a script. No model is consulted.

use serde_json::{Map, Value, json};

/// The answer text for a Chat Completions request body.
pub fn answer_for(request: &Value) -> String {
    // The nested `json_schema` dialect, or the schema inside `json_object`.
    let schema =
        request.pointer("/response_format/json_schema/schema").or_else(|| request.pointer("/response_format/schema"));
    match schema {
        Some(schema) => example(schema, schema, "", 0).to_string(),
        None if request.get("tools").is_some() => "I have what I need from the diff.".to_string(),
        None => "This is a scripted answer from the fake server; no model was consulted.".to_string(),
    }
}

/// A minimal instance of `schema` (resolving local `$ref`s against `root`).
pub fn example(schema: &Value, root: &Value, name: &str, depth: usize) -> Value {
    if depth > 16 {
        return Value::Null;
    }
    if let Some(target) = schema.get("$ref").and_then(Value::as_str).and_then(|r| root.pointer(r.strip_prefix('#')?)) {
        return example(target, root, name, depth + 1);
    }
    if let Some(c) = schema.get("const") {
        return c.clone();
    }
    if let Some(first) = schema.get("enum").and_then(Value::as_array).and_then(|e| e.iter().find(|v| !v.is_null())) {
        return first.clone();
    }
    if let Some(first) = schema.get("anyOf").and_then(Value::as_array).and_then(|b| b.first()) {
        return example(first, root, name, depth + 1);
    }
    let kind = match schema.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(types)) => types.iter().filter_map(Value::as_str).find(|t| *t != "null").unwrap_or("null"),
        _ => "object",
    };
    match kind {
        "object" => {
            let mut out = Map::new();
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (key, sub) in props {
                    out.insert(key.clone(), example(sub, root, key, depth + 1));
                }
            }
            Value::Object(out)
        }
        "array" => {
            let items = schema.get("items").cloned().unwrap_or(json!({}));
            let count = schema.get("minItems").and_then(Value::as_u64).unwrap_or(1).max(1);
            Value::Array((0..count).map(|_| example(&items, root, name, depth + 1)).collect())
        }
        "integer" | "number" => {
            json!(schema.get("minimum").and_then(Value::as_i64).unwrap_or(if name == "line" { 1 } else { 0 }))
        }
        "boolean" => json!(false),
        "null" => Value::Null,
        _ => json!(match name {
            "description" => "Scripted finding from the fake server: no model was consulted.",
            "raisedBy" => "fake-server",
            _ => "example",
        }),
    }
}

/// Answers a Chat Completions request with [`answer_for`], streamed in the vendor's
/// wire format: a [`Responder`](crate::fake_server::Responder) for the fake server.
pub fn chat_completion_answer(request: &Value) -> crate::fake_server::Reply {
    crate::wire::Vendor::OpenAiChat.answer(&answer_for(request))
}
