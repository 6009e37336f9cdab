//! The engine: plans a conclave, records the run, and schedules its nodes on tokio.
//!
//! Layout: `plan.rs` resolves a conclave into an executable plan, `scheduler.rs`
//! drives one run, `agent.rs` runs one agent node with validation and retries,
//! `bus.rs` numbers, stores and publishes events.
//!
//! **Invariant:** the engine knows [`Provider`](crate::providers::Provider) and
//! [`RunStore`] only; it knows nothing of HTTP, SQL or any vendor.

pub mod agent;
pub mod bus;
pub mod plan;
pub mod scheduler;

use conclave_shared::{Conclave, RunEvent};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

pub use agent::{AgentContext, NodeError};
pub use bus::{EventBus, StreamSink, now_ms};
pub use plan::{Plan, PlanContext, build_plan};
pub use scheduler::RunOutcome;

use crate::providers::ProviderRegistry;
use crate::providers::pricing::PriceTable;
use crate::providers::retry::RetryPolicy;
use crate::schema::SchemaCatalog;
use crate::store::{NewRun, RunStore, StoreError};
use crate::tools::ToolRunner;

/// Engine-wide limits.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Nodes running at once in one run (a conclave may lower it).
    pub max_concurrency: usize,
    /// Concurrent calls per provider (a conclave may set its own).
    pub provider_limits: HashMap<String, usize>,
    /// Timeout for nodes that set none.
    pub node_timeout: Option<Duration>,
    /// How provider faults are retried.
    pub retry: RetryPolicy,
    /// Prices for the cost of each call.
    pub prices: Arc<PriceTable>,
    /// The tools agents may call, if any.
    pub tools: Option<Arc<dyn ToolRunner>>,
    /// For review runs: the files of the change (findings may only cite these).
    pub changed_files: Option<Vec<String>>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            max_concurrency: 16,
            provider_limits: HashMap::new(),
            node_timeout: Some(Duration::from_secs(600)),
            retry: RetryPolicy::default(),
            prices: Arc::new(PriceTable::load(None)),
            tools: None,
            changed_files: None,
        }
    }
}

/// Why a run could not start.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The conclave's graph is unusable.
    #[error("invalid conclave: {0}")]
    Invalid(String),
    /// An agent's provider is unknown or not configured.
    #[error("node `{node_id}`: {message}")]
    Provider {
        /// The agent node.
        node_id: String,
        /// What is wrong and what to do.
        message: String,
    },
    /// An agent's output schema is unusable.
    #[error("node `{node_id}`: {message}")]
    Schema {
        /// The agent node.
        node_id: String,
        /// What is wrong.
        message: String,
    },
    /// The run could not be recorded.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Runs conclaves.
#[derive(Debug, Clone)]
pub struct Engine {
    providers: Arc<ProviderRegistry>,
    store: Arc<dyn RunStore>,
    schemas: Arc<SchemaCatalog>,
    config: EngineConfig,
}

/// A run in progress.
#[derive(Debug)]
pub struct RunHandle {
    run_id: String,
    bus: Arc<EventBus>,
    cancel: CancellationToken,
    events: Option<broadcast::Receiver<RunEvent>>,
    task: tokio::task::JoinHandle<RunOutcome>,
}

impl RunHandle {
    /// The run's id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Every event of the run from the first one; `None` after the first call.
    pub fn take_events(&mut self) -> Option<broadcast::Receiver<RunEvent>> {
        self.events.take()
    }

    /// Events published from now on (earlier ones are in the store).
    pub fn subscribe(&self) -> broadcast::Receiver<RunEvent> {
        self.bus.subscribe()
    }

    /// The run's event bus, for subscribers that come and go while it runs.
    pub fn bus(&self) -> Arc<EventBus> {
        self.bus.clone()
    }

