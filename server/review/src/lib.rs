//! Code review: the one review pipeline (`pipeline.rs`: prepare → start → finish),
//! the analyzer lanes it runs or leaves out (`analyzers.rs`),
//! the change read from git (`diff.rs`), the sandboxed repository tools agents call
//! (`tools/`), the output policy the engine applies to every run (`policy.rs`:
//! narrowing findings to the change, path normalization, comparisons, counts, and
//! `input_fit.rs`: the order a Writer's findings are cut in to fit a small window), the
//! findings themselves (`findings.rs`), their anchors and fingerprints (`anchor.rs`:
//! the quote checked against the file, a name for the code that survives line
//! drift), whether two findings are the same issue (`same_issue.rs`: the one rule,
//! reading place, stance, wording and the quoted evidence), comparisons across
//! reviewers (`compare.rs`, `similarity.rs`), support
//! (`support.rs`: how many reviewers raised a finding), samples (`samples.rs`: K runs
//! of a reviewer merged, each finding's stability), baselines and dismissals
//! (`baseline.rs`, `dismissals.rs`), incremental reviews (`incremental.rs`: what is
//! new since the branch's last review, and the earlier findings carried), the
//! repository's rules for its reviewers (`rules.rs`: `AGENTS.md` and the like, read
//! through the sandbox, selected by the changed paths), the reports (`report/`), and
//! the sanitizer that makes model-authored Markdown inert in all of them (`inert/`,
//! keeping links to the repository's web pages only, `forge_url.rs`).
//!
//! **Invariant:** the comparison and counts checks are pure functions of agent
//! outputs; they call no provider and touch no file. Nothing here knows HTTP routes or
//! command-line flags: the API and the CLI call [`pipeline`].

pub mod analyzers;
pub mod anchor;
pub mod baseline;
mod choice;
pub mod compare;
pub mod configuration;
pub mod diff;
pub mod dismissals;
pub mod eval;
pub mod fallback;
pub mod findings;
pub mod forge_url;
pub mod impact;
pub mod incremental;
pub mod inert;
pub mod input_fit;
pub mod invisible_text;
pub mod pipeline;
pub mod policy;
pub mod report;
pub mod repository_anchors;
mod reviewers;
pub mod rules;
pub mod same_issue;
pub mod samples;
pub mod semgrep_rules;
pub mod similarity;
pub mod support;
pub mod tools;
mod window;

pub use compare::compare_siblings;
pub use findings::{count_mismatches, normalize_path, read_findings};
pub use pipeline::{Catalog, ConclaveChoice, PreparedReview, ReviewError, ReviewRequest};
pub use policy::ReviewPolicy;
pub use report::{ReportFormat, ReviewReport};
