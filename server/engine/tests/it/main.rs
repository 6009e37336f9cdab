//! The engine's integration tests: one binary, a module per concern.

mod budget;
mod engine;
mod kinds;
mod mcp;
mod parts;
mod policy;
mod policy_failures;
mod probe;
mod resume;
mod reuse;
mod samples;
mod sandbox;
