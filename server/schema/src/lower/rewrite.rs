//! What every lowering shares: the [`Lowered`] result, the notes a lowering
//! collects, and the rewrites of keywords several dialects need (dropping a keyword
//! into the description, `oneOf` as `anyOf`, closing objects, checking formats,
//! stripping metadata), with the checks for `$ref`s a dialect cannot take.

use serde::Serialize;
use serde_json::{Map, Value};

use conclave_shared::{LowerTarget, LoweringNote, NoteKind};

/// A schema lowered for one target.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Lowered {
    /// The target.
    pub target: LowerTarget,
    /// The schema to send.
    pub schema: Value,
    /// Every change, in schema order.
    pub notes: Vec<LoweringNote>,
    /// False when the schema cannot be sent natively and the prompt contract is used.
    pub native: bool,
}

impl Lowered {
    /// Notes that `strict` compatibility refuses.
    pub fn meaning_losses(&self) -> impl Iterator<Item = &LoweringNote> {
        self.notes.iter().filter(|n| n.kind.loses_meaning())
    }
}

/// Collects notes while a lowering walks the schema.
#[derive(Debug, Default)]
pub(super) struct Notes(pub(super) Vec<LoweringNote>);

impl Notes {
    pub(super) fn add(&mut self, path: &str, kind: NoteKind, message: impl Into<String>) {
        self.0.push(LoweringNote { path: path.to_string(), kind, message: message.into() });
    }
}

/// Constraint keywords whose meaning can be kept as text in `description`.
pub(super) const CONSTRAINTS: &[&str] = &[
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "pattern",
    "format",
];

/// Removes `keyword` from `obj`; constraints are restated in `description` so the
/// model still sees them.
pub(super) fn drop_keyword(obj: &mut Map<String, Value>, path: &str, keyword: &str, reason: &str, notes: &mut Notes) {
    let Some(value) = obj.remove(keyword) else { return };
    let pointer = format!("{path}/{keyword}");
    if CONSTRAINTS.contains(&keyword) {
        let rendered = match &value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let text = format!("{keyword}: {rendered}");
        let description = match obj.get("description").and_then(Value::as_str) {
            Some(d) if !d.is_empty() => format!("{d} ({text})"),
            _ => format!("({text})"),
        };
        obj.insert("description".into(), Value::String(description));
        notes.add(&pointer, NoteKind::Dropped, format!("`{keyword}` dropped ({reason}); restated in `description`"));
    } else {
        notes.add(&pointer, NoteKind::Dropped, format!("`{keyword}` dropped ({reason})"));
    }
}

/// Replaces `oneOf` by `anyOf` (neither target has an exactly-one combinator).
pub(super) fn one_of_to_any_of(obj: &mut Map<String, Value>, path: &str, notes: &mut Notes) {
    if let Some(one_of) = obj.remove("oneOf") {
        obj.insert("anyOf".into(), one_of);
        notes.add(
            &format!("{path}/oneOf"),
            NoteKind::Rewritten,
            "`oneOf` rewritten as `anyOf` (exactly-one is not supported); local validation still enforces exactly one",
        );
    }
}

/// Sets `additionalProperties: false` on an object schema, noting what it replaced.
pub(super) fn close_object(obj: &mut Map<String, Value>, path: &str, notes: &mut Notes) {
    match obj.get("additionalProperties") {
        Some(Value::Bool(false)) => {}
        Some(_) => {
            obj.insert("additionalProperties".into(), Value::Bool(false));
            notes.add(
                &format!("{path}/additionalProperties"),
                NoteKind::Dropped,
                "extra properties are not allowed by this provider; `additionalProperties` set to false",
            );
        }
        None => {
            obj.insert("additionalProperties".into(), Value::Bool(false));
            notes.add(path, NoteKind::Tightened, "`additionalProperties: false` added (required by this provider)");
        }
    }
}

/// Drops `format` values the target does not know.
pub(super) fn check_format(obj: &mut Map<String, Value>, path: &str, allowed: &[&str], notes: &mut Notes) {
    if let Some(Value::String(format)) = obj.get("format")
        && !allowed.contains(&format.as_str())
    {
        let reason = format!("format `{format}` is not supported");
        drop_keyword(obj, path, "format", &reason, notes);
    }
}

/// Removes `$schema` and `$id` from the root: providers want a bare schema.
pub(super) fn strip_metadata(schema: &mut Value, notes: &mut Notes) {
    let Some(obj) = schema.as_object_mut() else { return };
    for key in ["$schema", "$id"] {
        if obj.remove(key).is_some() {
            notes.add(&format!("/{key}"), NoteKind::Metadata, format!("`{key}` removed (document metadata)"));
        }
    }
}

/// The prompt-contract result for a schema a target cannot take natively.
pub(super) fn unsupported(target: LowerTarget, schema: Value, path: &str, why: &str) -> Lowered {
    let mut notes = Notes::default();
    notes.add(path, NoteKind::Unsupported, format!("{why}; the schema is sent as a prompt contract instead"));
    Lowered { target, schema, notes: notes.0, native: false }
}

/// Formats both OpenAI and Anthropic accept.
pub(super) const COMMON_FORMATS: &[&str] =
    &["date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"];

/// Whether a `$ref` graph starting anywhere in `schema` has a cycle.
pub(super) fn has_recursive_refs(schema: &Value) -> bool {
    fn refs_in(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Object(obj) => {
                if let Some(Value::String(r)) = obj.get("$ref") {
                    out.push(r.clone());
                }
                obj.values().for_each(|v| refs_in(v, out));
            }
            Value::Array(items) => items.iter().for_each(|v| refs_in(v, out)),
            _ => {}
        }
    }
    fn visit(root: &Value, reference: &str, stack: &mut Vec<String>) -> bool {
        if stack.iter().any(|r| r == reference) {
            return true;
        }
        let Some(target) = crate::walk::resolve_local(root, reference) else { return false };
        stack.push(reference.to_string());
        let mut inner = Vec::new();
        refs_in(target, &mut inner);
        let cyclic = inner.iter().any(|r| visit(root, r, stack));
        stack.pop();
        cyclic
    }
    let mut all = Vec::new();
    refs_in(schema, &mut all);
    all.iter().any(|r| visit(schema, r, &mut Vec::new()))
}

/// Whether any `$ref` points outside the document.
pub(super) fn has_external_refs(schema: &Value) -> bool {
    match schema {
        Value::Object(obj) => {
            obj.get("$ref").and_then(Value::as_str).is_some_and(|r| !r.starts_with('#'))
                || obj.values().any(has_external_refs)
        }
        Value::Array(items) => items.iter().any(has_external_refs),
        _ => false,
    }
}
