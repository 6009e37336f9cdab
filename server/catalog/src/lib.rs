//! The conclave catalog: finding conclave and schema files, validating them, and
//! loading one for a run as a [`CheckedConclave`], which carries the output schemas
//! validation resolved so nothing downstream resolves or checks them again.
//!
//! **Invariant:** validation never calls a provider; everything it reports is found
//! from the files, the schema search roots and the list of known providers and tools.

pub mod checks;
mod children;
mod context;
pub mod format;
pub mod format_reference;
mod ids;
mod kinds;
pub mod load;
mod mcp_checks;
mod output_schema;
mod sandbox_block;
mod views;

use conclave_schema::check_schema;
use std::path::{Path, PathBuf};

pub use checks::{CatalogContext, Checked, check_conclave_text, check_conclave_value};
pub use conclave_shared::diagnostic::pointer;
pub use conclave_shared::{Diagnostic, Level, Subject};
pub use ids::list_ids;
pub use load::{CheckedConclave, LoadError, check_conclave, check_text, is_valid_id, load_by_id, load_conclave};
pub use output_schema::AgentOutput;
pub use views::did_you_mean;

/// The diagnostics for every file looked at, in the order looked at.
#[derive(Debug, Default)]
pub struct ValidationReport {
    /// Each file with its diagnostics (possibly none).
    pub files: Vec<(String, Vec<Diagnostic>)>,
}

impl ValidationReport {
    /// Every diagnostic, file by file.
    pub fn diagnostics(&self) -> impl Iterator<Item = &Diagnostic> {
        self.files.iter().flat_map(|(_, d)| d)
    }

    /// Number of errors.
    pub fn error_count(&self) -> usize {
        self.diagnostics().filter(|d| d.is_error()).count()
    }

    /// Number of warnings.
    pub fn warning_count(&self) -> usize {
        self.diagnostics().filter(|d| d.severity == Level::Warning).count()
    }
}

/// Validates each path: a conclave file, a schema file, or a directory searched
/// recursively for both.
pub fn validate_paths(paths: &[PathBuf], ctx: &CatalogContext) -> ValidationReport {
    let mut report = ValidationReport::default();
    for path in paths {
        if path.is_dir() {
            let mut files = Vec::new();
            collect_files(path, &mut files);
            files.sort();
            if files.is_empty() {
                report
                    .files
                    .push((display(path), vec![not_found(path, "contains no *.conclave.json or *.schema.json files")]));
            }
            for file in files {
                report.files.push((display(&file), validate_file(&file, ctx)));
            }
        } else if path.exists() {
            report.files.push((display(path), validate_file(path, ctx)));
        } else {
            report.files.push((display(path), vec![not_found(path, "does not exist")]));
        }
    }
    report
}

/// Validates one file, choosing the checks by its name.
pub fn validate_file(path: &Path, ctx: &CatalogContext) -> Vec<Diagnostic> {
    let name = display(path);
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            let mut d = Diagnostic::error("unreadable", Subject::File, "", format!("cannot read the file: {e}"));
            d.file = name;
            return vec![d];
        }
    };
    if name.ends_with(".schema.json") {
        validate_schema_file(&name, &text)
    } else {
        check_conclave_text(&name, &text, ctx)
    }
}

fn validate_schema_file(name: &str, text: &str) -> Vec<Diagnostic> {
    let mut out = match serde_json::from_str(text) {
        Err(err) => {
            let mut d = Diagnostic::error("malformed-json", Subject::File, "", format!("not valid JSON: {err}"));
            d.line_col = Some((err.line(), err.column()));
            vec![d]
        }
        Ok(schema) => check_schema(&schema)
            .into_iter()
            .map(|p| {
                Diagnostic::error(
                    "invalid-schema",
                    Subject::File,
                    p.pointer,
                    format!("not a valid output schema: {}", p.message),
                )
                .with_help("fix the schema file; an output schema must be valid JSON Schema with an object root")
            })
            .collect(),
    };
    for d in &mut out {
        d.file = name.to_string();
    }
    out
}

fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        match entry.file_type() {
            Ok(t) if t.is_dir() => collect_files(&path, out),
            Ok(t) if t.is_file() && (name.ends_with(".conclave.json") || name.ends_with(".schema.json")) => {
                out.push(path)
            }
            _ => {}
        }
    }
}

fn not_found(path: &Path, what: &str) -> Diagnostic {
    let mut d = Diagnostic::error("not-found", Subject::File, "", format!("{} {what}", display(path)))
        .with_help("give a conclave file, a schema file, or a directory of them");
    d.file = display(path);
    d
}

pub(crate) fn display(path: &Path) -> String {
    path.display().to_string()
}
