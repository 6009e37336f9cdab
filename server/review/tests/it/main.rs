//! The review crate's integration tests: one binary, a module per concern.

mod baseline_lookup;
mod builtin_lanes;
mod degraded;
mod diff_parts;
mod fallback;
mod impact;
mod impact_dataset;
mod incremental;
mod inert;
mod input_fit;
mod review_compare;
mod tools_sandbox;
mod tools_symbols;
