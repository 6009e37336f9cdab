//! Which conclave reviews a change ([`ConclaveChoice`]) and where conclaves are
//! found ([`Catalog`]): what the review pipeline and the configuration's side of the
//! change both read.

use conclave_catalog::CatalogContext;
use std::path::Path;

/// Which conclave reviews a change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConclaveChoice {
    /// The workspace's `light-code-review`, else the built-in one.
    Default,
    /// A file, or an id in the catalog (the command line).
    PathOrId(String),
    /// An id in the catalog only, never a path (the HTTP API).
    Id(String),
}

/// Where conclaves are found and what they are checked against.
#[derive(Debug, Clone, Copy)]
pub struct Catalog<'a> {
    /// The directory of `*.conclave.json` files.
    pub dir: &'a Path,
    /// Schema roots, providers and tools a conclave may use.
    pub context: &'a CatalogContext,
}
