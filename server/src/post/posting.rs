//! What one posting publishes, whichever the forge: the review's items, whether to
//! mark the missing ones fixed, the scope line, the dismissed fingerprints to leave
//! alone, and the `/conclave dismiss` replies to answer.

use std::collections::BTreeSet;

use super::plan::Item;
use super::replies::Reply;

/// What one posting publishes, whichever the forge.
#[derive(Debug, Clone, Copy)]
pub struct Posting<'a> {
    /// The items the review reports.
    pub items: &'a [Item],
    /// Mark posted items no longer reported as fixed (see [`super::plan::Options::mark_fixed`]).
    pub mark_fixed: bool,
    /// What was reviewed, at the head of a new summary.
    pub scope: Option<&'a str>,
    /// Fingerprints of dismissed findings: their comments are left as they are,
    /// neither reposted nor marked fixed.
    pub dismissed: &'a BTreeSet<String>,
    /// The `/conclave dismiss` replies to answer in their threads.
    pub replies: &'a [Reply],
}
