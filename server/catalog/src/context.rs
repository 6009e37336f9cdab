//! What a conclave file is checked against: where schema references resolve, the
//! providers and tools it may name, and the programs its command nodes may run.

use conclave_schema::SchemaCatalog;

/// What a file is checked against: schema search roots, known providers and tools.
#[derive(Debug, Clone)]
pub struct CatalogContext {
    /// Where `output_schema_ref`s resolve.
    pub schemas: SchemaCatalog,
    /// Provider names an agent may use.
    pub providers: Vec<String>,
    /// Built-in tool ids an agent may list.
    pub tools: Vec<String>,
    /// The programs command nodes may run: `None` for any (files on disk are the
    /// user's own), else only these (a server's `--allow-commands`).
    pub programs: Option<Vec<String>>,
    /// Where the conclaves that `conclave` nodes name are found (the catalog's
    /// directory); without it they are not looked up.
    pub catalog: Option<std::path::PathBuf>,
}
