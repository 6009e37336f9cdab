//! The prompt contract: for providers without native structured output (or agents
//! that ask for it), the schema is rendered into the prompt and the JSON answer is
//! dug out of the reply text.

use serde_json::Value;

/// The instructions appended to an agent's prompt when the schema travels as text.
pub fn render_contract(schema: &Value) -> String {
    let pretty = serde_json::to_string_pretty(schema).unwrap_or_default();
    format!(
        "Answer with one JSON value that satisfies this JSON Schema, and nothing else: no prose, no code fences.\n\nJSON Schema:\n{pretty}"
    )
}

/// The feedback sent after an answer failed validation.
pub fn render_feedback(errors: &[String]) -> String {
    let list: Vec<String> = errors.iter().map(|e| format!("- {e}")).collect();
    format!(
        "Your previous answer did not satisfy the required JSON Schema:\n{}\nAnswer again with corrected JSON only.",
        list.join("\n")
    )
}

/// Finds the answer's JSON: code fences are stripped, then the first complete JSON
/// object or array in the text is parsed.
pub fn extract_json(text: &str) -> Result<Value, String> {
    let trimmed = text.trim();
    if let Ok(value) = serde_json::from_str::<Value>(trimmed) {
        return Ok(value);
    }
    let unfenced = strip_fences(trimmed);
    if let Ok(value) = serde_json::from_str::<Value>(unfenced.trim()) {
        return Ok(value);
    }
    for (start, c) in unfenced.char_indices() {
        if c != '{' && c != '[' {
            continue;
        }
        let mut values = serde_json::Deserializer::from_str(&unfenced[start..]).into_iter::<Value>();
        if let Some(Ok(value)) = values.next() {
            return Ok(value);
        }
    }
    let preview: String = trimmed.chars().take(80).collect();
    Err(format!("the answer contains no JSON object or array (it starts: {preview:?})"))
}

/// The body of the first fenced block (```json ... ```), or the text itself.
fn strip_fences(text: &str) -> &str {
    let Some(open) = text.find("```") else { return text };
    let after = &text[open + 3..];
    let body_start = after.find('\n').map_or(0, |i| i + 1);
    let body = &after[body_start..];
    match body.find("```") {
        Some(close) => &body[..close],
        None => body,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn extracts_plain_fenced_and_embedded_json() {
        assert_eq!(extract_json(" {\"a\": 1} ").expect("plain"), json!({"a": 1}));
        assert_eq!(extract_json("```json\n{\"a\": [1, 2]}\n```").expect("fenced"), json!({"a": [1, 2]}));
        assert_eq!(extract_json("```\n{\"a\": 2}\n```\nDone.").expect("bare fence"), json!({"a": 2}));
        assert_eq!(
            extract_json("Here you go: {\"a\": {\"b\": \"}\"}} and more {\"c\": 3}").expect("first value"),
            json!({"a": {"b": "}"}})
        );
        assert_eq!(extract_json("Sure {not json} then [1, 2]").expect("skips broken"), json!([1, 2]));
    }

    #[test]
    fn text_without_json_is_a_readable_error() {
        let err = extract_json("I cannot help with that.").expect_err("no json");
        assert_eq!(err, "the answer contains no JSON object or array (it starts: \"I cannot help with that.\")");
    }

    #[test]
    fn feedback_lists_each_error() {
        let text = render_feedback(&[
            "/line: 0 is less than the minimum of 1".into(),
            "/: \"counts\" is a required property".into(),
        ]);
        assert!(
            text.contains("- /line: 0 is less than the minimum of 1\n- /: \"counts\" is a required property\n"),
            "{text}"
        );
    }
}
