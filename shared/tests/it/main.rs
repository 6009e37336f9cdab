//! The shared crate's integration tests: one binary, a module per concern.

mod fields_roundtrip;
