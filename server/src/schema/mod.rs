//! JSON Schema handling for agent outputs: resolving dotted references, checking that
//! an author's schema is itself valid, and compiling validators.
//!
//! **Invariant:** nothing here calls a provider or touches the network; remote `$ref`s
//! are never fetched.

pub mod check;
pub mod refs;

pub use check::{SchemaProblem, check_schema};
pub use refs::{RefError, ResolvedSchema, SchemaCatalog, SchemaSource};
