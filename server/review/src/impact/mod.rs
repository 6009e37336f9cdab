//! The change's impact in every review: for each function or method the change
//! adds, removes or modifies, its definition, its callers and the tests that use it,
//! found in the head version's symbol index (`conclave-symbols`) and capped, given
//! to every reviewer in the run input (`impact`), where it is part of the prefix all
//! of them share (and a vendor's prompt cache holds).
//!
//! `model.rs` is what the run input carries; `changed.rs` which functions a change
//! touches in a file; `sites.rs` one function's callers and tests; `caps.rs` the
//! order and the caps; `build.rs` reads both versions and puts it together.
//!
//! **Invariant:** building the impact never fails a review: a file that cannot be
//! read or parsed is skipped and counted, and an index that cannot be built leaves
//! the impact out, saying why.

mod build;
pub mod caps;
pub mod changed;
pub mod model;
pub mod sites;

pub use build::{ImpactRequest, MAX_FILE_BYTES, build_impact, has_code, without_impact};
pub use model::{
    ChangeImpact, ChangeKind, Counts, IMPACT_KEY, IMPACT_RECORD_KEY, Impact, ImpactFunction, ImpactRecord, LeftOut,
    Site,
};
