//! The catalog tools: `list_conclaves` (the API's listing) and `validate_conclave`
//! (the API's one check of a conclave's text, the checks `conclave validate` makes).

use serde_json::Value;

use super::answers::{ConclaveLine, ConclaveList, MAX_STRUCTURED_CHARS, ValidationAnswer, json_chars};
use super::args::ValidateArgs;
use super::context::{McpContext, Refusal, Transport, message};
use crate::api::blocking::blocking;
use crate::api::checking::validation;

/// Runs `list_conclaves`.
pub async fn list_conclaves(context: &McpContext) -> Result<ConclaveList, Refusal> {
    let (listing, workspace) = (context.state.listing.clone(), context.state.workspace.clone());
    let summaries = blocking(move || listing.list(&workspace)).await.map_err(message)?;
    let mut conclaves = Vec::new();
    let mut used = 0;
    for summary in summaries {
        let line = ConclaveLine {
            uri: format!("conclave://conclaves/{}", summary.id),
            id: summary.id,
            name: summary.name,
            description: summary.description,
            nodes: summary.nodes,
            errors: summary.errors,
        };
        used += json_chars(&line);
        if used > MAX_STRUCTURED_CHARS - 2_000 {
            break;
        }
        conclaves.push(line);
    }
    Ok(ConclaveList { conclaves })
}

/// Runs `validate_conclave` on an unsaved document. Over HTTP, command nodes may run
/// only the programs the server allows, as a save through the API would require.
pub async fn validate_conclave(context: &McpContext, args: ValidateArgs) -> Result<ValidationAnswer, Refusal> {
    let text = match args.conclave {
        Value::String(text) => text,
        document @ Value::Object(_) => document.to_string(),
        _ => return Err("give the conclave document: a JSON object in the conclave file format, or its text".into()),
    };
    let id = serde_json::from_str::<Value>(&text)
        .ok()
        .and_then(|v| v.get("id").and_then(Value::as_str).map(str::to_string))
        .unwrap_or_else(|| "conclave".into());
    let mut catalog = context.state.workspace.catalog_context().clone();
    if matches!(context.transport, Transport::Http) {
        catalog.programs = Some(context.state.security.allowed_programs.clone());
    }
    let checked =
        blocking(move || validation(&catalog, &format!("{id}.conclave.json"), &text)).await.map_err(message)?;
    let mut diagnostics = Vec::new();
    let mut used = 0;
    for d in &checked.diagnostics {
        let value = serde_json::to_value(d).unwrap_or(Value::Null);
        used += json_chars(&value);
        if used > MAX_STRUCTURED_CHARS - 4_000 {
            break;
        }
        diagnostics.push(value);
    }
    Ok(ValidationAnswer {
        valid: checked.errors == 0,
        errors: checked.errors,
        warnings: checked.warnings,
        diagnostics,
        findings_agents: checked.findings_agents,
    })
}
