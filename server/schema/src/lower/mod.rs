//! Lowering an output schema to what one provider's structured-output mode accepts,
//! reporting every change as a note with its JSON pointer and reason.
//!
//! Lowering never weakens what Conclave checks: answers are always validated against
//! the author's original schema. Notes that lose meaning (a dropped bound, a rewritten
//! `oneOf`) make an agent in `strict` compatibility mode refuse to run.

mod anthropic;
mod claude_code;
mod local;
mod ollama;
mod openai;
mod rewrite;

use serde_json::Value;

pub use conclave_shared::{LowerTarget, LoweringNote, NoteKind};

pub use openai::remove_lowering_nulls;
pub use rewrite::Lowered;

use super::normalize::{NormalizeError, normalize};

/// Normalizes `schema` and lowers it for `target`.
pub fn lower(schema: &Value, target: LowerTarget) -> Result<Lowered, NormalizeError> {
    let normalized = normalize(schema)?;
    Ok(match target {
        LowerTarget::OpenAi => openai::lower_for_openai(normalized),
        LowerTarget::Anthropic => anthropic::lower_for_anthropic(normalized),
        LowerTarget::Ollama => ollama::lower_for_ollama(normalized),
        LowerTarget::ClaudeCode => claude_code::lower_for_claude_code(normalized),
        LowerTarget::Local => local::lower_for_local(normalized),
    })
}
