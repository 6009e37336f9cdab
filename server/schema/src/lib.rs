//! JSON Schema handling for agent outputs: resolving dotted references, checking that
//! an author's schema is itself valid, recognising findings-shaped output, normalizing
//! and lowering a schema per provider, the output contract each agent is held to, and
//! the prompt contract for providers without native structured output, and SARIF
//! logs, compiler-style diagnostics, ShellCheck's `json1` and Cargo's JSON messages
//! read as findings (`sarif.rs`, `diagnostics.rs`, `shellcheck.rs`, `cargo.rs`, for
//! command nodes that run an analyzer), each graded by the lane's severity map
//! (`grade.rs`).
//!
//! **Invariant:** nothing here calls a provider or touches the network; remote `$ref`s
//! are never fetched.

pub mod cargo;
pub mod check;
pub mod contract;
pub mod diagnostics;
pub mod grade;
pub mod lower;
pub mod normalize;
pub mod output;
pub mod refs;
pub mod sarif;
pub mod shape;
pub mod shellcheck;
pub mod walk;

pub use check::{SchemaProblem, check_schema};
pub use lower::{LowerTarget, Lowered, LoweringNote, NoteKind, lower};
pub use normalize::{NormalizeError, normalize};
pub use output::{ContractError, ContractSpec, OutputContract, output_contract};
pub use refs::{RefError, ResolvedSchema, SchemaCatalog, SchemaSource};
pub use shape::findings_field;
