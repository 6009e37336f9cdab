//! The built-in read-only repository tools agents may call in a review, `read_file`,
//! `list_files` and `grep` (`repo.rs`) and the symbol tools `find_definition`,
//! `find_references` and `outline` over the review's shared symbol index
//! (`symbols.rs`), each path confined to the repository root by
//! `conclave_sandbox::paths` (re-exported here as `sandbox`), which the symbol
//! index (`conclave-symbols`) reads through too.
//!
//! **Invariant:** a tool never reads outside the root; refusals are outcomes the model
//! sees, never run failures.

pub mod repo;
pub use conclave_sandbox::paths as sandbox;
pub mod symbols;

pub use repo::RepoTools;
pub use sandbox::Sandbox;
pub use symbols::SymbolIndex;
