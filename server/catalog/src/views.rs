//! What the checks know of a file's nodes and edges as far as they could be read,
//! and the nearest known name for a typo.

use conclave_shared::{NodeKind, Subject};
use serde_json::Value;

/// A node as far as it could be read.
pub(crate) struct NodeView<'a> {
    pub(crate) index: usize,
    pub(crate) id: Option<&'a str>,
    pub(crate) kind: Option<NodeKind>,
    pub(crate) value: &'a Value,
}

impl NodeView<'_> {
    pub(crate) fn subject(&self) -> Subject {
        Subject::Node(self.id.unwrap_or("?").to_string())
    }
    pub(crate) fn path(&self) -> String {
        format!("/nodes/{}", self.index)
    }
}

/// A readable edge: its index and endpoints (both known to exist).
pub(crate) struct EdgeView<'a> {
    pub(crate) index: usize,
    pub(crate) from: &'a str,
    pub(crate) to: &'a str,
    /// The case that takes it, for an edge out of a route.
    pub(crate) case: Option<&'a str>,
}

/// The closest known name, if one is close enough to be a likely typo.
pub fn did_you_mean<'a>(name: &str, known: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    known
        .map(|k| (strsim::jaro_winkler(name, k), k))
        .filter(|(score, _)| *score >= 0.85)
        .max_by(|a, b| a.0.total_cmp(&b.0).then_with(|| b.1.cmp(a.1)))
        .map(|(_, k)| k)
}

/// The indefinite article before `word`.
pub(crate) fn article(word: &str) -> &'static str {
    if word.starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" }
}
