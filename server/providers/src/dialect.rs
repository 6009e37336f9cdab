//! The structured-output dialects of the built-in providers: which lowering each one
//! needs and the part of its request that carries the schema. This is the one place
//! that maps a provider to its lowering target: each provider's `capabilities()` and
//! the server's preview read it. The providers build
//! their requests with [`Dialect::schema_part`], and the editor's side-by-side
//! preview shows the same value, so what an author sees is what a vendor receives.

use conclave_core::AgentRequest;
use conclave_shared::{LowerTarget, OutputDialect};
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
            Dialect::OpenAiChat | Dialect::OpenAiResponses => self.openai_part(OutputDialect::JsonSchema, name, schema),
            Dialect::Ollama => json!({"format": schema}),
            Dialect::ClaudeCode => json!({"argv": ["--json-schema", schema.to_string()]}),
            Dialect::Local => json!({"constraint": {"llguidance_json_schema": schema}}),
        }
    }

    /// For the OpenAI APIs: the part of a request carrying `schema` in an
    /// OpenAI-compatible server's `dialect` (`response_format` for Chat Completions,
    /// `text.format` for Responses). Empty for `prompt`, whose contract is in the
    /// system prompt.
    pub fn openai_part(self, dialect: OutputDialect, name: &str, schema: &Value) -> Value {
        let format = match dialect {
            OutputDialect::JsonSchema if self == Dialect::OpenAiResponses => {
                json!({"type": "json_schema", "name": schema_name(name), "schema": schema, "strict": true})
            }
            OutputDialect::JsonSchema => {
                json!({"type": "json_schema", "json_schema": {"name": schema_name(name), "schema": schema, "strict": true}})
            }
            OutputDialect::JsonObjectSchema => json!({"type": "json_object", "schema": schema}),
            OutputDialect::JsonObject => json!({"type": "json_object"}),
            OutputDialect::Prompt => return json!({}),
        };
        match self {
            Dialect::OpenAiResponses => json!({"text": {"format": format}}),
            _ => json!({"response_format": format}),
        }
    }

    /// Adds the schema part of `request` (when it has an output schema) to an HTTP body,
    /// in the request's dialect for the OpenAI APIs.
    pub fn add_schema(self, body: &mut Value, request: &AgentRequest) {
        let (Some(spec), Some(body)) = (&request.output_schema, body.as_object_mut()) else { return };
        let part = match self {
            Dialect::OpenAiChat | Dialect::OpenAiResponses => {
                self.openai_part(request.dialect.unwrap_or(OutputDialect::JsonSchema), &spec.name, &spec.schema)
            }
            _ => self.schema_part(&spec.name, &spec.schema),
        };
        if let Value::Object(part) = part {
            body.extend(part);
        }
    }
}

/// The lowering a built-in provider's native structured output takes, by the
/// provider's name: the target of its dialects. `None` for a name that is not a
/// built-in provider.
pub fn native_target(provider: &str) -> Option<LowerTarget> {
    Dialect::ALL.iter().find(|d| d.provider() == provider).map(|d| d.target())
}

/// The lowering of a schema an OpenAI-compatible server takes inside `json_object`
/// (the `json_object_schema` dialect, llama-cpp-python's): the server turns it into a
/// llama.cpp grammar, as Ollama does with its `format`.
pub const OBJECT_SCHEMA_TARGET: LowerTarget = LowerTarget::Ollama;

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
    fn each_openai_compatible_dialect_has_its_own_wire_form() {
        let schema = json!({"type": "object"});
        let chat = |d| Dialect::OpenAiChat.openai_part(d, "review.v1", &schema);
        assert_eq!(
            chat(OutputDialect::JsonSchema),
            json!({"response_format": {"type": "json_schema", "json_schema": {"name": "review_v1", "schema": schema, "strict": true}}})
        );
        assert_eq!(
            chat(OutputDialect::JsonObjectSchema),
            json!({"response_format": {"type": "json_object", "schema": schema}})
        );
        assert_eq!(chat(OutputDialect::JsonObject), json!({"response_format": {"type": "json_object"}}));
        assert_eq!(chat(OutputDialect::Prompt), json!({}));
        assert_eq!(
            Dialect::OpenAiResponses.openai_part(OutputDialect::JsonObject, "x", &schema),
            json!({"text": {"format": {"type": "json_object"}}})
        );
        assert_eq!(Dialect::OpenAiChat.schema_part("review.v1", &schema), chat(OutputDialect::JsonSchema));
    }
}
