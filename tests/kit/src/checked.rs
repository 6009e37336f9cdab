//! Conclaves built in a test, checked the way loading a file checks them: the fake
//! provider and the built-in ones are known, schema references resolve to the
//! built-in set.

use conclave_catalog::{CatalogContext, CheckedConclave, LoadError, check_conclave};
use conclave_core::BUILTIN_TOOLS;
use conclave_schema::SchemaCatalog;
use conclave_shared::Conclave;

/// The providers test conclaves may name: the fake and the built-in ones (which
/// `conclave_providers::BUILTIN_PROVIDERS` lists for the binary).
pub const TEST_PROVIDERS: &[&str] = &["fake", "anthropic", "openai", "ollama", "claude-code", "local"];

/// What test conclaves are checked against.
pub fn test_catalog() -> CatalogContext {
    CatalogContext {
        schemas: SchemaCatalog::with_roots(vec![]),
        providers: TEST_PROVIDERS.iter().map(|p| p.to_string()).collect(),
        tools: BUILTIN_TOOLS.iter().map(|t| t.to_string()).collect(),
        programs: None,
        catalog: None,
    }
}

/// Checks `conclave`, or says why it does not pass.
pub fn check(conclave: Conclave) -> Result<CheckedConclave, LoadError> {
    check_conclave(&format!("{}.conclave.json", conclave.id), conclave, &test_catalog())
}

/// Checks a conclave that must pass, failing the test with its diagnostics otherwise.
pub fn checked(conclave: Conclave) -> CheckedConclave {
    match check(conclave) {
        Ok(checked) => checked,
        Err(e) => panic!("the test conclave does not pass the checks: {e:?}"),
    }
}
