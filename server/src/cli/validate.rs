//! `conclave validate [PATHS]`: every problem in every file (the MCP servers a file
//! declares asked for their tools, `validate_mcp.rs`), then a summary line.

use clap::Args;
use std::path::PathBuf;

use super::{Workspace, exit};
use conclave_catalog::validate_paths;

/// Arguments of `conclave validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Conclave files, schema files or directories (default: conclaves/).
    pub paths: Vec<PathBuf>,
    /// Print diagnostics as JSON lines instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Runs validation and prints the report; exit 2 when any file has an error.
pub fn run(args: ValidateArgs, workspace: &Workspace) -> u8 {
    let paths = if args.paths.is_empty() { vec![workspace.catalog_dir.clone()] } else { args.paths };
    let mut report = validate_paths(&paths, workspace.catalog_context());
    super::validate_mcp::check_servers(&mut report, workspace);
    for d in report.diagnostics() {
        if args.json {
            println!("{}", serde_json::to_string(d).unwrap_or_default());
        } else {
            println!("{d}\n");
        }
    }
    let (errors, warnings, files) = (report.error_count(), report.warning_count(), report.files.len());
    if !args.json {
        let clean = report.files.iter().filter(|(_, d)| d.iter().all(|d| !d.is_error())).count();
        println!("{files} file(s) checked: {clean} ok, {errors} error(s), {warnings} warning(s)");
    }
    if errors > 0 { exit::CONFIG } else { exit::OK }
}
