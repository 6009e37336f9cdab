//! The run's budget ledger: before each provider call the engine reserves the call's
//! worst case, and after it settles the reservation to what the call used, so that
//! calls running at once (sibling agents, samples, loop iterations, nested
//! conclaves: one ledger serves the whole run) can never together spend more than
//! the run's `max_cost_usd` and `max_tokens`, nor one agent more than its `max_cost`.
//!
//! **The worst case of a call.** Prompt tokens are bounded from above by the bytes
//! of what is sent: a BPE (or byte-fallback SentencePiece) token stands for at least
//! one byte, so a prompt of N bytes is at most N tokens. The bytes counted are the
//! shared prefix, the system prompt, every message, each tool's name, description
//! and parameter schema, and the output schema (JSON measured as compact text), plus
//! allowances for what the vendor wraps around them ([`PER_CALL_TOKENS`],
//! [`PER_MESSAGE_TOKENS`], [`TOOLS_TOKENS`], [`SCHEMA_TOKENS`]). The output is at
//! most the call's `max_tokens`. The cost prices every prompt token at the dearer of
//! the input and cache-write prices.
//!
//! **When a call does not fit.** A call that could fit once the calls in flight
//! settle waits for them; a call that cannot fit even then is refused with
//! [`BudgetExceeded`], and its agent fails with the `budget` error class. A call
//! that fails settles to nothing (a provider reports usage only with an answer); a
//! call cut off (a timeout, a cancelled run) stays charged at its worst case, since
//! what it cost is unknown.

use conclave_core::pricing::Price;
use conclave_core::{AgentReply, AgentRequest, Message, PriceTable, ProviderError};
use conclave_shared::{Budget, EventKind, RunEvent, Usage};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::Notify;

pub use crate::budget_exceeded::{BudgetExceeded, Limit};
use crate::plan::{AgentPlan, Plan};
use crate::start_error::StartError;

/// Prompt tokens allowed for what a vendor adds to every call (roles, separators).
pub const PER_CALL_TOKENS: u64 = 64;
/// Prompt tokens allowed for what a vendor adds around each message.
pub const PER_MESSAGE_TOKENS: u64 = 16;
/// Prompt tokens allowed for the instructions a vendor adds when tools are offered
/// (Anthropic documents a tool-use system prompt of a few hundred tokens).
pub const TOOLS_TOKENS: u64 = 1024;
/// Prompt tokens allowed for what a vendor adds to constrain the answer to a schema.
pub const SCHEMA_TOKENS: u64 = 512;

/// What a run has spent, or what a call may spend.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spend {
    /// US dollars.
    pub cost_usd: f64,
    /// Tokens, prompt and generated.
    pub tokens: u64,
}

impl Spend {
    /// What `usage` spent (its cost counts as nothing when the price is unknown).
    pub fn of(usage: &Usage) -> Spend {
        Spend { cost_usd: usage.cost_usd.unwrap_or(0.0), tokens: usage.prompt_tokens() + usage.output_tokens }
    }

    fn add(&mut self, other: Spend) {
        self.cost_usd += other.cost_usd;
        self.tokens += other.tokens;
    }

    fn sub(&mut self, other: Spend) {
        self.cost_usd = (self.cost_usd - other.cost_usd).max(0.0);
        self.tokens = self.tokens.saturating_sub(other.tokens);
    }
}

/// The most one call can use and cost.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WorstCase {
    /// Prompt tokens, at most.
    pub prompt_tokens: u64,
    /// Generated tokens, at most (the call's `max_tokens`).
    pub output_tokens: u64,
    /// What that costs, when the model's price is known.
    pub cost_usd: Option<f64>,
}

impl WorstCase {
    /// The worst case of `request` at `price`.
    pub fn of(request: &AgentRequest, price: Option<Price>) -> WorstCase {
        let prompt_tokens = prompt_bound(request);
        let output_tokens = u64::from(request.max_tokens);
        let cost_usd =
            price.map(|p| (prompt_tokens as f64 * p.worst_input_rate() + output_tokens as f64 * p.output) / 1e6);
        WorstCase { prompt_tokens, output_tokens, cost_usd }
    }

