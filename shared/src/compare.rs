//! Comparing the findings of two runs of the same conclave: what was added, removed
//! and changed between them.
