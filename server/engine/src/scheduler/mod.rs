//! The scheduler of one run: starts each node once all of its upstream nodes are done,
//! runs independent agents concurrently under the run's limits, skips the descendants
//! of failed nodes, and stops everything promptly on cancellation. In a run from a
//! node, the nodes it does not re-run take their earlier output when their turn
//! comes (`node_reused`), so events keep the graph's order.

use conclave_core::{RunStore, now_ms};
use conclave_shared::{
    CacheSetting, ErrorKind, EventKind, FindingsCheck, NodeKind, NodeOutput, NodeState, NodeSummary, RunStatus, Usage,
};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, Span};

mod nested;

use crate::agent::{AgentContext, run_agent};
use crate::bus::EventBus;
use crate::cache;
use crate::command;
use crate::config::Parts;
use crate::fit;
use crate::input::AgentInput;
use crate::limits::RunLimits;
use crate::node_error::NodeError;
use crate::observe::{self, RunMetrics};
use crate::parts::{self, Partitioned};
use crate::plan::{AgentPlan, Plan};
use crate::policy::SiblingOutput;
use crate::policy_call::{self, PolicyFailure};
use crate::repeat;
use crate::reuse::{Reused, ReusedNode};
use crate::route;
use crate::samples::run_sampled;

/// How a run ended.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// The run.
    pub run_id: String,
    /// Final status.
    pub status: RunStatus,
    /// The first node that failed.
    pub failed_node: Option<String>,
    /// Its error class.
    pub error_kind: Option<ErrorKind>,
    /// Why the run failed or stopped.
    pub error: Option<String>,
    /// Outputs of every node that succeeded, by id.
    pub outputs: BTreeMap<String, NodeOutput>,
    /// The run's result: the output node's value (or all output nodes' values by id).
    pub result: Value,
}

type TaskResult = (usize, Result<(NodeOutput, Usage), NodeError>, u64);

/// What a run starts with.
#[derive(Debug)]
pub struct Start {
    /// The plan.
    pub plan: Arc<Plan>,
    /// What its agents share.
    pub agents: AgentContext,
    /// The run input.
    pub input: Value,
    /// The run's limits.
    pub limits: RunLimits,
    /// The conclave's id.
    pub conclave_id: String,
    /// The outputs taken from an earlier run, in a run from a node.
    pub reused: Option<Reused>,
    /// The run's place in the metrics.
    pub(crate) metrics: RunMetrics,
    /// What the nodes of a run taken up again had done.
    pub resumed: Option<Resumed>,
    /// Where cached nodes look up and keep their outputs; `None` when the run
    /// ignores the cache.
    pub cache: Option<Arc<dyn RunStore>>,
    /// The agents that run once per part when the run input is partitioned.
    pub parts: Option<Parts>,
}

/// A run taken up again after the process running it stopped.
#[derive(Debug)]
pub struct Resumed {
    /// Its nodes as stored.
    pub nodes: Vec<NodeSummary>,
    /// The class of each stored node failure, by node.
    pub failures: HashMap<String, ErrorKind>,
}

struct Run {
    plan: Arc<Plan>,
    agents: AgentContext,
    bus: Arc<EventBus>,
    input: Value,
    limits: RunLimits,
    /// Inputs of each node not yet resolved (succeeded, failed, or cut off by a route).
    waiting: Vec<usize>,
    /// Inputs of each node that succeeded on a branch that was taken.
    live: Vec<usize>,
    state: Vec<NodeState>,
    outputs: Vec<Option<NodeOutput>>,
    ready: Vec<usize>,
    tasks: JoinSet<TaskResult>,
    task_nodes: HashMap<tokio::task::Id, usize>,
    first_failure: Option<(usize, ErrorKind, String)>,
    /// The earlier run outputs are taken from, and what each reused node takes.
    reused: (String, Vec<Option<ReusedNode>>),
    cache: Option<Arc<dyn RunStore>>,
    /// What events put before each node's id (`loop/2/` in a loop's second iteration).
    scope: String,
    /// What the nodes without an upstream node receive besides the run input (a loop
    /// body's first nodes: the loop's inputs and its iteration).
    outer: Vec<(String, Value)>,
    /// For loops of a run taken up again: the last iteration they completed, and its
    /// outputs, to go on from.
    loop_starts: HashMap<usize, (u32, Map<String, Value>)>,
    /// For each cached node that is running: the key its output will be kept under.
    cache_keys: Vec<Option<(String, CacheSetting)>>,
    /// Each part's input, when the run input is partitioned and names agents of this
    /// plan (never in a loop's body or a nested conclave).
    parted: Option<Arc<Partitioned>>,
}

