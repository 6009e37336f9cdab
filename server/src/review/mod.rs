//! Code review: reading findings out of agent outputs, comparing sibling reviewers
//! (contradictions, disagreements, agreements, near-duplicates), checking a Writer's
//! counts, the review input built from a git change, and the reports.
//!
//! **Invariant:** the comparison and counts checks are pure functions of agent
//! outputs; they call no provider and touch no file.

pub mod compare;
pub mod diff;
pub mod findings;
pub mod report;
pub mod similarity;

pub use compare::compare_findings;
pub use findings::{count_mismatches, findings_field, normalize_path, read_findings};
