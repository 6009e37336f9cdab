//! Limits held across every process sharing the run store's database (servers and
//! workers on any machine): each node of a limited provider takes one of the
//! provider's slots in the queue's slot table, under a lease renewed while it runs,
//! and gives it back when it ends. A process that dies holds its slots only until
//! their leases lapse. A provider's "retry after" pauses its calls in every process,
//! not only the one that was told.

use conclave_core::{RunQueue, now_ms};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// How long to wait before asking again for a slot when all are taken.
const RETRY: Duration = Duration::from_millis(50);

/// The fleet's limits: how many calls each provider may have at once across every
/// process on the database.
#[derive(Debug, Clone)]
pub struct FleetLimits {
    /// The database's queue, which keeps the slots.
    pub slots: Arc<dyn RunQueue>,
    /// The limit of each provider.
    pub providers: HashMap<String, u32>,
    /// How long a slot holds without renewal.
    pub lease: Duration,
}

/// A slot held while a node runs; dropping it gives the slot back.
#[derive(Debug)]
pub struct FleetSlot {
    slots: Arc<dyn RunQueue>,
    scope: String,
    slot: u32,
    holder: String,
    renew: tokio::task::JoinHandle<()>,
}

impl FleetLimits {
    /// Waits for a slot of `provider`, when the fleet limits it; `None` otherwise (or
    /// when the store fails: the node then runs under the process's limits alone).
    pub async fn acquire(&self, provider: &str) -> Option<FleetSlot> {
        let limit = *self.providers.get(provider)?;
        let scope = format!("provider:{provider}");
        let holder = uuid::Uuid::now_v7().to_string();
        let lease_ms = self.lease.as_millis() as u64;
        let slot = loop {
            match self.slots.take_slot(&scope, limit, &holder, now_ms(), lease_ms).await {
                Ok(Some(slot)) => break slot,
                Ok(None) => tokio::time::sleep(RETRY).await,
                Err(e) => {
                    tracing::warn!(provider, "cannot take a slot of the fleet's limit: {e}");
                    return None;
                }
            }
        };
        let renew = tokio::spawn(renew(self.slots.clone(), scope.clone(), slot, holder.clone(), self.lease));
        Some(FleetSlot { slots: self.slots.clone(), scope, slot, holder, renew })
    }
}

impl FleetLimits {
    /// Waits while the fleet has `provider` paused: it answered "retry after" to a
    /// call of any process on the database.
    pub async fn wait_while_paused(&self, provider: &str) {
        let scope = format!("provider:{provider}");
        loop {
            match self.slots.paused_until(&scope, now_ms()).await {
                Ok(Some(until)) => {
                    tracing::debug!(provider, until, "waiting out the fleet's pause of the provider");
                    tokio::time::sleep(Duration::from_millis(until.saturating_sub(now_ms()).max(1))).await;
                }
                Ok(None) => return,
                Err(e) => return tracing::warn!(provider, "cannot read the fleet's pauses: {e}"),
            }
        }
    }

    /// Pauses `provider` for `wait` for every process on the database.
    pub async fn pause(&self, provider: &str, wait: Duration) {
        let until = now_ms() + wait.as_millis() as u64;
        if let Err(e) = self.slots.pause(&format!("provider:{provider}"), until).await {
            tracing::warn!(provider, "cannot pause the provider for the fleet: {e}");
        }
    }
}

/// Renews a slot's lease every third of it while the node runs.
async fn renew(slots: Arc<dyn RunQueue>, scope: String, slot: u32, holder: String, lease: Duration) {
    loop {
        tokio::time::sleep(lease / 3).await;
        match slots.renew_slot(&scope, slot, &holder, now_ms(), lease.as_millis() as u64).await {
            Ok(true) => {}
            Ok(false) => return tracing::warn!(scope, slot, "a slot of the fleet's limit was lost"),
            Err(e) => tracing::warn!(scope, slot, "cannot renew a slot of the fleet's limit: {e}"),
        }
    }
}

impl Drop for FleetSlot {
    fn drop(&mut self) {
        self.renew.abort();
        let (slots, scope, slot, holder) = (self.slots.clone(), self.scope.clone(), self.slot, self.holder.clone());
        // Given back off the dropping thread; if the runtime is gone, the lease lapses.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(e) = slots.release_slot(&scope, slot, &holder).await {
                    tracing::warn!(scope, slot, "cannot give back a slot of the fleet's limit: {e}");
                }
            });
        }
    }
}