/// Drives the run to its end and emits `run_finished`.
pub async fn drive(start: Start, cancel: CancellationToken) -> RunOutcome {
    let Start { plan, agents, input, limits, conclave_id, reused, resumed, metrics, cache, parts } = start;
    // Every node receives the run input without its records and its parts; the agents
    // named run once per part.
    let input = crate::input::without_records(input);
    let (input, parted) = match parts::partition(&input, parts.as_ref()) {
        Some((shared, parted)) => (shared, Some(Arc::new(parted))),
        None => (input, None),
    };
    let mut run = Run::new(plan, agents, input, limits, cache, String::new(), Vec::new());
    run.parted = parted;
    if let Some(Reused { from_run, mut nodes }) = reused {
        run.reused = (from_run, run.plan.nodes.iter().map(|p| nodes.remove(&p.id)).collect());
    }
    match resumed {
        Some(resumed) => run.restore(resumed).await,
        None => run.announce(conclave_id).await,
    }
    let cancelled = tokio::select! {
        biased;
        _ = cancel.cancelled() => true,
        () = run.run_nodes() => false,
    };
    if cancelled {
        // Dropping the nodes' tasks (a loop's, with its body's) stops them.
        run.tasks.abort_all();
        while run.tasks.join_next().await.is_some() {}
    }
    run.end(cancelled, metrics).await
}

impl Run {
    /// A run of `plan` whose events name its nodes under `scope` (a loop's body in
    /// one iteration: `loop/2/`), the nodes without an upstream node in `plan`
    /// receiving `outer` as well.
    fn new(
        plan: Arc<Plan>,
        agents: AgentContext,
        input: Value,
        limits: RunLimits,
        cache: Option<Arc<dyn RunStore>>,
        scope: String,
        outer: Vec<(String, Value)>,
    ) -> Run {
        let n = plan.nodes.len();
        Run {
            waiting: plan.predecessors.iter().map(Vec::len).collect(),
            live: vec![0; n],
            state: vec![NodeState::Queued; n],
            outputs: vec![None; n],
            ready: (0..n).rev().filter(|&i| plan.predecessors[i].is_empty()).collect(),
            plan,
            bus: agents.bus.clone(),
            agents,
            input,
            limits,
            tasks: JoinSet::new(),
            task_nodes: HashMap::new(),
            first_failure: None,
            reused: (String::new(), vec![None; n]),
            cache,
            cache_keys: vec![None; n],
            scope,
            outer,
            loop_starts: HashMap::new(),
            parted: None,
        }
    }

    /// The id events give node `i`: its id under the run's scope.
    fn scoped(&self, i: usize) -> String {
        format!("{}{}", self.scope, self.plan.nodes[i].id)
    }

