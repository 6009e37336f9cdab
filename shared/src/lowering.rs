//! Lowering notes: what changed when an output schema was adapted to a provider's
//! structured-output dialect. The server produces them; the CLI, reports and the
//! editor's lowering preview show them.

use serde::{Deserialize, Serialize};
use std::fmt;

/// What kind of change a note reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum NoteKind {
    /// A keyword was removed (its meaning is kept in `description` where possible).
    Dropped,
    /// A keyword was replaced by a near equivalent (`oneOf` by `anyOf`).
    Rewritten,
    /// The lowered schema is stricter than the original; answers still satisfy it.
    Tightened,
    /// The schema exceeds a documented provider limit.
    Limit,
    /// Kept, but the provider does not enforce it; local validation does.
    Unenforced,
    /// The provider cannot take this schema natively; the prompt contract is used.
    Unsupported,
    /// Document metadata (`$schema`, `$id`) removed; no effect on answers.
    Metadata,
}

impl NoteKind {
    /// True when the change loses part of the author's intent at the provider, so
    /// `strict` compatibility refuses it.
    pub fn loses_meaning(self) -> bool {
        !matches!(self, NoteKind::Tightened | NoteKind::Metadata)
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            NoteKind::Dropped => "dropped",
            NoteKind::Rewritten => "rewritten",
            NoteKind::Tightened => "tightened",
            NoteKind::Limit => "limit",
            NoteKind::Unenforced => "unenforced",
            NoteKind::Unsupported => "unsupported",
            NoteKind::Metadata => "metadata",
        }
    }
}

/// One change made while lowering.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LoweringNote {
    /// JSON pointer into the original schema.
    pub path: String,
    /// Kind of change.
    pub kind: NoteKind,
    /// What changed and why.
    pub message: String,
}

impl fmt::Display for LoweringNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = if self.path.is_empty() { "/" } else { &self.path };
        write!(f, "{path}: {}", self.message)
    }
}