    fn spend(&self) -> Spend {
        Spend { cost_usd: self.cost_usd.unwrap_or(0.0), tokens: self.prompt_tokens + self.output_tokens }
    }
}

/// The most prompt tokens `request` can be: its bytes, plus the vendor allowances.
pub fn prompt_bound(request: &AgentRequest) -> u64 {
    let mut bytes = request.shared_prefix.len() + request.system_prompt.len();
    for message in &request.messages {
        bytes += match message {
            Message::User(text) => text.len(),
            Message::Assistant { text, tool_calls } => {
                text.len()
                    + tool_calls.iter().map(|c| c.id.len() + c.name.len() + json_len(&c.arguments)).sum::<usize>()
            }
            Message::ToolResult { call_id, name, content, .. } => call_id.len() + name.len() + content.len(),
        };
    }
    for tool in &request.tools {
        bytes += tool.name.len() + tool.description.len() + json_len(&tool.parameters);
    }
    let mut allowance = PER_CALL_TOKENS + PER_MESSAGE_TOKENS * request.messages.len() as u64;
    if !request.tools.is_empty() {
        allowance += TOOLS_TOKENS;
    }
    if let Some(schema) = &request.output_schema {
        bytes += schema.name.len() + json_len(&schema.schema);
        allowance += SCHEMA_TOKENS;
    }
    bytes as u64 + allowance
}

/// At least the length of `value` as compact JSON (a number counts 24 bytes, every
/// member a separator), escapes aside: a token of an escaped character is still at
/// least one byte of the text it stands for.
pub fn json_len(value: &Value) -> usize {
    match value {
        Value::Null => 4,
        Value::Bool(b) => 4 + usize::from(!b),
        Value::Number(_) => 24,
        Value::String(s) => s.len() + 2,
        Value::Array(items) => 2 + items.iter().map(|v| json_len(v) + 1).sum::<usize>(),
        Value::Object(map) => 2 + map.iter().map(|(k, v)| k.len() + 4 + json_len(v)).sum::<usize>(),
    }
}

/// The ledger of one run's budget, shared by every call of the run.
#[derive(Debug)]
pub struct Ledger {
    budget: Budget,
    /// The price of each model the run's agents call, by provider and model as
    /// their requests name it.
    prices: HashMap<String, HashMap<String, Price>>,
    state: Mutex<State>,
    released: Notify,
}

#[derive(Debug, Default)]
struct State {
    spent: Spend,
    reserved: Spend,
    /// Spent and reserved dollars of each agent that has a `max_cost`, by node id.
    agents: HashMap<String, (f64, f64)>,
    /// Tool calls made.
    tool_calls: u64,
}

impl Ledger {
    /// A ledger of `budget` with nothing spent, pricing calls with `prices`.
    pub fn new(budget: Budget, prices: HashMap<String, HashMap<String, Price>>) -> Ledger {
        Ledger { budget, prices, state: Mutex::new(State::default()), released: Notify::new() }
    }

    /// The ledger of a run of `plan` under `budget` (the conclave's, tightened by
    /// the run's), or `None` when neither the run nor any agent has a limit.
    /// Refused when a cost limit is set and an agent's model has no price in `table`.
    pub fn for_plan(budget: Option<Budget>, plan: &Plan, table: &PriceTable) -> Result<Option<Ledger>, StartError> {
        let agents = agents_of(plan);
        let run_cost = budget.is_some_and(|b| b.max_cost_usd.is_some());
        if budget.is_none() && agents.iter().all(|(_, a)| a.config.max_cost.is_none()) {
            return Ok(None);
        }
        let mut prices: HashMap<String, HashMap<String, Price>> = HashMap::new();
        for (node_id, agent) in agents {
            let (provider, configured) = (agent.config.provider.as_str(), agent.config.model.as_str());
            let model = if configured.is_empty() { agent.provider.default_model() } else { configured };
            match table.price(provider, model) {
                Some(price) => {
                    prices.entry(provider.to_string()).or_default().insert(configured.to_string(), price);
                }
                None if run_cost || agent.config.max_cost.is_some() => {
                    return Err(StartError::Unpriced {
                        node_id: node_id.to_string(),
                        provider: provider.to_string(),
                        model: model.to_string(),
                    });
                }
                None => {}
            }
        }
        Ok(Some(Ledger::new(budget.unwrap_or_default(), prices)))
    }

