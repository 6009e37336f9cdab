//! Following a run to its end for a tool that waits: one progress notification per
//! change of a node's state (when the client sent a progress token), read from the
//! run's events as the API's event stream reads them, so a run another process of the
//! same store runs is followed too.

use conclave_shared::{Effect, EventKind, NodeState, NodeSummary, RunEvent, effect_of};
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::{Peer, RoleServer};
use std::collections::HashMap;

use super::context::{McpContext, Refusal, message};

/// Where progress goes: the client and its token, when it asked for progress.
pub struct Reporter {
    /// The client.
    pub peer: Peer<RoleServer>,
    /// Its token for this call; no notifications without one.
    pub token: Option<ProgressToken>,
}

/// Follows run `id` until its last event (or until it parks for a decision), reporting each node's changes of state.
/// Ends early (without error) when the client goes away.
pub async fn follow(context: &McpContext, id: &str, reporter: &Reporter) -> Result<(), Refusal> {
    let mut events =
        crate::api::events::follow_events(context.state.clone(), id.to_string(), 0).await.map_err(message)?;
    let mut states = States::default();
    while let Some(event) = events.recv().await {
        if let Some(line) = states.apply(&event)
            && let Some(token) = &reporter.token
        {
            let (done, total) = states.counts();
            let param =
                ProgressNotificationParam::new(token.clone(), done as f64).with_total(total as f64).with_message(line);
            if reporter.peer.notify_progress(param).await.is_err() {
                return Ok(());
            }
        }
        // The run ended, or parked at an approval node until someone decides.
        if matches!(event.kind, EventKind::RunFinished { .. } | EventKind::RunWaiting { .. }) {
            break;
        }
    }
    Ok(())
}

/// Each node's state as the events so far leave it.
#[derive(Default)]
struct States {
    nodes: HashMap<String, NodeSummary>,
}

impl States {
    /// Applies one event; a line saying what changed when a node's state did.
    fn apply(&mut self, event: &RunEvent) -> Option<String> {
        let Effect::Node { node_id, change } = effect_of(event) else { return None };
        let node = self.nodes.entry(node_id.clone()).or_insert_with(|| NodeSummary::queued(&node_id));
        let before = node.state;
        node.apply(change, event.at_ms);
        (node.state != before).then(|| format!("node `{node_id}`: {}", node.state.as_str()))
    }

    /// How many nodes seen so far are settled, and how many were seen.
    fn counts(&self) -> (usize, usize) {
        let settled =
            self.nodes.values().filter(|n| !matches!(n.state, NodeState::Queued | NodeState::Running)).count();
        (settled, self.nodes.len())
    }
}
