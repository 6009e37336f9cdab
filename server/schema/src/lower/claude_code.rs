//! Lowering for the Claude Code CLI's `--json-schema`: the CLI checks the schema with
//! a draft-07 validator before any model call, so the document metadata (`$schema`
//! of draft 2020-12 is refused) goes, and the keywords only newer drafts define are
//! dropped with a note. Local validation against the author's schema still checks
//! everything.

use serde_json::Value;

use super::rewrite::{Lowered, Notes, drop_keyword, strip_metadata};
use crate::walk::walk_mut;
use conclave_shared::LowerTarget;

/// Keywords draft-07 does not define.
const NEWER_THAN_DRAFT_7: &[&str] = &[
    "prefixItems",
    "unevaluatedProperties",
    "unevaluatedItems",
    "dependentRequired",
    "dependentSchemas",
    "minContains",
    "maxContains",
    "$dynamicRef",
    "$dynamicAnchor",
];

pub(super) fn lower_for_claude_code(mut schema: Value) -> Lowered {
    let mut notes = Notes::default();
    strip_metadata(&mut schema, &mut notes);
    walk_mut(&mut schema, &mut |obj, path| {
        for keyword in NEWER_THAN_DRAFT_7 {
            drop_keyword(obj, path, keyword, "the Claude Code CLI validates schemas as draft-07", &mut notes);
        }
    });
    Lowered { target: LowerTarget::ClaudeCode, schema, notes: notes.0, native: true }
}
