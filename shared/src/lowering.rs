//! Schema dialects and lowering notes: the structured-output dialect of each provider
//! family, and what changed when an output schema was adapted to one. The server
//! produces them; the CLI, reports and the editor's lowering preview show them.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A provider family's schema dialect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum LowerTarget {
    /// OpenAI strict structured outputs (Chat Completions and Responses).
    OpenAi,
    /// Anthropic structured outputs.
    Anthropic,
    /// Ollama's `format`, turned into a grammar by llama.cpp.
    Ollama,
    /// The Claude Code CLI's `--json-schema`, which validates the full schema itself.
    ClaudeCode,
    /// The embedded local model's constrained decoding (llguidance), with bounds added.
    Local,
}

impl LowerTarget {
    /// The target's display name.
    pub fn as_str(self) -> &'static str {
        match self {
            LowerTarget::OpenAi => "openai",
            LowerTarget::Anthropic => "anthropic",
            LowerTarget::Ollama => "ollama",
            LowerTarget::ClaudeCode => "claude-code",
            LowerTarget::Local => "local",
        }
    }

    /// The dialect of a built-in provider's native structured output, by provider name.
    pub fn for_provider(provider: &str) -> Option<LowerTarget> {
        match provider {
            "openai" => Some(LowerTarget::OpenAi),
            "anthropic" => Some(LowerTarget::Anthropic),
            "ollama" => Some(LowerTarget::Ollama),
            "claude-code" => Some(LowerTarget::ClaudeCode),
            "local" => Some(LowerTarget::Local),
            _ => None,
        }
    }
}

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
