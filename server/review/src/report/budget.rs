//! What a run spent against its budget, for the report: the budget stored with the
//! run (the conclave's, tightened by the one given for the run), what each agent
//! spent and its own `max_cost`, and which agents a call of which did not fit.

use conclave_engine::budget::spent_in;
use conclave_shared::{ErrorKind, EventKind, NodeKind, RunEvent, RunRecord};
use serde::Serialize;
use std::fmt::Write;

/// A run's spending against its budget.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BudgetSummary {
    /// The run's cost limit, in US dollars.
    pub max_cost_usd: Option<f64>,
    /// The run's token limit.
    pub max_tokens: Option<u64>,
    /// What the run spent, in US dollars.
    pub spent_usd: f64,
    /// The tokens it used.
    pub spent_tokens: u64,
    /// Each agent's spending, in conclave order.
    pub agents: Vec<AgentSpend>,
}

/// One agent's spending.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentSpend {
    /// The agent (as the run's events name it).
    pub node_id: String,
    /// What it spent, in US dollars.
    pub spent_usd: f64,
    /// The tokens it used.
    pub tokens: u64,
    /// Its own limit, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_cost: Option<f64>,
    /// True when a call of it did not fit in the budget, so it did not finish.
    pub stopped_by_budget: bool,
}

/// The budget summary of a stored run; `None` when neither the run nor any agent
/// has a limit.
pub fn budget_of(record: &RunRecord, events: &[RunEvent]) -> Option<BudgetSummary> {
    let conclave = &record.conclave;
    let caps: Vec<(&str, Option<f64>)> = conclave
        .nodes
        .iter()
        .filter(|n| n.kind == NodeKind::Agent)
        .map(|n| (n.id.as_str(), n.agent.as_ref().and_then(|a| a.max_cost)))
        .collect();
    let budget = conclave.settings.budget.unwrap_or_default();
    if budget.is_unlimited() && caps.iter().all(|(_, cap)| cap.is_none()) {
        return None;
    }
    let (total, by_node) = spent_in(events);
    let stopped: Vec<&str> = stopped_by_budget(events);
    let mut ids: Vec<&str> = caps.iter().map(|(id, _)| *id).collect();
    let mut others: Vec<&str> = by_node.keys().map(String::as_str).filter(|id| !ids.contains(id)).collect();
    others.sort();
    ids.extend(others);
    let agents = ids
        .into_iter()
        .map(|id| {
            let spent = by_node.get(id).copied().unwrap_or_default();
            AgentSpend {
                node_id: id.to_string(),
                spent_usd: spent.cost_usd,
                tokens: spent.tokens,
                max_cost: caps.iter().find(|(c, _)| *c == id).and_then(|(_, cap)| *cap),
                stopped_by_budget: stopped.contains(&id),
            }
        })
        .collect();
    Some(BudgetSummary {
        max_cost_usd: budget.max_cost_usd,
        max_tokens: budget.max_tokens,
        spent_usd: total.cost_usd,
        spent_tokens: total.tokens,
        agents,
    })
}

/// The nodes that failed because a call of theirs did not fit in the budget.
pub fn stopped_by_budget(events: &[RunEvent]) -> Vec<&str> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::NodeFailed { node_id, error_kind: ErrorKind::Budget, .. } => Some(node_id.as_str()),
            _ => None,
        })
        .collect()
}

/// The report's Markdown section on the budget.
pub(super) fn markdown(out: &mut String, summary: &BudgetSummary) {
    let _ = writeln!(out, "\n## Budget\n");
    let cost = match summary.max_cost_usd {
        Some(max) => format!("${:.4} of ${max:.4}", summary.spent_usd),
        None => format!("${:.4} (no cost limit)", summary.spent_usd),
    };
    let tokens = match summary.max_tokens {
        Some(max) => format!("{} of {max} tokens", summary.spent_tokens),
        None => format!("{} tokens (no token limit)", summary.spent_tokens),
    };
    let _ = writeln!(out, "Spent {cost}; {tokens}.\n");
    let _ = writeln!(out, "| Agent | Spent | Tokens | Agent limit | |");
    let _ = writeln!(out, "|---|---:|---:|---:|---|");
    for a in &summary.agents {
        let cap = a.max_cost.map_or_else(|| "-".to_string(), |c| format!("${c:.4}"));
        let note = if a.stopped_by_budget { "stopped: a call did not fit in the budget" } else { "" };
        let _ = writeln!(out, "| {} | ${:.4} | {} | {cap} | {note} |", a.node_id, a.spent_usd, a.tokens);
    }
}
