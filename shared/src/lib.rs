//! Wire types and pure logic shared by the Conclave server and the browser editor.
//!
//! Layout: `conclave` is the conclave file format (`command` its command nodes, `cache` the cache setting), `graph` its graph rules, `events`
//! the typed run events, `route` route nodes and their predicates, `run` the run records with how an event changes one, `sandbox` how a command node widens its sandbox and what confined it, `severity_map` how an analyzer lane grades its tool's findings,
//! `outcome` a run's status and the class of a failure (which both name),
//! `diagnostic` the problems validation reports, `delivery` a forge's webhook delivery as the run store keeps it, `api` the HTTP API's bodies,
//! `fields` the field builder's model of output schemas, `invisible` the invisible and
//! bidirectional control characters and their escapes, `lowering` schema dialects
//! and the notes on adapting schemas to them, `review` findings and the checks across
//! reviewers, `eval` what an eval of a conclave's reviews measured, `fit` an agent's input cut to fit a small model's window, `compare` the findings of two runs side by side, `layout` the editor's
//! auto-layout, `mcp` the MCP servers agents call and their tool ids, `number` how the editor writes numbers. Nothing here does I/O, and the
//! crate builds for `wasm32-unknown-unknown` with only serde, serde_json, petgraph (the
//! graph algorithms) and zmij (serde_json's own float formatter).

pub mod api;
pub mod budget;
pub mod cache;
pub mod command;
pub mod compare;
pub mod conclave;
pub mod delivery;
pub mod diagnostic;
pub mod eval;
pub mod events;
pub mod fields;
pub mod fit;
pub mod graph;
pub mod impact;
pub mod invisible;
pub mod layout;
pub mod lowering;
pub mod mcp;
pub mod number;
pub mod outcome;
pub mod review;
pub mod route;
pub mod run;
pub mod sandbox;
pub mod severity_map;

pub use budget::Budget;
pub use conclave::{
    AgentConfig, ApprovalConfig, CacheSetting, ChildConclave, CommandConfig, CommandDir, CommandParse, Compatibility,
    Conclave, Edge, LoopConfig, MAX_LOOP_ITERATIONS, Node, NodeKind, OpenAiApi, OutputMode, Position, Settings,
};
pub use diagnostic::{Diagnostic, Level, Subject};
pub use events::{CacheOrderReason, CacheRole, EventKind, NodeOutput, RunEvent, Usage};
pub use fields::{Field, FieldType, FieldsDoc, empty_schema, fields_to_schema, schema_to_fields};
pub use fit::{InputCut, InputFit};
pub use impact::ImpactSettings;
pub use lowering::{DialectSetting, LowerTarget, LoweringNote, NoteKind, OutputDialect};
pub use mcp::{McpServerConfig, McpToolRef};
pub use outcome::{ErrorKind, RunStatus};
pub use review::{
    Anchor, BaselineState, CountMismatch, Dismissal, Finding, FindingGroup, FindingIdentity, FindingsCheck, Severity,
    Stability, Stance, Trust,
};
pub use route::{Predicate, PredicateOp, RouteCase, RouteConfig};
pub use run::{Effect, NodeChange, NodeState, NodeSummary, RunRecord, RunSummary, effect_of};
pub use sandbox::{SandboxConfig, SandboxLayer, SandboxLimits, SandboxRecord};
pub use severity_map::SeverityMap;
