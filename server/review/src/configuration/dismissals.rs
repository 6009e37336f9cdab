//! The repository's dismissals a review applies. A change cannot dismiss its own
//! findings: when the base side configured the review, the dismissals file is read
//! from the base's commit, and the entries the change adds or alters are kept apart
//! as not applied, for the report to list beside the findings they would have hidden.
//! Without a base (or with the head trusted) the working tree's file applies, as
//! before.

use conclave_shared::Finding;
use serde_json::Value;
use std::path::{Path, PathBuf};

use super::source::{ConfigurationSource, short};
use crate::dismissals::{self, DismissalError, Dismissals};

/// The dismissals of the repository file a review reads.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReviewDismissals {
    /// Those that apply.
    pub applied: Dismissals,
    /// Those the change itself adds or alters: not applied.
    pub added_by_change: Dismissals,
}

/// A finding a dismissal added by the change would have hidden: it stays, and gates
/// count it.
#[derive(Debug, Clone, PartialEq)]
pub struct NotApplied {
    /// The finding's fingerprint.
    pub fingerprint: String,
    /// Its file and line.
    pub file: String,
    /// Its line.
    pub line: u64,
    /// The reason the change's entry gives.
    pub reason: String,
    /// The author the change's entry names.
    pub author: String,
}

impl ReviewDismissals {
    /// The dismissals for the review whose run input is `input`, of the repository at
    /// `root`: the base commit's file when the run input says the base configured the
    /// review, else the working tree's. Reads git and the file system: call it on a
    /// blocking thread.
    pub fn read(input: &Value, root: &Path) -> Result<ReviewDismissals, DismissalError> {
        let source = ConfigurationSource::of_input(input);
        let Some(commit) = source.as_ref().filter(|s| s.from_base()).and_then(|s| s.commit.clone()) else {
            return Ok(ReviewDismissals { applied: Dismissals::load(root)?, added_by_change: Dismissals::default() });
        };
        let base_path = PathBuf::from(format!("{}:{}", short(&commit), dismissals::FILE));
        let applied = match committed(root, &commit) {
            Some(text) => {
                Dismissals::parse(&text).map_err(|message| DismissalError::Malformed { path: base_path, message })?
            }
            None => Dismissals::default(),
        };
        let head = input.pointer("/head/commit").and_then(Value::as_str).unwrap_or("HEAD");
        // The change's own file is read only to say what it would have dismissed; a
        // malformed one is the change's problem, named as an edited file.
        let proposed = committed(root, head).and_then(|text| Dismissals::parse(&text).ok()).unwrap_or_default();
        let added_by_change = proposed.not_in(&applied);
        Ok(ReviewDismissals { applied, added_by_change })
    }

    /// The findings among `findings` that a dismissal added by the change names and
    /// nothing else dismissed.
    pub fn not_applied(&self, findings: &[Finding]) -> Vec<NotApplied> {
        findings
            .iter()
            .filter(|f| f.dismissed.is_none())
            .filter_map(|f| {
                let fingerprint = f.fingerprint.clone()?;
                let dismissal = self.added_by_change.get(&fingerprint)?;
                Some(NotApplied {
                    fingerprint,
                    file: f.file.clone(),
                    line: f.line,
                    reason: dismissal.reason.clone(),
                    author: dismissal.author.clone(),
                })
            })
            .collect()
    }
}

/// The dismissals file's text at `commit`, when it has one.
fn committed(root: &Path, commit: &str) -> Option<String> {
    crate::diff::git(root, &["cat-file", "blob", &format!("{commit}:{}", dismissals::FILE)]).ok()
}
