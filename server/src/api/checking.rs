//! The one check of a conclave's text the API answers with: every diagnostic, the
//! error and warning counts, and the agents whose output is findings-shaped. Saving,
//! validating and listing the catalog all check through here. It reads schema files,
//! so it runs on blocking threads.

use conclave_catalog::{CatalogContext, Level, check_conclave_value, checks::malformed};
use conclave_shared::api::Validation;
use serde_json::Value;

/// The diagnostics of a conclave file's text, and its findings-shaped agents.
pub fn validation(context: &CatalogContext, file: &str, text: &str) -> Validation {
    let checked = match serde_json::from_str::<Value>(text) {
        Ok(value) => check_conclave_value(file, &value, context),
        Err(e) => conclave_catalog::Checked { diagnostics: vec![malformed(file, &e)], ..Default::default() },
    };
    let errors = checked.diagnostics.iter().filter(|d| d.is_error()).count();
    let warnings = checked.diagnostics.iter().filter(|d| d.severity == Level::Warning).count();
    let findings_agents =
        checked.outputs.into_iter().filter(|(_, o)| o.findings_field.is_some()).map(|(id, _)| id).collect();
    Validation { diagnostics: checked.diagnostics, errors, warnings, findings_agents }
}
