//! Conclave: a graph workflow engine for LLM agents.
//!
//! Layout:
//! - `api/`: the HTTP API (axum) and the editor's static files;
//! - `catalog/`: conclave files: discovery, the format schema, validation diagnostics;
//! - `schema/`: output schemas: references, meta-schema checks;
//! - `engine/`: plans and runs conclaves, emitting typed events;
//! - `providers/`: the `Provider` trait and its implementations;
//! - `review/`: findings, comparisons across reviewers, counts checks, reports;
//! - `store/`: the `RunStore` trait, SQLite and in-memory stores, the conformance suite;
//! - `tools/`: the `ToolRunner` trait agents' tool calls go through;
//! - `cli/`: the `conclave` command line.

pub mod api;
pub mod catalog;
pub mod cli;
pub mod engine;
pub mod providers;
pub mod review;
pub mod schema;
pub mod store;
pub mod tools;

/// Built-in tool ids an agent may list in `tools`.
pub const BUILTIN_TOOLS: &[&str] = &["read_file", "list_files", "grep"];
