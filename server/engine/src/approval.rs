//! Decisions at approval nodes. A run whose approval nodes wait is parked
//! (`waiting`): its state is its event log, and no process holds it. A decision is
//! one `approval_decided` event appended after the run's last one, so two people
//! deciding at once cannot both win (the second append is out of order); the
//! caller then takes the run up again with [`crate::Engine::resume`], which goes on
//! from the decision: past an approval, or to a clean stop, `rejected`.

use conclave_core::{RunStore, StoreError, now_ms};
use conclave_shared::{EventKind, NodeState, RunEvent, RunStatus};

/// A person's decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Approved, or rejected.
    pub approved: bool,
    /// Who decided.
    pub by: String,
    /// What they said.
    pub comment: Option<String>,
}

/// Why a decision was not recorded.
#[derive(Debug, thiserror::Error)]
pub enum DecisionError {
    /// No such run.
    #[error("no run `{0}`")]
    UnknownRun(String),
    /// The run has no such node waiting.
    #[error("node `{node_id}` of run `{run_id}` is not waiting for a decision (it is {state}){hint}")]
    NotWaiting {
        /// The run.
        run_id: String,
        /// The node.
        node_id: String,
        /// Where it stands.
        state: String,
        /// Which nodes do wait, if any.
        hint: String,
    },
    /// The time to decide ran out: the run ends rejected.
    #[error("the time to decide at `{node_id}` ran out; the run is rejected")]
    Expired {
        /// The node.
        node_id: String,
    },
    /// Someone else decided first.
    #[error("someone else decided at `{node_id}` at the same moment; see the run's events")]
    Raced {
        /// The node.
        node_id: String,
    },
    /// The store failed.
    #[error(transparent)]
    Store(StoreError),
}

/// Records `decision` at approval node `node_id` of run `run_id`. When the node's
/// time to decide has run out, records a rejection by `timeout` instead and says so.
pub async fn decide(
    store: &dyn RunStore,
    run_id: &str,
    node_id: &str,
    decision: Decision,
) -> Result<(), DecisionError> {
    let record = store.get_run(run_id).await.map_err(DecisionError::Store)?;
    let record = record.ok_or_else(|| DecisionError::UnknownRun(run_id.to_string()))?;
    let node = record.nodes.iter().find(|n| n.node_id == node_id);
    if record.summary.status != RunStatus::Waiting || node.is_none_or(|n| n.state != NodeState::Waiting) {
        let waiting: Vec<&str> =
            record.nodes.iter().filter(|n| n.state == NodeState::Waiting).map(|n| n.node_id.as_str()).collect();
        return Err(DecisionError::NotWaiting {
            run_id: run_id.to_string(),
            node_id: node_id.to_string(),
            state: node.map_or_else(|| "not a node of the run".to_string(), |n| n.state.as_str().to_string()),
            hint: if waiting.is_empty() { String::new() } else { format!("; waiting: {}", waiting.join(", ")) },
        });
    }
    let events = store.events(run_id, 0).await.map_err(DecisionError::Store)?;
    let expires = events.iter().rev().find_map(|e| match &e.kind {
        EventKind::ApprovalRequested { node_id: n, expires_ms, .. } if n == node_id => Some(*expires_ms),
        _ => None,
    });
    let now = now_ms();
    let expired = expires.flatten().is_some_and(|end| end <= now);
    let decision = if expired {
        Decision { approved: false, by: "timeout".into(), comment: Some("the time to decide ran out".into()) }
    } else {
        decision
    };
    let event = RunEvent {
        run_id: run_id.to_string(),
        seq: events.last().map_or(1, |e| e.seq + 1),
        at_ms: now,
        kind: EventKind::ApprovalDecided {
            node_id: node_id.to_string(),
            approved: decision.approved,
            by: decision.by,
            comment: decision.comment,
        },
    };
    match store.append_event(&event).await {
        Ok(()) if expired => Err(DecisionError::Expired { node_id: node_id.to_string() }),
        Ok(()) => Ok(()),
        Err(StoreError::OutOfOrder { .. }) => Err(DecisionError::Raced { node_id: node_id.to_string() }),
        Err(e) => Err(DecisionError::Store(e)),
    }
}

/// Cancels run `run_id` while it is parked (`waiting`): `run_finished` with status
/// `cancelled`, appended after its last event (no process holds a parked run, so the
/// one that asks ends it). False when the run is not waiting.
pub async fn cancel_waiting(store: &dyn RunStore, run_id: &str) -> Result<bool, StoreError> {
    let Some(summary) = store.run_summary(run_id).await? else { return Ok(false) };
    if summary.status != RunStatus::Waiting {
        return Ok(false);
    }
    let last = store.events(run_id, 0).await?.last().map_or(0, |e| e.seq);
    let kind = EventKind::RunFinished {
        status: RunStatus::Cancelled,
        failed_node: None,
        error: Some("cancelled by request while it waited for a decision".into()),
    };
    store.append_event(&RunEvent { run_id: run_id.to_string(), seq: last + 1, at_ms: now_ms(), kind }).await?;
    Ok(true)
}
