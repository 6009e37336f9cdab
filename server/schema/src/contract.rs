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
/// object or array in the text is parsed. Raw control characters (a newline, a tab)
/// inside strings, which JSON forbids but small models and some servers' grammars
/// let through, are read as if escaped. An answer that is itself a JSON document
/// (it starts with `{` or `[`) but does not parse is an error saying where, never
/// one of the values nested in it.
pub fn extract_json(text: &str) -> Result<Value, String> {
    let trimmed = text.trim();
    let unfenced = strip_fences(trimmed).trim();
    for candidate in [trimmed, unfenced] {
        if let Some(value) = parse_whole(candidate) {
            return Ok(value);
        }
    }
    if unfenced.starts_with(['{', '[']) {
        let escaped = escape_raw_controls(unfenced);
        let mut values = serde_json::Deserializer::from_str(&escaped).into_iter::<Value>();
        return match values.next() {
            Some(Ok(value)) => Ok(value),
            Some(Err(e)) => Err(format!("the answer is not valid JSON: {e}")),
            None => Err("the answer is empty".into()),
        };
    }
    for (start, c) in unfenced.char_indices() {
        if c != '{' && c != '[' {
            continue;
        }
        let escaped = escape_raw_controls(&unfenced[start..]);
        let mut values = serde_json::Deserializer::from_str(&escaped).into_iter::<Value>();
        if let Some(Ok(value)) = values.next() {
            return Ok(value);
        }
    }
    let preview: String = trimmed.chars().take(80).collect();
    Err(format!("the answer contains no JSON object or array (it starts: {preview:?})"))
}

/// `text` parsed as one JSON value, reading raw control characters in strings as
/// escaped.
fn parse_whole(text: &str) -> Option<Value> {
    serde_json::from_str(text).ok().or_else(|| serde_json::from_str(&escape_raw_controls(text)).ok())
}

/// `text` with each control character inside a JSON string literal written as its
/// escape (`\n`, `\t`, `\u001b`, ...); outside strings nothing changes.
fn escape_raw_controls(text: &str) -> std::borrow::Cow<'_, str> {
    let (mut in_string, mut escaped) = (false, false);
    let mut out: Option<String> = None;
    for (i, c) in text.char_indices() {
        let raw_control = in_string && !escaped && (c as u32) < 0x20;
        if raw_control {
            let out = out.get_or_insert_with(|| text[..i].to_string());
            match c {
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                other => out.push_str(&format!("\\u{:04x}", other as u32)),
            }
        } else if let Some(out) = out.as_mut() {
            out.push(c);
        }
        match c {
            _ if escaped => escaped = false,
            '\\' if in_string => escaped = true,
            '"' => in_string = !in_string,
            _ => {}
        }
    }
    out.map_or(std::borrow::Cow::Borrowed(text), std::borrow::Cow::Owned)
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
    fn raw_control_characters_in_strings_are_read_as_escaped() {
        let answer = "{\"findings\": [{\"raisedBy\": \",\n+   {\", \"note\": \"a\tb\"}], \"counts\": {\"nit\": 1}}";
        assert_eq!(
            extract_json(answer).expect("read as escaped"),
            json!({"findings": [{"raisedBy": ",\n+   {", "note": "a\tb"}], "counts": {"nit": 1}})
        );
        assert_eq!(extract_json("```json\n{\"a\": \"x\ny\"}\n```").expect("fenced"), json!({"a": "x\ny"}));
        // Escapes already written stay as they are.
        assert_eq!(extract_json(r#"{"a": "q\"\n\\"}"#).expect("escaped"), json!({"a": "q\"\n\\"}));
    }

    #[test]
    fn a_broken_document_is_an_error_saying_where_not_a_value_nested_in_it() {
        let err = extract_json("{\"findings\": [{\"line\": 7,}], \"counts\": {\"nit\": 1}}").expect_err("broken");
        assert!(err.starts_with("the answer is not valid JSON: ") && err.contains("line 1 column"), "{err}");
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
