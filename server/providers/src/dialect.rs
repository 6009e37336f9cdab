//! The structured-output dialects of the built-in providers: which lowering each one
//! needs and the part of its request that carries the schema. The providers build
//! their requests with [`Dialect::schema_part`], and the editor's side-by-side
//! preview shows the same value, so what an author sees is what a vendor receives.

use conclave_core::AgentRequest;
use conclave_shared::LowerTarget;
use serde_json::{Value, json};

/// One way a provider receives an output schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// Anthropic's Messages API: `output_config.format`.
    Anthropic,
    /// OpenAI's Chat Completions: `response_format` with a strict JSON schema.
    OpenAiChat,
    /// OpenAI's Responses API: `text.format` with a strict JSON schema.
    OpenAiResponses,
    /// Ollama's `format`, turned into a grammar by llama.cpp.
    Ollama,
    /// The Claude Code CLI's `--json-schema` argument.
    ClaudeCode,
    /// The embedded local model: constrained decoding with llguidance.
    Local,
}

impl Dialect {
    /// Every dialect, in the order the editor shows them.
    pub const ALL: [Dialect; 6] = [
        Dialect::Anthropic,
        Dialect::OpenAiChat,
        Dialect::OpenAiResponses,
        Dialect::Ollama,
        Dialect::ClaudeCode,
        Dialect::Local,
    ];

    /// The dialect's name on the wire and in the editor.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Anthropic => "anthropic",
            Dialect::OpenAiChat => "openai-chat",
            Dialect::OpenAiResponses => "openai-responses",
            Dialect::Ollama => "ollama",
            Dialect::ClaudeCode => "claude-code",
            Dialect::Local => "local",
        }
    }

    /// The built-in provider that speaks it.
    pub fn provider(self) -> &'static str {
        match self {
            Dialect::Anthropic => "anthropic",
            Dialect::OpenAiChat | Dialect::OpenAiResponses => "openai",
            Dialect::Ollama => "ollama",
            Dialect::ClaudeCode => "claude-code",
            Dialect::Local => "local",
        }
    }

    /// The lowering its schema goes through.
    pub fn target(self) -> LowerTarget {
        match self {
            Dialect::Anthropic => LowerTarget::Anthropic,
            Dialect::OpenAiChat | Dialect::OpenAiResponses => LowerTarget::OpenAi,
            Dialect::Ollama => LowerTarget::Ollama,
            Dialect::ClaudeCode => LowerTarget::ClaudeCode,
            Dialect::Local => LowerTarget::Local,
        }
    }

    /// The part of a request that carries the (lowered) `schema`, named `name`: the
    /// top-level members of an HTTP body, the CLI's arguments (`argv`), or the local
    /// model's decoding constraint (`constraint`).
    pub fn schema_part(self, name: &str, schema: &Value) -> Value {
        match self {
            Dialect::Anthropic => json!({"output_config": {"format": {"type": "json_schema", "schema": schema}}}),
            Dialect::OpenAiChat => json!({"response_format": {
                "type": "json_schema",
                "json_schema": {"name": schema_name(name), "schema": schema, "strict": true}
            }}),
            Dialect::OpenAiResponses => json!({"text": {"format": {
                "type": "json_schema", "name": schema_name(name), "schema": schema, "strict": true
            }}}),
            Dialect::Ollama => json!({"format": schema}),
            Dialect::ClaudeCode => json!({"argv": ["--json-schema", schema.to_string()]}),
            Dialect::Local => json!({"constraint": {"llguidance_json_schema": schema}}),
        }
    }

    /// Adds the schema part of `request` (when it has an output schema) to an HTTP body.
    pub fn add_schema(self, body: &mut Value, request: &AgentRequest) {
        let (Some(spec), Some(body)) = (&request.output_schema, body.as_object_mut()) else { return };
        if let Value::Object(part) = self.schema_part(&spec.name, &spec.schema) {
            body.extend(part);
        }
    }
}

/// A schema name OpenAI accepts: letters, digits, `_` and `-`, at most 64.
fn schema_name(name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
        .take(64)
        .collect();
    if clean.is_empty() { "output".into() } else { clean }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_names_are_cleaned_and_bounded() {
        assert_eq!(schema_name("review.findings.v1"), "review_findings_v1");
        assert_eq!(schema_name(""), "output");
        assert_eq!(schema_name(&"x".repeat(100)).len(), 64);
    }

    #[test]
    fn every_dialect_names_a_known_provider_and_target() {
        for dialect in Dialect::ALL {
            assert_eq!(LowerTarget::for_provider(dialect.provider()), Some(dialect.target()), "{}", dialect.name());
        }
    }
}
