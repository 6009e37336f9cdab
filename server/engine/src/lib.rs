//! The engine: plans a checked conclave, records the run, and schedules its nodes on
//! tokio under limits that hold across every run of the engine.
//!
//! Layout: `plan.rs` turns a [`CheckedConclave`] into an executable plan,
//! `scheduler/` drives one run (`nested.rs`: loops, conclave nodes, approvals), `reuse.rs` checks a run from a node against the
//! earlier run whose outputs it reuses, `agent.rs` runs one agent node with validation and
//! retries, `input.rs` is an agent's typed input and how it is shown to the model,
//! `fit.rs` fits it to a provider's context window (the embedded model's),
//! `policy.rs` the hook through which a run's output policy (code review) shapes
//! schemas and compares siblings, `policy_call.rs` how a hook's panic becomes a typed
//! node failure, `limits.rs` the engine-wide and per-run
//! concurrency limits, `bus.rs` numbers, stores and publishes events, `dialects.rs` which
//! structured-output dialect each server takes, `probe.rs` asks a provider which one
//! it speaks, `observe.rs`
//! the metrics and spans an operator sees.
//!
//! **Invariant:** the engine knows the `Provider`, `ToolRunner` and `RunStore` traits
//! and the [`OutputPolicy`] hook only; it knows nothing of HTTP, SQL, any vendor or
//! code review.

pub mod agent;
pub mod approval;
pub mod budget;
pub mod budget_exceeded;
pub mod bus;
pub mod cache;
pub mod command;
pub mod command_sandbox;
pub mod config;
pub mod dialects;
pub mod fit;
pub mod fleet;
pub mod input;
pub mod limits;
pub mod mcp_servers;
pub mod node_error;
pub mod observe;
pub mod parts;
pub mod plan;
pub mod policy;
pub mod policy_call;
pub mod probe;
pub mod repeat;
pub mod reuse;
pub mod route;
pub mod samples;
pub mod scheduler;
pub mod start_error;
pub mod warmup;

use conclave_catalog::CheckedConclave;
use conclave_core::{NewRun, ProviderRegistry, RunStore, now_ms, owner_token};
use conclave_shared::{ErrorKind, EventKind, RunEvent, RunStatus};
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

pub use agent::AgentContext;
pub use approval::{Decision, DecisionError, cancel_waiting, decide};
pub use budget::{BudgetExceeded, Ledger};
pub use bus::{BusSink, EventBus};
pub use config::{Commands, EngineConfig, MAX_SAMPLES, PARTS_FIELD, Parts, RunOptions, Samples};
pub use fleet::FleetLimits;
pub use input::RECORD_PREFIX;
pub use input::{AgentInput, ComparisonHeadings};
pub use limits::Limits;
pub use node_error::NodeError;
pub use plan::{AgentPlan, Plan, PlanNode, build_plan};
pub use policy::{OutputPolicy, SiblingOutput};
pub use policy_call::PolicyFailure;
pub use reuse::Reuse;
pub use scheduler::{Resumed, RunOutcome};
pub use start_error::StartError;

/// Runs conclaves. Clones share the same limits, so every run of one engine (and of
/// its clones) counts against them together.
#[derive(Debug, Clone)]
pub struct Engine {
    providers: Arc<ProviderRegistry>,
    store: Arc<dyn RunStore>,
    config: EngineConfig,
    limits: Arc<Limits>,
}

/// Abandons a run from anywhere: see [`RunHandle::abandon`].
#[derive(Debug, Clone)]
pub struct Abandoner {
    task: tokio::task::AbortHandle,
    bus: Arc<EventBus>,
}

impl Abandoner {
    /// Stops the run's task and its event writes.
    pub fn abandon(&self) {
        self.task.abort();
        self.bus.abandon();
    }
}

/// A run in progress.
#[derive(Debug)]
pub struct RunHandle {
    run_id: String,
    bus: Arc<EventBus>,
    cancel: CancellationToken,
    events: Option<broadcast::Receiver<Arc<RunEvent>>>,
    task: tokio::task::JoinHandle<RunOutcome>,
}

impl RunHandle {
    /// The run's id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Every event of the run from the first one; `None` after the first call.
    pub fn take_events(&mut self) -> Option<broadcast::Receiver<Arc<RunEvent>>> {
        self.events.take()
    }

