//! Wire types shared by the Conclave server and the browser editor.
//!
//! Layout: `conclave` is the conclave file format, `events` the typed run events,
//! `fields` the field builder's model of output schemas,
//! `lowering` the notes on adapting schemas to providers, `review` findings and the
//! checks across reviewers, `run` the run records the store and the API hand out. Nothing here does I/O, and
//! the crate builds for `wasm32-unknown-unknown` with only serde.

pub mod conclave;
pub mod events;
pub mod fields;
pub mod lowering;
pub mod review;
pub mod run;

pub use conclave::{
    AgentConfig, Compatibility, Conclave, Edge, Node, NodeKind, OpenAiApi, OutputMode, Position, Settings,
};
pub use events::{EventKind, NodeOutput, RunEvent, Usage};
pub use fields::{Field, FieldType, FieldsDoc, empty_schema, fields_to_schema, schema_to_fields};
pub use lowering::{LoweringNote, NoteKind};
pub use review::{CountMismatch, Finding, FindingGroup, FindingsCheck, Severity, Stance};
pub use run::{NodeState, NodeSummary, RunRecord, RunStatus, RunSummary};
