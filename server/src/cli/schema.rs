//! `conclave schema`: the conclave file format's own schema, the schema references
//! available, and a preview of how an output schema is lowered for a provider.

use clap::Subcommand;
use serde_json::Value;
use std::path::PathBuf;

use super::{Workspace, exit};
use conclave_schema::{check_schema, lower};

/// Subcommands of `conclave schema`.
#[derive(Debug, Subcommand)]
pub enum SchemaCommand {
    /// Print the JSON Schema of the conclave file format.
    Format,
    /// List the schema references that resolve, and where from.
    List,
    /// Show how an output schema is lowered for a provider: the schema it receives on
    /// standard output, every change on standard error.
    Lower {
        /// A schema file, or a dotted reference such as `review.findings.v1`.
        schema: String,
        /// The provider: anthropic, openai, ollama or claude-code.
        #[arg(long)]
        provider: String,
        /// Exit 2 when lowering loses meaning (what `"compatibility": "strict"` refuses).
        #[arg(long)]
        strict: bool,
    },
}

/// Runs the subcommand; returns the exit code.
pub fn run(cmd: SchemaCommand, workspace: &Workspace) -> u8 {
    match cmd {
        SchemaCommand::Format => {
            print!("{}", conclave_catalog::format::format_schema_text());
            exit::OK
        }
        SchemaCommand::List => {
            for (reference, source) in workspace.schemas.list() {
                println!("{reference:<32} {source}");
            }
            exit::OK
        }
        SchemaCommand::Lower { schema, provider, strict } => match lower_command(&schema, &provider, strict, workspace)
        {
            Ok(code) => code,
            Err(message) => {
                eprintln!("error: {message}");
                exit::CONFIG
            }
        },
    }
}

fn lower_command(given: &str, provider: &str, strict: bool, workspace: &Workspace) -> Result<u8, String> {
    let Some(target) = workspace.native_schema(provider) else {
        let lowered: Vec<String> = workspace
            .providers
            .known_names()
            .into_iter()
            .filter(|name| workspace.native_schema(name).is_some())
            .collect();
        return Err(format!(
            "no schema lowering for provider `{provider}`; use one of: {} (providers without native structured output get the prompt contract)",
            lowered.join(", ")
        ));
    };
    let path = PathBuf::from(given);
    let schema: Value = if path.is_file() {
        let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {given}: {e}"))?;
        serde_json::from_str(&text).map_err(|e| format!("{given} is not valid JSON: {e}"))?
    } else {
        workspace
            .schemas
            .resolve(given)
            .map_err(|e| format!("{given} is neither a file nor a resolvable reference: {e}"))?
            .schema
    };
    let problems = check_schema(&schema);
    if !problems.is_empty() {
        let list: Vec<String> = problems
            .iter()
            .map(|p| format!("  {}: {}", if p.pointer.is_empty() { "/" } else { &p.pointer }, p.message))
            .collect();
        return Err(format!("{given} is not a valid output schema:\n{}", list.join("\n")));
    }
    let lowered = lower(&schema, target).map_err(|e| e.to_string())?;
    println!("{}", serde_json::to_string_pretty(&lowered.schema).unwrap_or_default());
    if !lowered.native {
        eprintln!("note: {provider} cannot take this schema natively; agents use the prompt contract");
    }
    for note in &lowered.notes {
        eprintln!("{}[{}]: {note}", if note.kind.loses_meaning() { "warning" } else { "note" }, note.kind.as_str());
    }
    let losses = lowered.meaning_losses().count();
    eprintln!("{} change(s), {losses} losing meaning for {provider}", lowered.notes.len());
    Ok(if strict && losses > 0 { exit::CONFIG } else { exit::OK })
}