    /// This ledger, starting from what the stored `events` of a run say it spent.
    pub fn resumed_from(self, events: &[RunEvent]) -> Ledger {
        let (spent, by_node) = spent_in(events);
        let mut state = self.lock();
        state.spent = spent;
        state.agents = by_node.into_iter().map(|(node, spend)| (node, (spend.cost_usd, 0.0))).collect();
        state.tool_calls = events.iter().filter(|e| matches!(e.kind, EventKind::ToolResult { .. })).count() as u64;
        drop(state);
        self
    }

    /// Counts one tool call of the run; refused when the run's `max_tool_calls` is
    /// spent, and then not counted.
    pub fn count_tool_call(&self) -> Result<(), BudgetExceeded> {
        let mut state = self.lock();
        if let Some(max) = self.budget.max_tool_calls
            && state.tool_calls >= max
        {
            return Err(BudgetExceeded {
                limit: Limit::RunToolCalls,
                budget: max as f64,
                spent: state.tool_calls as f64,
                worst_case: 1.0,
                tokens: (0, 0),
            });
        }
        state.tool_calls += 1;
        Ok(())
    }

    /// The run's budget.
    pub fn budget(&self) -> Budget {
        self.budget
    }

    /// What the run has spent so far (settled calls and calls cut off).
    pub fn spent(&self) -> Spend {
        self.lock().spent
    }

    /// The worst case of `request` on `provider`, priced as this run prices it.
    pub fn worst_case(&self, provider: &str, request: &AgentRequest) -> WorstCase {
        WorstCase::of(request, self.price(provider, &request.model))
    }

    fn price(&self, provider: &str, model: &str) -> Option<Price> {
        self.prices.get(provider)?.get(model).copied()
    }

    /// Reserves the worst case of `request` for the agent `node_id` (whose own
    /// limit is `agent_cap` dollars, if any) on `provider`; waits while it would fit
    /// only once calls in flight settle. Refused when it cannot fit at all.
    pub async fn reserve(
        self: &Arc<Self>,
        node_id: &str,
        agent_cap: Option<f64>,
        provider: &str,
        request: &AgentRequest,
    ) -> Result<Reservation, BudgetExceeded> {
        let price = self.price(provider, &request.model);
        let worst = WorstCase::of(request, price);
        loop {
            // Registered before the check, so a release between the two is not missed.
            let released = self.released.notified();
            if let Some(mut reservation) = self.try_reserve(node_id, agent_cap, &worst)? {
                reservation.price = price;
                return Ok(reservation);
            }
            released.await;
        }
    }

    /// Reserves `worst` if it fits now; `Ok(None)` when it fits only once calls in
    /// flight settle.
    pub fn try_reserve(
        self: &Arc<Self>,
        node_id: &str,
        agent_cap: Option<f64>,
        worst: &WorstCase,
    ) -> Result<Option<Reservation>, BudgetExceeded> {
        let spend = worst.spend();
        let refuse = |limit, budget, spent, worst_case| BudgetExceeded {
            limit,
            budget,
            spent,
            worst_case,
            tokens: (worst.prompt_tokens, worst.output_tokens),
        };
        let mut state = self.lock();
        let mut wait = false;
        if let Some(max) = self.budget.max_cost_usd {
            if state.spent.cost_usd + spend.cost_usd > max {
                return Err(refuse(Limit::RunCost, max, state.spent.cost_usd, spend.cost_usd));
            }
            wait |= state.spent.cost_usd + state.reserved.cost_usd + spend.cost_usd > max;
        }
        if let Some(max) = self.budget.max_tokens {
            if state.spent.tokens + spend.tokens > max {
                return Err(refuse(Limit::RunTokens, max as f64, state.spent.tokens as f64, spend.tokens as f64));
            }
            wait |= state.spent.tokens + state.reserved.tokens + spend.tokens > max;
        }
        if let Some(cap) = agent_cap {
            let (spent, reserved) = state.agents.get(node_id).copied().unwrap_or_default();
            if spent + spend.cost_usd > cap {
                return Err(refuse(Limit::AgentCost, cap, spent, spend.cost_usd));
            }
            wait |= spent + reserved + spend.cost_usd > cap;
        }
        if wait {
            return Ok(None);
        }
        state.reserved.add(spend);
        if agent_cap.is_some() {
            state.agents.entry(node_id.to_string()).or_default().1 += spend.cost_usd;
        }
        let node = agent_cap.is_some().then(|| node_id.to_string());
        Ok(Some(Reservation { ledger: self.clone(), node, worst: spend, price: None, settled: false }))
    }

