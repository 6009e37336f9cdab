//! Lowering for the embedded local model: the schema is kept, and every free string,
//! unbounded number and unbounded array gets a bound (noted), so constrained decoding
//! cannot loop inside a string, a number or a list. Answers are still validated against the original.

use serde_json::{Value, json};

use super::rewrite::{Lowered, Notes, has_external_refs, unsupported};
use crate::walk::walk_mut;
use conclave_shared::{LowerTarget, NoteKind};

/// Longest free string the local model may write.
pub const STRING_BOUND: u64 = 200;
/// Most items in an array the local model may write.
pub const ARRAY_BOUND: u64 = 5;
/// Largest magnitude of a number the local model may write, where none is set.
pub const NUMBER_BOUND: i64 = 1_000_000;

pub(super) fn lower_for_local(mut schema: Value) -> Lowered {
    if has_external_refs(&schema) {
        return unsupported(LowerTarget::Local, schema, "", "external `$ref`s are not supported");
    }
    let mut notes = Notes::default();
    walk_mut(&mut schema, &mut |obj, path| {
        let kind = obj.get("type").and_then(Value::as_str).unwrap_or("").to_string();
        let free = !obj.contains_key("enum")
            && !obj.contains_key("const")
            && !obj.contains_key("pattern")
            && !obj.contains_key("format");
        if kind == "string" && free && !obj.contains_key("maxLength") {
            obj.insert("maxLength".into(), json!(STRING_BOUND));
            notes.add(
                path,
                NoteKind::Tightened,
                format!("`maxLength` {STRING_BOUND} added so a small model cannot loop inside the string"),
            );
        }
        if kind == "integer" || kind == "number" {
            for (bound, value, other) in
                [("maximum", NUMBER_BOUND, "exclusiveMaximum"), ("minimum", -NUMBER_BOUND, "exclusiveMinimum")]
            {
                if !obj.contains_key(bound) && !obj.contains_key(other) {
                    obj.insert(bound.into(), json!(value));
                    notes.add(
                        path,
                        NoteKind::Tightened,
                        format!("`{bound}` {value} added so a small model cannot write digits forever"),
                    );
                }
            }
        }
        if kind == "array" && !obj.contains_key("maxItems") {
            obj.insert("maxItems".into(), json!(ARRAY_BOUND));
            notes.add(
                path,
                NoteKind::Tightened,
                format!("`maxItems` {ARRAY_BOUND} added so a small model cannot loop inside the list"),
            );
        }
    });
    notes.0.sort_by(|a, b| a.path.cmp(&b.path));
    Lowered { target: LowerTarget::Local, schema, notes: notes.0, native: true }
}