    /// Events published from now on (earlier ones are in the store).
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<RunEvent>> {
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

    /// A handle that abandons the run like [`RunHandle::abandon`], usable while
    /// another part of the program waits for the run.
    pub fn abandoner(&self) -> Abandoner {
        Abandoner { task: self.task.abort_handle(), bus: self.bus.clone() }
    }

    /// Stops working on the run without ending it: its tasks are dropped, events not
    /// yet written are dropped, and no `run_finished` is written, so that the worker
    /// that took it over can finish it. For a worker whose lease was lost.
    pub fn abandon(self) {
        self.abandoner().abandon();
    }

    /// Waits for the run to end.
    pub async fn wait(self) -> RunOutcome {
        let run_id = self.run_id.clone();
        self.task.await.unwrap_or_else(|err| RunOutcome {
            run_id,
            status: RunStatus::Failed,
            failed_node: None,
            error_kind: Some(ErrorKind::Internal),
            error: Some(format!("the run's task stopped unexpectedly: {err}")),
            outputs: Default::default(),
            result: Value::Null,
        })
    }
}

impl Engine {
    /// An engine over these providers and store. Without a redactor of its own, the
    /// config takes the registry's, so commands' output loses the same secrets as
    /// the providers'.
    pub fn new(providers: ProviderRegistry, store: Arc<dyn RunStore>, mut config: EngineConfig) -> Engine {
        if config.redactor.is_none() {
            config.redactor = providers.redactor();
        }
        let limits =
            Arc::new(Limits::new(config.max_concurrency, &config.provider_limits).with_fleet(config.fleet.clone()));
        Engine { providers: Arc::new(providers), store, config, limits }
    }

    /// Whether its command nodes may run unconfined where the kernel cannot
    /// confine them.
    pub fn allows_unsandboxed(&self) -> bool {
        self.config.allow_unsandboxed
    }

    /// The store runs are recorded in.
    pub fn store(&self) -> &Arc<dyn RunStore> {
        &self.store
    }

    /// The providers runs may use.
    pub fn providers(&self) -> &ProviderRegistry {
        &self.providers
    }

    /// Checks that `conclave` can run here (providers, output contracts, tools)
    /// without starting it.
    pub fn plan(&self, conclave: &CheckedConclave, options: &RunOptions) -> Result<Plan, StartError> {
        let Some(policy) = options.policy.clone() else {
            return build_plan(conclave, &self.providers, &self.config, options);
        };
        // Planning asks the policy to shape each agent's schema; a panic there is kept
        // and refuses the run.
        let guard = Arc::new(policy_call::ShapingGuard::new(policy));
        let guarded = RunOptions { policy: Some(guard.clone()), ..options.clone() };
        let plan = build_plan(conclave, &self.providers, &self.config, &guarded);
        match guard.failure() {
            Some(failure) => Err(failure.into()),
            None => plan,
        }
    }

    /// [`Engine::plan`] on a blocking thread, as async code must call it: checking a
    /// provider's model may read (and the first time hash) its file.
    pub async fn plan_off_thread(&self, conclave: &CheckedConclave, options: &RunOptions) -> Result<Plan, StartError> {
        let (engine, conclave, options) = (self.clone(), conclave.clone(), options.clone());
        tokio::task::spawn_blocking(move || engine.plan(&conclave, &options))
            .await
            .map_err(|e| StartError::Internal(e.to_string()))?
    }

    /// Plans, records and starts a run; returns at once with a handle. With
    /// `options.reuse`, only the node run from and its descendants run; the run is
    /// refused before anything is recorded when the earlier run cannot be reused.
    pub async fn start(
        &self,
        conclave: CheckedConclave,
        input: Value,
        options: RunOptions,
    ) -> Result<RunHandle, StartError> {
        let reused = options.reuse.as_ref().map(|r| reuse::resolve(conclave.conclave(), r)).transpose()?;
        let plan = Arc::new(self.plan_off_thread(&conclave, &options).await?);
        let mut conclave = conclave.conclave().clone();
        // The run's budget is decided once and stored with the run, where a worker
        // that takes it up again and its report find it.
        conclave.settings.budget =
            conclave_shared::Budget::tighter(conclave.settings.budget.as_ref(), options.budget.as_ref());
        let ledger = Ledger::for_plan(conclave.settings.budget, &plan, &self.config.prices)?.map(Arc::new);
        let run_id = uuid::Uuid::now_v7().to_string();
        let new_run = NewRun {
            id: run_id.clone(),
            conclave: conclave.clone(),
            input: input.clone(),
            created_ms: now_ms(),
            owner: owner_token(),
        };
        if let Err(error) = self.store.create_run(&new_run).await {
            observe::store_failed("create_run");
            return Err(error.into());
        }
        let bus = Arc::new(EventBus::new(run_id.clone(), self.store.clone()));
        let launch = Launch { plan, conclave: &conclave, input, options, reused, resumed: None, ledger };
        Ok(self.launch(bus, launch))
    }

