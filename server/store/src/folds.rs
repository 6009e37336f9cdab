//! Folding a run's events into its nodes, for both stores; and the event writers'
//! folds: for each run a writer has written from its first event, the run's nodes as
//! its committed events leave them. A run's end then stores its nodes from the fold
//! instead of reading and folding its whole event log again.
//!
//! A fold is only a shortcut. It holds as of the run's last sequence number when it
//! was last written; a batch that finds any other number in the database (another
//! process wrote the run, or a write was rolled back) drops it, and the run's end
//! falls back to folding the stored events. Any failed write drops every fold it
//! touched.

use conclave_shared::{Conclave, NodeSummary, RunEvent, RunRecord};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Runs the writer folds at once; past that, new runs go without until idle ones go.
const MOST_RUNS: usize = 512;

/// A fold not written to for this long may be dropped to make room: its run has
/// probably been taken over by another process.
const IDLE: Duration = Duration::from_secs(120);

/// The folds of the runs being written, by run id.
#[derive(Debug, Default)]
pub(crate) struct Folds {
    runs: HashMap<String, Fold>,
}

#[derive(Debug)]
struct Fold {
    /// The sequence number of the last event folded in.
    last_seq: u64,
    record: RunRecord,
    /// Each node's index in `record.nodes`, so an event finds its node at once.
    positions: HashMap<String, usize>,
    touched: Instant,
}

impl Fold {
    /// A run before any event: every node of its conclave `queued`.
    fn new(run_id: &str, conclave: Conclave) -> Fold {
        let record = RunRecord::new(run_id.to_string(), conclave, serde_json::Value::Null, 0);
        let positions = record.nodes.iter().enumerate().map(|(i, n)| (n.node_id.clone(), i)).collect();
        Fold { last_seq: 0, record, positions, touched: Instant::now() }
    }

    fn apply(&mut self, event: &RunEvent) {
        self.record.apply_indexed(event, &mut self.positions);
        self.last_seq = event.seq;
        self.touched = Instant::now();
    }
}

/// A run's nodes as `events` (in order) leave them, from every node `queued`, as
/// `RunRecord::apply` does.
pub(crate) fn fold_events<'a>(
    run_id: &str,
    conclave: Conclave,
    events: impl IntoIterator<Item = &'a RunEvent>,
) -> Vec<NodeSummary> {
    let mut fold = Fold::new(run_id, conclave);
    for event in events {
        fold.apply(event);
    }
    fold.record.nodes
}

impl Folds {
    /// The sequence number of the last event folded into `run_id`'s fold, if any.
    pub(crate) fn last_seq(&self, run_id: &str) -> Option<u64> {
        self.runs.get(run_id).map(|fold| fold.last_seq)
    }

    /// Whether `run_id` has a fold.
    pub(crate) fn has(&self, run_id: &str) -> bool {
        self.runs.contains_key(run_id)
    }

    /// Keeps the fold of `run_id` only if it agrees with `last`, the run's last
    /// stored sequence number (read under the run's lock).
    pub(crate) fn check(&mut self, run_id: &str, last: u64) {
        if self.runs.get(run_id).is_some_and(|fold| fold.last_seq != last) {
            self.runs.remove(run_id);
        }
    }

    /// Starts the fold of a run that has no events yet, if there is room.
    pub(crate) fn start(&mut self, run_id: &str, conclave: Conclave) {
        if self.runs.len() >= MOST_RUNS {
            self.runs.retain(|_, fold| fold.touched.elapsed() < IDLE);
            if self.runs.len() >= MOST_RUNS {
                return;
            }
        }
        self.runs.insert(run_id.to_string(), Fold::new(run_id, conclave));
    }

    /// Folds `event` into its run's fold, if it has one.
    pub(crate) fn apply(&mut self, event: &RunEvent) {
        if let Some(fold) = self.runs.get_mut(&event.run_id) {
            fold.apply(event);
        }
    }

    /// The nodes of a run that has just ended, taking its fold away.
    pub(crate) fn finish(&mut self, run_id: &str) -> Option<Vec<NodeSummary>> {
        self.runs.remove(run_id).map(|fold| fold.record.nodes)
    }

    /// Drops the folds of these runs: a write of theirs failed.
    pub(crate) fn forget<'a>(&mut self, run_ids: impl IntoIterator<Item = &'a str>) {
        for run_id in run_ids {
            self.runs.remove(run_id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use conclave_shared::{EventKind, NodeState};

    fn conclave() -> Conclave {
        serde_json::from_value(serde_json::json!({
            "version": 1, "id": "c", "name": "c",
            "nodes": [{"id": "in", "kind": "trigger", "label": "in"}],
            "edges": []
        }))
        .expect("a conclave")
    }

    fn event(seq: u64, kind: EventKind) -> RunEvent {
        RunEvent { run_id: "r".into(), seq, at_ms: seq, kind }
    }

    #[test]
    fn a_fold_follows_its_events_and_is_dropped_when_the_database_disagrees() {
        let mut folds = Folds::default();
        folds.start("r", conclave());
        folds.apply(&event(1, EventKind::NodeStarted { node_id: "in".into(), input: None }));
        folds.check("r", 1);
        assert!(folds.has("r"), "the database agrees: the fold stays");
        folds.check("r", 3);
        assert!(!folds.has("r"), "another process wrote the run: the fold goes");

        folds.start("r", conclave());
        folds.apply(&event(1, EventKind::NodeStarted { node_id: "in".into(), input: None }));
        let nodes = folds.finish("r").expect("a fold");
        assert_eq!(nodes[0].state, NodeState::Running);
        assert!(!folds.has("r"), "a finished run's fold is taken away");
    }
}
