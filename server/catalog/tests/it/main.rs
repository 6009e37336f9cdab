//! The catalog's integration tests: one binary, a module per concern.

mod budget;
mod children;
mod file_format;
mod mcp;
mod sandbox;
mod severity_map;