    /// Runs the recorded run `run_id` (status running: a worker claimed it). A run
    /// with no events yet starts as [`Engine::start`] would; one its process left
    /// running (a worker that died) is taken up again: nodes that succeeded keep
    /// their stored outputs and do not run again, failed ones stay failed, and the
    /// others run, with events continuing after the last stored one, beginning with
    /// `run_resumed`. `conclave` must be the run's own.
    pub async fn resume(
        &self,
        conclave: CheckedConclave,
        run_id: &str,
        options: RunOptions,
    ) -> Result<RunHandle, StartError> {
        let refuse = |reason: String| StartError::CannotResume { run_id: run_id.to_string(), reason };
        let record = self.store.get_run(run_id).await?.ok_or_else(|| refuse("the store has no such run".into()))?;
        match record.summary.status {
            RunStatus::Running | RunStatus::Waiting => {}
            RunStatus::Queued => return Err(refuse("it is still queued: a worker claims it first".into())),
            ended => return Err(refuse(format!("it ended `{}`", ended.as_str()))),
        }
        if record.conclave.id != conclave.conclave().id {
            return Err(refuse(format!("it is a run of `{}`, not `{}`", record.conclave.id, conclave.conclave().id)));
        }
        let events = self.store.events(run_id, 0).await?;
        let failures = events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::NodeFailed { node_id, error_kind, .. } => Some((node_id.clone(), *error_kind)),
                EventKind::ApprovalDecided { node_id, approved: false, .. } => {
                    Some((node_id.clone(), ErrorKind::Rejected))
                }
                _ => None,
            })
            .collect();
        let last_seq = events.last().map_or(0, |e| e.seq);
        let plan = Arc::new(self.plan_off_thread(&conclave, &options).await?);
        let bus = Arc::new(EventBus::resuming(run_id.to_string(), self.store.clone(), last_seq));
        // The budget stored with the run, starting from what its events say was spent.
        let ledger = Ledger::for_plan(record.conclave.settings.budget, &plan, &self.config.prices)?
            .map(|ledger| Arc::new(ledger.resumed_from(&events)));
        let resumed = (!events.is_empty()).then_some(Resumed { nodes: record.nodes, failures });
        let (conclave, input) = (conclave.conclave(), record.input);
        let launch = Launch { plan, conclave, input, options, reused: None, resumed, ledger };
        Ok(self.launch(bus, launch))
    }

    /// Spawns the scheduler of a recorded run.
    fn launch(&self, bus: Arc<EventBus>, launch: Launch<'_>) -> RunHandle {
        let Launch { plan, conclave, input, options, reused, resumed, ledger } = launch;
        let no_cache = options.no_cache;
        let events = bus.subscribe();
        let cancel = CancellationToken::new();
        let limits = self.limits.for_run(&conclave.settings);
        let servers = self.run_servers(&plan, &options).map(Arc::new);
        let agents = AgentContext {
            servers: servers.clone(),
            bus: bus.clone(),
            retry: self.config.retry,
            prices: self.config.prices.clone(),
            tools: options.tools,
            policy: options.policy,
            workdir: options.workdir,
            capture_content: self.config.capture_message_content,
            fleet: self.config.fleet.clone(),
            dialects: Arc::new(dialects::DialectBook::new(self.store.clone())),
            warmups: Arc::new(warmup::Warmups::for_plan(&plan)),
            budget: ledger,
        };
        let run_id = bus.run_id().to_string();
        let span = observe::workflow_span(&conclave.id, &run_id);
        let metrics = observe::RunMetrics::start(&conclave.id);
        let conclave_id = conclave.id.clone();
        let cache = (!no_cache).then(|| self.store.clone());
        let parts = options.parts;
        let start =
            scheduler::Start { plan, agents, input, limits, conclave_id, reused, resumed, metrics, cache, parts };
        let drive = scheduler::drive(start, cancel.clone());
        // The run's MCP servers stop with it, however it ended; an aborted run drops
        // them, which kills what they started.
        let run = async move {
            let outcome = drive.await;
            if let Some(servers) = servers {
                servers.stop().await;
            }
            outcome
        };
        let task = tokio::spawn(run.instrument(span));
        RunHandle { run_id, bus, cancel, events: Some(events), task }
    }

    /// The MCP servers of a run of `plan`, when one of its agents lists an MCP tool:
    /// a stdio server runs in the repository under review, else in the workspace.
    fn run_servers(&self, plan: &Plan, options: &RunOptions) -> Option<mcp_servers::RunServers> {
        let uses_mcp = plan.all_nodes().iter().any(|n| n.agent.as_ref().is_some_and(|a| !a.mcp_tools.is_empty()))
            || plan.all_nodes().iter().any(|n| n.child.is_some());
        let host = self.providers.tool_servers().filter(|_| uses_mcp)?;
        let workspace = options.commands.as_ref().and_then(|c| c.workspace.clone());
        let place = conclave_core::ServerPlace {
            workdir: options.workdir.clone().or_else(|| workspace.clone()),
            workspace,
            allow_unsandboxed: self.config.allow_unsandboxed,
            redactor: self.config.redactor.clone(),
            label: "run".into(),
        };
        Some(mcp_servers::RunServers::new(host, place))
    }
}

/// What [`Engine::launch`] starts.
struct Launch<'a> {
    plan: Arc<Plan>,
    conclave: &'a conclave_shared::Conclave,
    input: Value,
    options: RunOptions,
    reused: Option<reuse::Reused>,
    resumed: Option<Resumed>,
    ledger: Option<Arc<Ledger>>,
}