    fn release(&self, node: Option<&str>, worst: Spend, used: Spend) {
        {
            let mut state = self.lock();
            state.reserved.sub(worst);
            state.spent.add(used);
            if let Some(entry) = node.and_then(|n| state.agents.get_mut(n)) {
                entry.1 = (entry.1 - worst.cost_usd).max(0.0);
                entry.0 += used.cost_usd;
            }
        }
        self.released.notify_waiters();
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The state is plain numbers, consistent after every statement: a panic
        // elsewhere while it was held leaves nothing half-done.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Every agent of `plan`, its loops' bodies and its nested conclaves, with its id.
fn agents_of(plan: &Plan) -> Vec<(&str, &AgentPlan)> {
    let mut agents = Vec::new();
    for node in plan.all_nodes() {
        if let Some(agent) = &node.agent {
            agents.push((node.id.as_str(), agent.as_ref()));
        }
        if let Some(child) = &node.child {
            agents.extend(agents_of(child));
        }
    }
    agents
}

/// What a run's stored events say it spent, in all and by node: each completed
/// node's usage (every attempt and sample that answered), and the failed attempts of
/// nodes that did not complete.
pub fn spent_in(events: &[RunEvent]) -> (Spend, HashMap<String, Spend>) {
    let completed: HashSet<&str> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::NodeCompleted { node_id, .. } => Some(node_id.as_str()),
            _ => None,
        })
        .collect();
    let (mut total, mut by_node) = (Spend::default(), HashMap::<String, Spend>::new());
    for event in events {
        let (node_id, usage) = match &event.kind {
            EventKind::NodeCompleted { node_id, usage, .. } => (node_id, usage),
            EventKind::AttemptFailed { node_id, usage, .. } if !completed.contains(node_id.as_str()) => {
                (node_id, usage)
            }
            _ => continue,
        };
        let spend = Spend::of(usage);
        total.add(spend);
        by_node.entry(node_id.clone()).or_default().add(spend);
    }
    (total, by_node)
}

/// A call's reserved worst case, until it is settled; dropped unsettled (the call
/// was cut off), it stays charged at the worst case.
#[derive(Debug)]
pub struct Reservation {
    ledger: Arc<Ledger>,
    node: Option<String>,
    worst: Spend,
    price: Option<Price>,
    settled: bool,
}

impl Reservation {
    /// Settles to what the call used: its usage, or nothing when it failed without.
    pub fn settle(mut self, usage: Option<&Usage>) {
        self.settled = true;
        let mut used = usage.map(Spend::of).unwrap_or_default();
        // A usage the provider did not price (an agent on its provider's default
        // model) is priced as the reservation was.
        if let (Some(usage), Some(price)) = (usage.filter(|u| u.cost_usd.is_none()), self.price) {
            used.cost_usd = price.cost(usage).0;
        }
        self.ledger.release(self.node.as_deref(), self.worst, used);
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if !self.settled {
            self.ledger.release(self.node.as_deref(), self.worst, self.worst);
        }
    }
}

/// Reserves a call's worst case when the run has a ledger; `None` without one.
pub(crate) async fn reserve(
    ledger: Option<&Arc<Ledger>>,
    node_id: &str,
    provider: &str,
    request: &AgentRequest,
) -> Result<Option<Reservation>, BudgetExceeded> {
    let Some(ledger) = ledger else { return Ok(None) };
    ledger.reserve(node_id, request.agent.max_cost, provider, request).await.map(Some)
}

/// Settles a call's reservation, if it has one, to what the call used.
pub(crate) fn settle(reserved: Option<Reservation>, result: &Result<AgentReply, ProviderError>) {
    if let Some(reservation) = reserved {
        reservation.settle(result.as_ref().ok().map(|reply| &reply.usage));
    }
}
