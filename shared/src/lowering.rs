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

/// How an OpenAI-compatible server receives an output schema. Servers differ:
/// OpenAI, vLLM and llama.cpp's `llama-server` take a nested strict `json_schema`;
/// llama-cpp-python takes the schema inside `json_object`; some take only
/// `json_object`; some take nothing. Local validation against the author's schema is
/// authoritative whichever is used. Dialects order as `auto` walks them: a later one
/// is a step down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum OutputDialect {
    /// `response_format: {"type": "json_schema", "json_schema": {…, "strict": true}}`.
    JsonSchema,
    /// `response_format: {"type": "json_object", "schema": …}`.
    JsonObjectSchema,
    /// `response_format: {"type": "json_object"}`, with the contract in the prompt.
    JsonObject,
    /// No `response_format`: the contract in the prompt only.
    Prompt,
}

impl OutputDialect {
    /// Every dialect, in the order `auto` tries them.
    pub const CHAIN: [OutputDialect; 4] =
        [OutputDialect::JsonSchema, OutputDialect::JsonObjectSchema, OutputDialect::JsonObject, OutputDialect::Prompt];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            OutputDialect::JsonSchema => "json_schema",
            OutputDialect::JsonObjectSchema => "json_object_schema",
            OutputDialect::JsonObject => "json_object",
            OutputDialect::Prompt => "prompt",
        }
    }

    /// The dialect named `name`.
    pub fn parse(name: &str) -> Option<OutputDialect> {
        OutputDialect::CHAIN.into_iter().find(|d| d.as_str() == name)
    }

    /// The dialect `auto` tries after a server rejects this one.
    pub fn next(self) -> Option<OutputDialect> {
        let at = OutputDialect::CHAIN.iter().position(|d| *d == self)?;
        OutputDialect::CHAIN.get(at + 1).copied()
    }

    /// Whether the server receives the schema (and so constrains the answer to it).
    pub fn sends_schema(self) -> bool {
        matches!(self, OutputDialect::JsonSchema | OutputDialect::JsonObjectSchema)
    }

    /// Whether the schema is also rendered into the prompt as a contract.
    pub fn contract_in_prompt(self) -> bool {
        !self.sends_schema()
    }
}

impl fmt::Display for OutputDialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which dialect an agent (or a provider, for all its agents) uses: `auto`, which
/// starts with `json_schema` and steps down the chain when a server rejects one, or
/// one fixed dialect.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum DialectSetting {
    /// Start with `json_schema`; step down once per recognisable rejection.
    #[default]
    Auto,
    /// Always `json_schema`.
    JsonSchema,
    /// Always `json_object_schema`.
    JsonObjectSchema,
    /// Always `json_object`.
    JsonObject,
    /// Always `prompt`.
    Prompt,
}

impl DialectSetting {
    /// Every setting, in the order the editor lists them.
    pub const ALL: [DialectSetting; 5] = [
        DialectSetting::Auto,
        DialectSetting::JsonSchema,
        DialectSetting::JsonObjectSchema,
        DialectSetting::JsonObject,
        DialectSetting::Prompt,
    ];

    /// The fixed dialect, or `None` for `auto`.
    pub fn fixed(self) -> Option<OutputDialect> {
        match self {
            DialectSetting::Auto => None,
            DialectSetting::JsonSchema => Some(OutputDialect::JsonSchema),
            DialectSetting::JsonObjectSchema => Some(OutputDialect::JsonObjectSchema),
            DialectSetting::JsonObject => Some(OutputDialect::JsonObject),
            DialectSetting::Prompt => Some(OutputDialect::Prompt),
        }
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        self.fixed().map_or("auto", OutputDialect::as_str)
    }

    /// The setting named `name`.
    pub fn parse(name: &str) -> Option<DialectSetting> {
        DialectSetting::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dialect_chain_steps_down_to_the_prompt_and_stops() {
        let mut walked = vec![OutputDialect::JsonSchema];
        while let Some(next) = walked.last().and_then(|d| d.next()) {
            walked.push(next);
        }
        assert_eq!(walked, OutputDialect::CHAIN);
        for setting in DialectSetting::ALL {
            assert_eq!(DialectSetting::parse(setting.as_str()), Some(setting));
            assert_eq!(serde_json::to_value(setting).expect("json"), setting.as_str());
        }
        assert!(OutputDialect::CHAIN.is_sorted(), "the order is the chain's");
        for dialect in OutputDialect::CHAIN {
            assert_eq!(OutputDialect::parse(dialect.as_str()), Some(dialect));
            assert_eq!(dialect.contract_in_prompt(), !dialect.sends_schema());
        }
        assert_eq!(DialectSetting::parse("json-schema"), None);
    }
}
