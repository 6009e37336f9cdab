//! Lowering for Ollama: the schema is passed through unchanged (llama.cpp turns it
//! into a grammar), and every keyword that grammar cannot enforce is reported, since
//! only local validation will check it.

use serde_json::Value;

use super::rewrite::{Lowered, Notes, has_external_refs, unsupported};
use crate::walk::walk_mut;
use conclave_shared::{LowerTarget, NoteKind};

/// Keywords llama.cpp's schema-to-grammar conversion ignores.
const UNENFORCED: &[&str] = &[
    "not",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "uniqueItems",
    "multipleOf",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "contains",
    "minContains",
    "maxContains",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "patternProperties",
];

/// Formats the grammar conversion knows.
const FORMATS: &[&str] = &["date", "time", "date-time", "uuid"];

pub(super) fn lower_for_ollama(mut schema: Value) -> Lowered {
    if has_external_refs(&schema) {
        return unsupported(LowerTarget::Ollama, schema, "", "external `$ref`s are not supported");
    }
    let mut notes = Notes::default();
    walk_mut(&mut schema, &mut |obj, path| {
        for keyword in UNENFORCED {
            if obj.contains_key(*keyword) {
                notes.add(
                    &format!("{path}/{keyword}"),
                    NoteKind::Unenforced,
                    format!("`{keyword}` is not enforced by Ollama's grammar; Conclave's validation checks it"),
                );
            }
        }
        if let Some(Value::String(format)) = obj.get("format")
            && !FORMATS.contains(&format.as_str())
        {
            notes.add(
                &format!("{path}/format"),
                NoteKind::Unenforced,
                format!("format `{format}` is not enforced by Ollama's grammar; Conclave's validation checks it"),
            );
        }
        let number = matches!(obj.get("type"), Some(Value::String(t)) if t == "number");
        for bound in ["minimum", "maximum"] {
            if number && obj.contains_key(bound) {
                notes.add(
                    &format!("{path}/{bound}"),
                    NoteKind::Unenforced,
                    format!("`{bound}` on a number is not enforced by Ollama's grammar (only on integers)"),
                );
            }
        }
    });
    notes.0.sort_by(|a, b| a.path.cmp(&b.path));
    Lowered { target: LowerTarget::Ollama, schema, notes: notes.0, native: true }
}
