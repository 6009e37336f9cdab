//! The catalog's integration tests: one binary, a module per concern.

mod file_format;