    /// A token that cancels the run when triggered.
    pub fn cancel_token(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// Cancels the run; in-flight provider calls are dropped, not awaited.
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// Waits for the run to end.
    pub async fn wait(self) -> RunOutcome {
        let run_id = self.run_id.clone();
        self.task.await.unwrap_or_else(|err| RunOutcome {
            run_id,
            status: conclave_shared::RunStatus::Failed,
            failed_node: None,
            error_kind: Some("internal".into()),
            error: Some(format!("the run's task stopped unexpectedly: {err}")),
            outputs: Default::default(),
            result: Value::Null,
        })
    }
}

impl Engine {
    /// An engine over these providers, store and schema catalog.
    pub fn new(
        providers: ProviderRegistry,
        store: Arc<dyn RunStore>,
        schemas: SchemaCatalog,
        config: EngineConfig,
    ) -> Engine {
        Engine { providers: Arc::new(providers), store, schemas: Arc::new(schemas), config }
    }

    /// The store runs are recorded in.
    pub fn store(&self) -> &Arc<dyn RunStore> {
        &self.store
    }

    /// Checks that `conclave` can run (graph, providers, schemas) without starting it.
    pub fn plan(&self, conclave: &Conclave) -> Result<Plan, EngineError> {
        let limits = PlanContext {
            provider_limits: self.config.provider_limits.clone(),
            node_timeout: self.config.node_timeout,
            tools: self.config.tools.clone(),
            changed_files: self.config.changed_files.clone(),
        };
        build_plan(conclave, &self.providers, &self.schemas, &limits)
    }

    /// Plans, records and starts a run; returns at once with a handle.
    pub async fn start(&self, conclave: Conclave, input: Value) -> Result<RunHandle, EngineError> {
        let plan = Arc::new(self.plan(&conclave)?);
        let run_id = uuid::Uuid::now_v7().to_string();
        let new_run = NewRun {
            id: run_id.clone(),
            conclave: conclave.clone(),
            input: input.clone(),
            created_ms: now_ms(),
            owner: owner_token(),
        };
        self.store.create_run(&new_run).await?;
        let bus = Arc::new(EventBus::new(run_id.clone(), self.store.clone()));
        let events = bus.subscribe();
        let cancel = CancellationToken::new();
        let max = conclave
            .settings
            .max_concurrency
            .map_or(self.config.max_concurrency, |m| (m as usize).min(self.config.max_concurrency));
        let agents = AgentContext {
            bus: bus.clone(),
            retry: self.config.retry,
            prices: self.config.prices.clone(),
            tools: self.config.tools.clone(),
        };
        let task = tokio::spawn(scheduler::drive(plan, agents, input, max, conclave.id.clone(), cancel.clone()));
        Ok(RunHandle { run_id, bus, cancel, events: Some(events), task })
    }
}

/// Identifies this process so a later one can tell whether it is still alive:
/// `pid:<pid>:<start time>` on Linux (the start time guards against pid reuse).
pub fn owner_token() -> String {
    let pid = std::process::id();
    format!("pid:{pid}:{}", process_start_time(pid).unwrap_or_default())
}

/// Whether the process named by an [`owner_token`] is still running.
pub fn owner_alive(owner: &str) -> bool {
    let mut parts = owner.splitn(3, ':');
    let (Some("pid"), Some(pid), start) = (parts.next(), parts.next(), parts.next()) else { return false };
    let Ok(pid) = pid.parse::<u32>() else { return false };
    if pid == std::process::id() {
        return true;
    }
    match process_start_time(pid) {
        Some(actual) => start.is_none_or(|s| s.is_empty() || s == actual),
        None => false,
    }
}

/// Field 22 of `/proc/<pid>/stat`: the process start time in clock ticks after boot.
fn process_start_time(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may contain spaces; fields after it follow the last ')'.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19).map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_made_up_one_is_not() {
        assert!(owner_alive(&owner_token()));
        assert!(!owner_alive("pid:4294967000:1"));
        assert!(!owner_alive("garbage"));
        let pid = std::process::id();
        let ppid_token = format!("pid:{pid}:{}", process_start_time(pid).expect("own stat"));
        assert!(owner_alive(&ppid_token));
    }
}