    /// Starts every node as its inputs come ready and takes each result, until no
    /// node is left to start or running. Boxed: a loop's task runs its body with it,
    /// so its future holds itself.
    fn run_nodes(&mut self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            loop {
                while let Some(i) = self.ready.pop() {
                    self.start(i).await;
                }
                let Some(joined) = self.tasks.join_next_with_id().await else { break };
                match joined {
                    Ok((_, (i, result, duration_ms))) => self.finish(i, result, duration_ms).await,
                    Err(err) => {
                        let Some(&i) = self.task_nodes.get(&err.id()) else { continue };
                        let stopped = NodeError::Internal(format!("the node's task stopped unexpectedly: {err}"));
                        self.finish(i, Err(stopped), 0).await;
                    }
                }
            }
        })
    }

    /// Emits the start of a new run: `run_started`, then each agent's lowering.
    async fn announce(&self, conclave_id: String) {
        let nodes = self.plan.all_nodes();
        self.bus.emit(EventKind::RunStarted { conclave_id, node_count: nodes.len() }).await;
        for node in nodes {
            let Some(agent) = node.agent.as_ref() else { continue };
            if let Some(contract) = agent.contract.as_ref() {
                let dialect = match &agent.dialects {
                    Some(d) => Some(self.agents.dialects.current(&agent.config.provider, &d.endpoint, d.setting).await),
                    None => None,
                };
                let event = EventKind::SchemaLowered {
                    node_id: node.id.clone(),
                    target: contract.target.clone(),
                    native: contract.native.is_some(),
                    notes: contract.notes.clone(),
                    findings_field: contract.findings_field.clone(),
                    dialect,
                };
                self.bus.emit(event).await;
            }
        }
    }

    /// Takes up a run where its stored nodes left it: succeeded nodes keep their
    /// outputs, failed ones stay failed (their descendants skipped), nodes a route
    /// cut off stay skipped, the rest run.
    async fn restore(&mut self, resumed: Resumed) {
        let mut kept = Vec::new();
        let mut failed = Vec::new();
        let mut routed_out = Vec::new();
        // Every stored state first, so that releasing inputs below finds them.
        for i in 0..self.plan.nodes.len() {
            let id = self.plan.nodes[i].id.clone();
            let Some(stored) = resumed.nodes.iter().find(|n| n.node_id == id) else { continue };
            match (stored.state, &stored.output) {
                (NodeState::Succeeded, Some(output)) => {
                    self.state[i] = NodeState::Succeeded;
                    self.outputs[i] = Some(output.clone());
                    kept.push(i);
                }
                (NodeState::Failed, _) => {
                    self.state[i] = NodeState::Failed;
                    let kind = resumed.failures.get(&id).copied().unwrap_or(ErrorKind::Internal);
                    let message = stored.error.clone().unwrap_or_else(|| "failed before the run was resumed".into());
                    self.first_failure.get_or_insert((i, kind, message));
                    failed.push(i);
                }
                (NodeState::Skipped, _) => {
                    self.state[i] = NodeState::Skipped;
                    if stored.routed_out {
                        routed_out.push(i);
                    }
                }
                // Still undecided: it waits again, and the run parks again.
                (NodeState::Waiting, _) => self.state[i] = NodeState::Waiting,
                _ => {}
            }
        }
        // A loop that had not ended goes on after the last iteration it completed.
        for i in 0..self.plan.nodes.len() {
            let Some(repeat) = self.plan.nodes[i].repeat.as_ref().filter(|_| self.state[i] == NodeState::Queued) else {
                continue;
            };
            if let Some(done) = repeat::completed(&self.scope, &self.plan.nodes[i].id, &repeat.body, &resumed.nodes) {
                self.loop_starts.insert(i, done);
            }
        }
        let kept_ids = kept.iter().map(|&i| self.plan.nodes[i].id.clone()).collect();
        self.bus.emit(EventKind::RunResumed { kept: kept_ids }).await;
        for i in kept {
            self.release_from(i).await;
        }
        for i in routed_out {
            self.release(i, |_| false).await;
        }
        for i in failed {
            self.skip_descendants(i).await;
        }
        let n = self.plan.nodes.len();
        self.ready = (0..n).rev().filter(|&i| self.waiting[i] == 0 && self.state[i] == NodeState::Queued).collect();
    }

    /// Starts node `i`, whose inputs are all ready (or reuses its earlier output).
    async fn start(&mut self, i: usize) {
        let plan = self.plan.clone();
        let node = &plan.nodes[i];
        if let Some(reused) = self.reused.1[i].take() {
            return self.reuse(i, reused).await;
        }
        match node.kind {
            NodeKind::Trigger => {
                self.bus.emit(EventKind::NodeStarted { node_id: self.scoped(i), input: None }).await;
                self.finish(i, Ok((NodeOutput::Json(self.input.clone()), Usage::default())), 0).await;
            }
            NodeKind::Output => {
                self.bus.emit(EventKind::NodeStarted { node_id: self.scoped(i), input: None }).await;
                if let Err(failure) = self.check_findings(i).await {
                    return self.finish(i, Err(failure.into()), 0).await;
                }
                let collected = Value::Object(self.upstream_outputs(i, true).into_iter().collect());
                self.finish(i, Ok((NodeOutput::Json(collected), Usage::default())), 0).await;
            }
            NodeKind::Route => {
                self.bus.emit(EventKind::NodeStarted { node_id: self.scoped(i), input: None }).await;
                let document = Value::Object(self.upstream_outputs(i, true).into_iter().collect());
                let inputs = self.upstream_outputs(i, false).into_iter().collect();
                let output = match &node.route {
                    Some(config) => Ok((NodeOutput::Json(route::output(config, &document, inputs)), Usage::default())),
                    None => Err(NodeError::Internal("route node without a plan".into())),
                };
                self.finish(i, output, 0).await;
            }
            NodeKind::Command => self.start_command(i).await,
            NodeKind::Loop => self.start_loop(i).await,
            NodeKind::Approval => self.request_approval(i).await,
            NodeKind::Conclave => self.start_child(i).await,
            NodeKind::Agent => self.start_agent(i).await,
        }
    }

    /// Spawns agent node `i` (sampled or not) in its `invoke_agent` span.
    async fn start_agent(&mut self, i: usize) {
        let plan = self.plan.clone();
        let node = &plan.nodes[i];
        let Some(agent) = node.agent.clone() else {
            self.finish(i, Err(NodeError::Internal("agent node without a plan".into())), 0).await;
            return;
        };
        let comparison = match self.check_findings(i).await {
            Ok(comparison) => comparison,
            Err(failure) => return self.finish(i, Err(failure.into()), 0).await,
        };
        let input = AgentInput {
            run_input: self.input.clone(),
            // The run input is already `run_input`; a trigger's output would repeat it.
            upstream: self.upstream_outputs(i, false),
            comparison,
            headings: self.agents.policy.as_ref().map(|p| p.comparison_headings()).unwrap_or_default(),
            fitted: None,
        };
        // Fitted before the cache key is made: the key hashes the input the agent gets.
        let input = match fit::fit_input(&agent, &self.agents, &self.scoped(i), input, self.upstream_findings(i)).await
        {
            Ok(input) => input,
            Err(error) => return self.finish(i, Err(error), 0).await,
        };
        let part_inputs = self.parted.as_ref().filter(|p| p.parts.covers(&node.id)).map(|p| p.inputs.clone());
        if let Some(setting) = agent.config.cache.filter(|c| c.enabled() && agent.samples == 1 && part_inputs.is_none())
        {
            let message = input.render();
            let mcp_specs = match self.mcp_specs(&agent).await {
                Ok(specs) => specs,
                Err(error) => return self.finish(i, Err(error), 0).await,
            };
            let key = cache::agent_key(&agent, &message, &mcp_specs);
            if self.take_cached(i, &key, Some(message)).await {
                return;
            }
            self.cache_keys[i] = Some((key, setting));
        }
        let span = observe::agent_span(&node.id, &node.label, &agent.config.provider, &agent.config.model);
        let (agents, limits, node_id) = (self.agents.clone(), self.limits.clone(), self.scoped(i));
        let work = async move {
            let (result, duration_ms) = if let Some(inputs) = part_inputs {
                let started = Instant::now();
                let result = parts::run_parted(&agent, &agents, &limits, &node_id, (input, inputs)).await;
                (result, started.elapsed().as_millis() as u64)
            } else if agent.samples > 1 {
                let started = Instant::now();
                let result = run_sampled(agent, agents, limits, node_id, input).await;
                (result, started.elapsed().as_millis() as u64)
            } else {
                run_once(&agent, &agents, &limits, &node_id, input).await
            };
            observe::agent_finished(&Span::current(), &result);
            (i, result, duration_ms)
        };
        let handle = self.tasks.spawn(work.instrument(span));
        self.task_nodes.insert(handle.id(), i);
        self.state[i] = NodeState::Running;
    }

    /// Spawns command node `i`, which runs under one slot of the run's limits.
    async fn start_command(&mut self, i: usize) {
        let plan = self.plan.clone();
        let node = &plan.nodes[i];
        let Some(command) = node.command.clone() else {
            return self.finish(i, Err(NodeError::Internal("command node without a plan".into())), 0).await;
        };
        if let Some(setting) = command.config.cache.filter(|c| c.enabled()) {
            let input = json!({"input": self.input, "upstream": Map::from_iter(self.upstream_outputs(i, false))});
            let key = cache::command_key(&command, &input);
            if self.take_cached(i, &key, None).await {
                return;
            }
            self.cache_keys[i] = Some((key, setting));
        }
        let (bus, limits, node_id) = (self.bus.clone(), self.limits.clone(), self.scoped(i));
        let work = async move {
            let _permit = limits.acquire(None).await;
            bus.emit(EventKind::NodeStarted { node_id: node_id.clone(), input: None }).await;
            let started = Instant::now();
            let result = command::run(&command, &node_id, &bus).await;
            (i, result, started.elapsed().as_millis() as u64)
        };
        let handle = self.tasks.spawn(work);
        self.task_nodes.insert(handle.id(), i);
        self.state[i] = NodeState::Running;
    }

    /// Takes node `i`'s output from the cache when an unexpired one is kept under
    /// `key`: checked as a fresh output would be, then `node_cached`. False when
    /// there is none (or the run ignores the cache, or the lookup failed: the node
    /// then runs).
    async fn take_cached(&mut self, i: usize, key: &str, input: Option<String>) -> bool {
        let Some(store) = &self.cache else { return false };
        let hit = match store.cached_output(key, now_ms()).await {
            Ok(hit) => hit,
            Err(_) => {
                observe::store_failed("cached_output");
                None
            }
        };
        let Some(hit) = hit else { return false };
        if let Err(failure) = self.check_output(i, &hit.output).await {
            self.finish(i, Err(failure.into()), 0).await;
            return true;
        }
        let node_id = self.scoped(i);
        let event = EventKind::NodeCached { node_id, from_run: hit.run_id, output: hit.output.clone(), input };
        self.bus.emit(event).await;
        self.succeeded(i, hit.output).await;
        true
    }

    /// Keeps node `i`'s fresh output in the cache, when it is a cached node.
    async fn keep_cached(&mut self, i: usize, output: &NodeOutput) {
        let (Some(store), Some((key, setting))) = (&self.cache, self.cache_keys[i].take()) else { return };
        let entry = cache::entry(setting, output, self.bus.run_id(), &self.scoped(i));
        if store.cache_output(&key, &entry).await.is_err() {
            observe::store_failed("cache_output");
        }
    }

    /// The root property holding node `p`'s findings, when its output is
    /// findings-shaped: an agent's, or an analyzer lane's (a command read as findings).
    fn findings_field(&self, p: usize) -> Option<&str> {
        let node = &self.plan.nodes[p];
        match (&node.agent, &node.command) {
            (Some(agent), _) => agent.findings_field(),
            (None, Some(command)) if command.config.parse.findings_shaped() => Some("findings"),
            _ => None,
        }
    }

    /// Node `i`'s findings-shaped upstream nodes and the property holding their findings.
    fn upstream_findings(&self, i: usize) -> Vec<(String, String)> {
        let predecessors = &self.plan.predecessors[i];
        predecessors
            .iter()
            .filter_map(|&p| Some((self.plan.nodes[p].id.clone(), self.findings_field(p)?.to_string())))
            .collect()
    }

    /// Asks the run's policy to compare the outputs of `i`'s findings-shaped upstream
    /// agents and analyzer commands when there are two or more, and records the result; `None` when the
    /// check does not apply, an error when the policy failed to compare.
    async fn check_findings(&self, i: usize) -> Result<Option<FindingsCheck>, PolicyFailure> {
        let Some(policy) = self.agents.policy.clone() else { return Ok(None) };
        let owned: Vec<(String, Value, String)> = self.plan.predecessors[i]
            .iter()
            .filter_map(|&p| {
                let findings_field = self.findings_field(p)?;
                let NodeOutput::Json(output) = self.outputs[p].as_ref()? else { return None };
                Some((self.plan.nodes[p].id.clone(), output.clone(), findings_field.to_string()))
            })
            .collect();
        if owned.len() < 2 {
            return Ok(None);
        }
        // The policy may read the reviewed files to place findings: off the async threads.
        let check = policy_call::off_thread("compare", move || {
            let siblings: Vec<SiblingOutput<'_>> = owned
                .iter()
                .map(|(node_id, output, findings_field)| SiblingOutput { node_id, output, findings_field })
                .collect();
            policy.compare(&siblings)
        })
        .await?;
        let Some(check) = check else { return Ok(None) };
        let node_id = self.scoped(i);
        self.bus.emit(EventKind::FindingsChecked { node_id: node_id.clone(), check: check.clone() }).await;
        for contradiction in &check.contradictions {
            self.bus
                .emit(EventKind::ContradictionDetected {
                    node_id: node_id.clone(),
                    contradiction: contradiction.clone(),
                })
                .await;
        }
        Ok(Some(check))
    }

    /// The outputs of `i`'s upstream nodes, by node id, in edge order, with or
    /// without triggers. A first node of a loop's body or of a conclave a node runs
    /// (none upstream, or only the trigger) gets what the loop or the node passes in
    /// first.
    fn upstream_outputs(&self, i: usize, with_triggers: bool) -> Vec<(String, Value)> {
        let predecessors = &self.plan.predecessors[i];
        let first = predecessors.iter().all(|&p| self.plan.nodes[p].kind == NodeKind::Trigger);
        let outer = if first { self.outer.clone() } else { Vec::new() };
        let own = predecessors
            .iter()
            .filter(|&&p| with_triggers || self.plan.nodes[p].kind != NodeKind::Trigger)
            .filter_map(|&p| Some((self.plan.nodes[p].id.clone(), self.outputs[p].as_ref()?.to_input_value())));
        outer.into_iter().chain(own).collect()
    }

    /// Takes node `i`'s output from the earlier run instead of running it. The checks
    /// a fresh run makes on the way (comparing the node's sibling reviewers, checking
    /// an agent's counts) are made again, so the run's events and reports are complete.
    async fn reuse(&mut self, i: usize, reused: ReusedNode) {
        let checked = match self.check_findings(i).await {
            Ok(_) => self.check_output(i, &reused.output).await,
            Err(failure) => Err(failure),
        };
        if let Err(failure) = checked {
            return self.finish(i, Err(failure.into()), 0).await;
        }
        let event = EventKind::NodeReused {
            node_id: self.plan.nodes[i].id.clone(),
            from_run: self.reused.0.clone(),
            output: reused.output.clone(),
            input: reused.input,
        };
        self.bus.emit(event).await;
        self.succeeded(i, reused.output).await;
    }

    /// Asks the run's policy to check an agent's structured output (a Writer's
    /// counts against its findings) and records any mismatch; an error when the
    /// policy failed to check it.
    async fn check_output(&self, i: usize, output: &NodeOutput) -> Result<(), PolicyFailure> {
        if let (NodeOutput::Json(value), Some(policy)) = (output, &self.agents.policy)
            && self.plan.nodes[i].kind == NodeKind::Agent
        {
            let mismatches = policy_call::in_place("check_output", || policy.check_output(value))?;
            if !mismatches.is_empty() {
                let node_id = self.scoped(i);
                self.bus.emit(EventKind::CountMismatch { node_id, mismatches }).await;
            }
        }
        Ok(())
    }

    /// Keeps node `i`'s output and releases its successors: all of them, or for a
    /// route, those on the branch of the case it took.
    async fn succeeded(&mut self, i: usize, output: NodeOutput) {
        self.state[i] = NodeState::Succeeded;
        self.outputs[i] = Some(output);
        self.release_from(i).await;
    }

    /// Releases the successors of `i`, which succeeded: all of them, or for a route,
    /// those on the branch of the case it took.
    async fn release_from(&mut self, i: usize) {
        let plan = self.plan.clone();
        match (&plan.nodes[i].route, &self.outputs[i]) {
            (Some(_), Some(output)) => {
                let case = route::taken_case(output);
                self.release(i, |s| plan.takes(i, s, case.as_deref())).await
            }
            _ => self.release(i, |_| true).await,
        }
    }

    /// Resolves one input of each successor of `i`: live where `live(successor)`
    /// holds, cut off elsewhere. A successor whose inputs are all resolved runs when
    /// one of them is live, and is skipped by the route otherwise, which cuts off its
    /// own successors in turn; so a join waits only for branches that can still run.
    async fn release(&mut self, i: usize, live: impl Fn(usize) -> bool) {
        let plan = self.plan.clone();
        let mut resolved: Vec<(usize, usize, bool)> =
            plan.successors[i].iter().rev().map(|&s| (s, i, live(s))).collect();
        while let Some((s, from, live)) = resolved.pop() {
            self.waiting[s] -= 1;
            self.live[s] += usize::from(live);
            if self.waiting[s] > 0 || self.state[s] != NodeState::Queued {
                continue;
            }
            if self.live[s] > 0 {
                self.ready.push(s);
                continue;
            }
            self.state[s] = NodeState::Skipped;
            let because_of = self.scoped(from);
            self.bus.emit(EventKind::NodeSkipped { node_id: self.scoped(s), because_of, route: true }).await;
            resolved.extend(plan.successors[s].iter().rev().map(|&t| (t, s, false)));
        }
    }

    /// Records a node's result and releases or skips its successors.
    /// The MCP tools `agent` is offered, its servers connected: part of its cache key.
    async fn mcp_specs(&self, agent: &AgentPlan) -> Result<Vec<conclave_core::ToolSpec>, NodeError> {
        match &self.agents.servers {
            Some(servers) if !agent.mcp_tools.is_empty() => {
                Ok(servers.agent_tools(&agent.mcp_tools, &agent.mcp_servers).await?.specs)
            }
            _ => Ok(Vec::new()),
        }
    }

    async fn finish(&mut self, i: usize, result: Result<(NodeOutput, Usage), NodeError>, duration_ms: u64) {
        let node_id = self.scoped(i);
        // An output the policy failed to check is not passed on.
        let result = match result {
            Ok((output, usage)) => match self.check_output(i, &output).await {
                Ok(()) => Ok((output, usage)),
                Err(failure) => Err(NodeError::from(failure)),
            },
            Err(err) => Err(err),
        };
        match result {
            Ok((output, usage)) => {
                self.bus.emit(EventKind::NodeCompleted { node_id, output: output.clone(), usage, duration_ms }).await;
                self.keep_cached(i, &output).await;
                self.succeeded(i, output).await;
            }
            Err(err) => {
                self.state[i] = NodeState::Failed;
                let message = err.to_string();
                self.bus
                    .emit(EventKind::NodeFailed { node_id, error_kind: err.kind(), message: message.clone() })
                    .await;
                // A failed analyzer lane is one input fewer, not a failed run: the
                // nodes it feeds run on their other inputs, and the report says it failed.
                if self.plan.nodes[i].command.as_ref().is_some_and(|c| c.config.analyzer.is_some()) {
                    return self.release(i, |_| false).await;
                }
                self.first_failure.get_or_insert((i, err.kind(), message));
                self.skip_descendants(i).await;
            }
        }
    }

    /// Marks every not-yet-started descendant of `i` skipped, naming the upstream cause.
    async fn skip_descendants(&mut self, i: usize) {
        let plan = self.plan.clone();
        let mut stack: Vec<(usize, usize)> = plan.successors[i].iter().rev().map(|&s| (s, i)).collect();
        while let Some((d, cause)) = stack.pop() {
            if self.state[d] != NodeState::Queued {
                continue;
            }
            self.state[d] = NodeState::Skipped;
            self.bus
                .emit(EventKind::NodeSkipped { node_id: self.scoped(d), because_of: self.scoped(cause), route: false })
                .await;
            stack.extend(plan.successors[d].iter().rev().map(|&s| (s, d)));
        }
    }

    async fn end(self, cancelled: bool, metrics: RunMetrics) -> RunOutcome {
        let waiting: Vec<String> = (0..self.plan.nodes.len())
            .filter(|&i| self.state[i] == NodeState::Waiting)
            .map(|i| self.scoped(i))
            .collect();
        if !cancelled && !waiting.is_empty() {
            return self.park(waiting).await;
        }
        let (mut status, mut failed_node, mut error_kind, mut error) = match (&self.first_failure, cancelled) {
            (_, true) => (RunStatus::Cancelled, None, None, Some("cancelled by request".to_string())),
            (Some((i, ErrorKind::Rejected, message)), false) => {
                let id = self.plan.nodes[*i].id.clone();
                (
                    RunStatus::Rejected,
                    Some(id.clone()),
                    Some(ErrorKind::Rejected),
                    Some(format!("`{id}` was {message}")),
                )
            }
            (Some((i, kind, message)), false) => {
                let id = self.plan.nodes[*i].id.clone();
                (RunStatus::Failed, Some(id.clone()), Some(*kind), Some(format!("node `{id}` failed: {message}")))
            }
            (None, false) => (RunStatus::Succeeded, None, None, None),
        };
        // Every event so far written, so that a store failure among them counts.
        self.bus.flush().await;
        if let Some(store_error) = self.bus.store_error()
            && status == RunStatus::Succeeded
        {
            (status, failed_node, error_kind, error) = (
                RunStatus::Failed,
                None,
                Some(ErrorKind::Store),
                Some(format!("the run store reported an error: {store_error}")),
            );
        }
        metrics.finished(status);
        self.bus.emit(EventKind::RunFinished { status, failed_node: failed_node.clone(), error: error.clone() }).await;
        // The run ends only once its whole history is durable.
        self.bus.flush().await;
        let outputs: BTreeMap<String, NodeOutput> =
            self.plan.nodes.iter().zip(&self.outputs).filter_map(|(n, o)| Some((n.id.clone(), o.clone()?))).collect();
        let result = self.result();
        RunOutcome { run_id: self.bus.run_id().to_string(), status, failed_node, error_kind, error, outputs, result }
    }
}

/// Runs an agent that is not sampled, under its permits and timeout; returns its
/// result and how long it ran once it had its permits, in milliseconds.
async fn run_once(
    agent: &AgentPlan,
    agents: &AgentContext,
    limits: &RunLimits,
    node_id: &str,
    input: AgentInput,
) -> (Result<(NodeOutput, Usage), NodeError>, u64) {
    let _permits = limits.acquire(Some(&agent.config.provider)).await;
    let message = input.render();
    agents.bus.emit(EventKind::NodeStarted { node_id: node_id.to_string(), input: Some(message) }).await;
    let started = Instant::now();
    let work = run_agent(agent, agents, node_id, input);
    let result = match agent.timeout {
        Some(limit) => tokio::time::timeout(limit, work).await.unwrap_or(Err(NodeError::Timeout(limit))),
        None => work.await,
    };
    (result, started.elapsed().as_millis() as u64)
}
