//! The schema crate's integration tests: one binary, a module per concern.

mod lowering;
