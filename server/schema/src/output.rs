//! The output contract of one agent: the author's schema compiled for local
//! validation, the lowered copy sent through the provider's native structured output
//! (or nothing, when the prompt contract carries the schema), and every note on what
//! lowering changed. Answers are always checked against the author's schema.

use conclave_shared::{LowerTarget, LoweringNote};
use serde_json::Value;
use std::sync::Arc;

use crate::lower::{lower, remove_lowering_nulls};
use crate::normalize::normalize;

/// How one agent's answers are constrained and checked.
#[derive(Debug)]
pub struct OutputContract {
    /// The schema as the author wrote it (resolved from its reference, and narrowed by
    /// the run's output policy); answers are validated against this.
    pub original: Arc<Value>,
    /// `original`, compiled once for the run.
    pub validator: Arc<jsonschema::Validator>,
    /// A name for the schema (OpenAI requires one).
    pub name: String,
    /// The lowered schema for the provider's native structured output, if used.
    pub native: Option<Arc<Value>>,
    /// Whether nulls the OpenAI lowering forced onto optional properties are removed.
    pub restore_nulls: bool,
    /// The dialect (`openai`, `anthropic`, ...) or `prompt` for the prompt contract.
    pub target: String,
    /// What lowering (and the output policy before it) changed.
    pub notes: Vec<LoweringNote>,
    /// The root property holding findings, when the output is findings-shaped.
    pub findings_field: Option<String>,
}

/// What a contract is built for besides the schema.
#[derive(Debug, Clone, Default)]
pub struct ContractSpec {
    /// The schema's name: its reference, or `output_` and a hash of the schema.
    pub name: String,
    /// The provider, for messages.
    pub provider: String,
    /// The provider's native dialect, when the agent uses native structured output.
    pub native: Option<LowerTarget>,
    /// Whether the agent refuses lowerings that lose meaning (`"compatibility": "strict"`).
    pub strict: bool,
    /// The root property holding findings, if any.
    pub findings_field: Option<String>,
    /// Changes made to the schema before lowering (by the run's output policy).
    pub shaping_notes: Vec<LoweringNote>,
}

/// Why a contract cannot be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ContractError {
    /// The schema does not compile as JSON Schema.
    #[error("output schema does not compile: {0}")]
    Compile(String),
    /// The schema cannot be normalized or lowered.
    #[error("{0}")]
    Lower(String),
    /// `strict` compatibility, and lowering would lose meaning.
    #[error(
        "strict compatibility: provider `{provider}` cannot express the whole output schema:\n{}\nadapt the schema, or set \"compatibility\": \"lossy\" to accept these changes",
        .losses.join("\n")
    )]
    StrictLoss {
        /// The provider.
        provider: String,
        /// Each note that loses meaning, rendered.
        losses: Vec<String>,
    },
}

/// Builds the contract: lowers `schema` for the native dialect (falling back to the
/// prompt contract when it cannot be sent natively) and compiles the validator.
pub fn output_contract(schema: Value, spec: ContractSpec) -> Result<OutputContract, ContractError> {
    let validator = jsonschema::validator_for(&schema).map_err(|e| ContractError::Compile(e.to_string()))?;
    let (native, target, lowering_notes, restore_nulls) = match spec.native {
        Some(target) => {
            let lowered = lower(&schema, target).map_err(|e| ContractError::Lower(e.to_string()))?;
            let restore = target == LowerTarget::OpenAi && lowered.native;
            let native = lowered.native.then(|| Arc::new(lowered.schema));
            (native, target.as_str().to_string(), lowered.notes, restore)
        }
        None => {
            normalize(&schema).map_err(|e| ContractError::Lower(e.to_string()))?;
            (None, "prompt".to_string(), Vec::new(), false)
        }
    };
    let mut notes = spec.shaping_notes;
    notes.extend(lowering_notes);
    if spec.strict {
        let losses: Vec<String> = notes.iter().filter(|n| n.kind.loses_meaning()).map(|n| format!("  {n}")).collect();
        if !losses.is_empty() {
            return Err(ContractError::StrictLoss { provider: spec.provider, losses });
        }
    }
    let target = if native.is_some() { target } else { "prompt".to_string() };
    Ok(OutputContract {
        original: Arc::new(schema),
        validator: Arc::new(validator),
        name: spec.name,
        native,
        restore_nulls,
        target,
        notes,
        findings_field: spec.findings_field,
    })
}

impl OutputContract {
    /// Undoes what lowering forced onto an answer (the nulls OpenAI's strict mode puts
    /// on optional properties), so it can be checked against the original schema.
    pub fn restore(&self, value: &mut Value) {
        if self.restore_nulls {
            remove_lowering_nulls(value, &self.original);
        }
    }

    /// Every way `value` fails the original schema, as `pointer: message`.
    pub fn violations(&self, value: &Value) -> Vec<String> {
        self.validator
            .iter_errors(value)
            .map(|e| {
                let path = e.instance_path().as_str().to_string();
                format!("{}: {e}", if path.is_empty() { "/" } else { &path })
            })
            .collect()
    }
}
