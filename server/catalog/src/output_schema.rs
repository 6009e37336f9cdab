//! The output schema of an agent or a command node: inline or by reference, resolved
//! once and checked, and whether it is findings-shaped.

use conclave_schema::{SchemaCatalog, check_schema, findings_field};
use conclave_shared::{Diagnostic, NodeKind};
use serde_json::Value;

use super::pointer;
use super::views::NodeView;

/// An agent's output schema, resolved once while checking.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentOutput {
    /// The schema (inline, or the document its reference names).
    pub schema: Value,
    /// The reference it came from, if any.
    pub reference: Option<String>,
    /// The root property holding findings, when the output is findings-shaped.
    pub findings_field: Option<String>,
}

/// Checks an agent's or a command's output schema (`config` is its `agent` or
/// `command` object), resolving its reference once; the schema when it
/// is usable.
pub(crate) fn check_output_schema(
    node: &NodeView,
    config: &Value,
    base: &str,
    schemas: &SchemaCatalog,
    out: &mut Vec<Diagnostic>,
) -> Option<AgentOutput> {
    let inline = config.get("output_schema");
    let reference = config.get("output_schema_ref").and_then(Value::as_str);
    if inline.is_some() && reference.is_some() {
        out.push(
            Diagnostic::error(
                "schema-conflict",
                node.subject(),
                base,
                "both `output_schema` and `output_schema_ref` are set",
            )
            .with_help("keep one: remove `output_schema_ref` to use the inline schema, or remove `output_schema`"),
        );
    }
    let errors_before = out.len();
    let mut resolved = None;
    if let Some(schema) = inline {
        let at = pointer(base, "output_schema");
        resolved = Some(AgentOutput { schema: schema.clone(), reference: None, findings_field: None });
        for problem in check_schema(schema) {
            out.push(
                Diagnostic::error(
                    "invalid-schema",
                    node.subject(),
                    format!("{at}{}", problem.pointer),
                    format!("output_schema is not a valid JSON Schema: {}", problem.message),
                )
                .with_help("fix the schema, or rebuild it with the field builder"),
            );
        }
    }
    if let Some(reference) = reference {
        let at = pointer(base, "output_schema_ref");
        match schemas.resolve(reference) {
            Err(err) => out.push(
                Diagnostic::error("unresolved-schema-ref", node.subject(), at, err.to_string())
                    .with_help("create the schema file, or fix the reference"),
            ),
            Ok(found) => {
                for problem in check_schema(&found.schema) {
                    out.push(Diagnostic::error(
                        "invalid-schema",
                        node.subject(),
                        at.clone(),
                        format!(
                            "schema `{reference}` ({}) is not a valid JSON Schema at {}: {}",
                            found.source,
                            if problem.pointer.is_empty() { "/" } else { &problem.pointer },
                            problem.message
                        ),
                    ));
                }
                resolved = Some(AgentOutput {
                    schema: found.schema,
                    reference: Some(reference.to_string()),
                    findings_field: None,
                });
            }
        }
    }
    if out.len() > errors_before || !matches!(node.kind, Some(NodeKind::Agent | NodeKind::Command)) {
        return None;
    }
    resolved.map(|output| AgentOutput { findings_field: findings_field(&output.schema), ..output })
}
