//! The run the editor watches: its typed record as the server keeps it, kept current
//! by applying each event exactly as the store does, plus what only the editor shows
//! (failed attempts, contradictions, the report).

use conclave_shared::{Effect, EventKind, FindingGroup, NodeSummary, RunEvent, RunRecord, effect_of};
use std::collections::HashMap;

/// A failed attempt of a node: its number and what validation said about the answer.
#[derive(Debug, Clone, PartialEq)]
pub struct FailedAttempt {
    /// Attempt number, starting at 1.
    pub attempt: u32,
    /// The validation errors, one line each.
    pub errors: Vec<String>,
}

/// The run being watched: the run record as the server keeps it, kept current by
/// applying each event exactly as the store does, plus what only the editor shows.
#[derive(Debug, Clone, PartialEq)]
pub struct RunView {
    /// The run's record: its status and every node's state, output and error.
    pub record: RunRecord,
    /// The sequence number of the last event applied; an event at or below it was
    /// applied already (a stream that reconnects may repeat events), so it is skipped.
    pub last_seq: u64,
    /// Failed attempts per node id; the record keeps only a node's final outcome.
    pub attempts: HashMap<String, Vec<FailedAttempt>>,
    /// Contradictions the engine found among reviewers.
    pub contradictions: Vec<FindingGroup>,
    /// The Markdown report, once the run has finished.
    pub report: Option<String>,
}

impl RunView {
    /// Starts watching the run `record` describes.
    pub fn new(record: RunRecord) -> RunView {
        RunView { record, last_seq: 0, attempts: HashMap::new(), contradictions: Vec::new(), report: None }
    }

    /// The run's id.
    pub fn id(&self) -> &str {
        &self.record.summary.id
    }

    /// Where node `id` stands in the run.
    pub fn node(&self, id: &str) -> Option<&NodeSummary> {
        self.record.nodes.iter().find(|n| n.node_id == id)
    }

    /// Applies one event of this run; false when it changes nothing the editor shows
    /// (streamed text, say), so watchers need not redraw.
    pub fn apply(&mut self, event: &RunEvent) -> bool {
        if event.run_id != self.record.summary.id || event.seq <= self.last_seq {
            return false;
        }
        self.last_seq = event.seq;
        let noted = match &event.kind {
            EventKind::AttemptFailed { node_id, attempt, errors, .. } => {
                let failed = FailedAttempt { attempt: *attempt, errors: errors.clone() };
                self.attempts.entry(node_id.clone()).or_default().push(failed);
                true
            }
            // The same contradiction is reported to every node that receives it.
            EventKind::ContradictionDetected { contradiction, .. } if !self.contradictions.contains(contradiction) => {
                self.contradictions.push(contradiction.clone());
                true
            }
            _ => false,
        };
        let changes_record = !matches!(effect_of(event), Effect::None);
        self.record.apply(event);
        noted || changes_record
    }
}
