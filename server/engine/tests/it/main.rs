//! The engine's integration tests: one binary, a module per concern.

mod engine;
mod policy;
mod resume;
mod reuse;
mod samples;
