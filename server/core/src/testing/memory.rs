//! An in-memory run store: for benchmarks of the engine alone and as a second
//! implementation the conformance suite keeps honest. Nothing survives the process.

use async_trait::async_trait;
use conclave_shared::{RunEvent, RunRecord, RunStatus, RunSummary};
use std::collections::HashMap;
use std::sync::Mutex;

use crate::store::{NewRun, RunStore, StoreError, interrupted_event};

#[derive(Debug)]
struct StoredRun {
    record: RunRecord,
    owner: String,
    events: Vec<RunEvent>,
    /// Position of each node in `record.nodes`, so applying an event is O(1).
    node_index: HashMap<String, usize>,
}

/// Runs kept in memory.
#[derive(Debug, Default)]
pub struct MemoryStore {
    runs: Mutex<HashMap<String, StoredRun>>,
    order: Mutex<Vec<String>>,
    reports: Mutex<HashMap<(String, String), String>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    fn with_runs<T>(&self, f: impl FnOnce(&mut HashMap<String, StoredRun>) -> T) -> T {
        f(&mut self.runs.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }
}

fn push_event(run: &mut StoredRun, event: &RunEvent) -> Result<(), StoreError> {
    let last = run.events.last().map_or(0, |e| e.seq);
    if event.seq <= last {
        return Err(StoreError::OutOfOrder { run_id: event.run_id.clone(), seq: event.seq, last });
    }
    run.record.apply_indexed(event, &run.node_index);
    run.events.push(event.clone());
    Ok(())
}

#[async_trait]
impl RunStore for MemoryStore {
    async fn create_run(&self, run: &NewRun) -> Result<(), StoreError> {
        let record = RunRecord::new(run.id.clone(), run.conclave.clone(), run.input.clone(), run.created_ms);
        let inserted = self.with_runs(|runs| {
            if runs.contains_key(&run.id) {
                return false;
            }
            let node_index = record.nodes.iter().enumerate().map(|(i, n)| (n.node_id.clone(), i)).collect();
            runs.insert(run.id.clone(), StoredRun { record, owner: run.owner.clone(), events: Vec::new(), node_index });
            true
        });
        if !inserted {
            return Err(StoreError::Backend(format!("a run with id `{}` already exists", run.id)));
        }
        self.order.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(run.id.clone());
        Ok(())
    }

    async fn append_event(&self, event: &RunEvent) -> Result<(), StoreError> {
        self.with_runs(|runs| {
            let run = runs.get_mut(&event.run_id).ok_or_else(|| StoreError::UnknownRun(event.run_id.clone()))?;
            push_event(run, event)
        })
    }

    async fn get_run(&self, run_id: &str) -> Result<Option<RunRecord>, StoreError> {
        Ok(self.with_runs(|runs| runs.get(run_id).map(|r| r.record.clone())))
    }

    async fn list_runs(&self, limit: usize) -> Result<Vec<RunSummary>, StoreError> {
        let order = self.order.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        let mut summaries: Vec<RunSummary> = self
            .with_runs(|runs| order.iter().filter_map(|id| runs.get(id).map(|r| r.record.summary.clone())).collect());
        summaries.sort_by(|a, b| b.created_ms.cmp(&a.created_ms).then_with(|| b.id.cmp(&a.id)));
        summaries.truncate(limit);
        Ok(summaries)
    }

    async fn events(&self, run_id: &str, after_seq: u64) -> Result<Vec<RunEvent>, StoreError> {
        self.with_runs(|runs| {
            let run = runs.get(run_id).ok_or_else(|| StoreError::UnknownRun(run_id.to_string()))?;
            Ok(run.events.iter().filter(|e| e.seq > after_seq).cloned().collect())
        })
    }

    async fn put_report(&self, run_id: &str, format: &str, content: &str) -> Result<(), StoreError> {
        if !self.with_runs(|runs| runs.contains_key(run_id)) {
            return Err(StoreError::UnknownRun(run_id.to_string()));
        }
        let mut reports = self.reports.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        reports.insert((run_id.to_string(), format.to_string()), content.to_string());
        Ok(())
    }

    async fn get_report(&self, run_id: &str, format: &str) -> Result<Option<String>, StoreError> {
        let reports = self.reports.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        Ok(reports.get(&(run_id.to_string(), format.to_string())).cloned())
    }

    async fn mark_interrupted(
        &self,
        owner_alive: &(dyn for<'s> Fn(&'s str) -> bool + Sync),
        now_ms: u64,
    ) -> Result<Vec<String>, StoreError> {
        self.with_runs(|runs| {
            let mut marked = Vec::new();
            for (id, run) in runs.iter_mut() {
                if run.record.summary.status == RunStatus::Running && !owner_alive(&run.owner) {
                    let seq = run.events.last().map_or(0, |e| e.seq) + 1;
                    push_event(run, &interrupted_event(id, seq, now_ms))?;
                    marked.push(id.clone());
                }
            }
            marked.sort();
            Ok(marked)
        })
    }
}
