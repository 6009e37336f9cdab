//! The built-in read-only repository tools agents may call in a review, `read_file`,
//! `list_files` and `grep` (`repo.rs`), each path confined to the repository root by
//! `sandbox.rs`.
//!
//! **Invariant:** a tool never reads outside the root; refusals are outcomes the model
//! sees, never run failures.

pub mod repo;
pub mod sandbox;

pub use repo::RepoTools;
pub use sandbox::Sandbox;
