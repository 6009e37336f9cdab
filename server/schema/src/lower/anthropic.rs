//! Lowering for Anthropic structured outputs: objects closed, numeric, length and
//! most array bounds dropped (restated in `description`), `oneOf` as `anyOf`,
//! patterns with backreferences or lookaround dropped, recursive schemas refused.

use serde_json::Value;

use super::rewrite::{
    COMMON_FORMATS, Lowered, Notes, check_format, close_object, drop_keyword, has_external_refs, has_recursive_refs,
    one_of_to_any_of, strip_metadata, unsupported,
};
use crate::walk::{is_object_schema, walk_mut};
use conclave_shared::{LowerTarget, NoteKind};

/// Keywords Anthropic does not accept.
const UNSUPPORTED: &[&str] = &[
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "maxItems",
    "uniqueItems",
    "not",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "patternProperties",
    "unevaluatedProperties",
    "unevaluatedItems",
    "propertyNames",
    "minProperties",
    "maxProperties",
    "contains",
    "minContains",
    "maxContains",
    "prefixItems",
];

/// Documented limits, summed over one request.
const MAX_OPTIONAL: usize = 24;
const MAX_UNION_TYPED: usize = 16;

pub(super) fn lower_for_anthropic(mut schema: Value) -> Lowered {
    if has_external_refs(&schema) {
        return unsupported(LowerTarget::Anthropic, schema, "", "external `$ref`s are not supported");
    }
    if has_recursive_refs(&schema) {
        return unsupported(LowerTarget::Anthropic, schema, "", "recursive schemas are not supported");
    }
    let mut notes = Notes::default();
    strip_metadata(&mut schema, &mut notes);
    let (mut optional, mut unions) = (0usize, 0usize);
    walk_mut(&mut schema, &mut |obj, path| {
        for keyword in UNSUPPORTED {
            drop_keyword(obj, path, keyword, "not supported by Anthropic", &mut notes);
        }
        if obj.get("minItems").and_then(Value::as_u64).is_some_and(|n| n > 1) {
            drop_keyword(obj, path, "minItems", "only 0 or 1 is supported by Anthropic", &mut notes);
        }
        one_of_to_any_of(obj, path, &mut notes);
        check_format(obj, path, COMMON_FORMATS, &mut notes);
        if let Some(Value::String(pattern)) = obj.get("pattern")
            && uses_backreference_or_lookaround(pattern)
        {
            drop_keyword(obj, path, "pattern", "backreferences and lookaround are not supported", &mut notes);
        }
        if let Some(Value::Array(values)) = obj.get("enum")
            && values.iter().any(|v| v.is_object() || v.is_array())
        {
            obj.remove("enum");
            notes.add(
                &format!("{path}/enum"),
                NoteKind::Dropped,
                "`enum` dropped (only strings, numbers, booleans and null are supported)",
            );
        }
        if let Some(Value::Array(all_of)) = obj.get("allOf")
            && all_of.iter().any(|s| s.get("$ref").is_some())
        {
            obj.remove("allOf");
            notes.add(
                &format!("{path}/allOf"),
                NoteKind::Dropped,
                "`allOf` dropped (it may not contain `$ref` for Anthropic)",
            );
        }
        if obj.get("anyOf").is_some() || obj.get("type").and_then(Value::as_array).is_some_and(|t| t.len() > 1) {
            unions += 1;
        }
        if is_object_schema(obj) {
            close_object(obj, path, &mut notes);
            let names = obj.get("properties").and_then(Value::as_object).map_or(0, |p| p.len());
            let required = obj.get("required").and_then(Value::as_array).map_or(0, Vec::len);
            optional += names.saturating_sub(required);
        }
    });
    if optional > MAX_OPTIONAL {
        notes.add(
            "",
            NoteKind::Limit,
            format!("{optional} optional properties in all; Anthropic allows {MAX_OPTIONAL}"),
        );
    }
    if unions > MAX_UNION_TYPED {
        notes.add(
            "",
            NoteKind::Limit,
            format!("{unions} union-typed schemas in all; Anthropic allows {MAX_UNION_TYPED}"),
        );
    }
    notes.0.sort_by(|a, b| a.path.cmp(&b.path));
    Lowered { target: LowerTarget::Anthropic, schema, notes: notes.0, native: true }
}

/// `\1`-style backreferences, `\k<name>`, and `(?=`, `(?!`, `(?<=`, `(?<!`.
fn uses_backreference_or_lookaround(pattern: &str) -> bool {
    let bytes = pattern.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if i + 1 < bytes.len() => {
                let next = bytes[i + 1];
                if next.is_ascii_digit() && next != b'0' || next == b'k' {
                    return true;
                }
                i += 2;
                continue;
            }
            b'(' if pattern[i..].starts_with("(?=")
                || pattern[i..].starts_with("(?!")
                || pattern[i..].starts_with("(?<=")
                || pattern[i..].starts_with("(?<!") =>
            {
                return true;
            }
            _ => {}
        }
        i += 1;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_backreferences_and_lookaround_only() {
        for p in [r"(a)\1", r"(?=x)y", r"(?<!a)b", r"(?<n>a)\k<n>"] {
            assert!(uses_backreference_or_lookaround(p), "{p}");
        }
        for p in [r"^[a-z]+$", r"\d{3}-\d{4}", r"(?:ab)+", r"\\1", r"a\0"] {
            assert!(!uses_backreference_or_lookaround(p), "{p}");
        }
    }
}
