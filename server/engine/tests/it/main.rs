//! The engine's integration tests: one binary, a module per concern.

mod engine;
mod reuse;
mod samples;
