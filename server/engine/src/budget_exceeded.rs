//! Why a provider call (or a tool call) was not made: it could not fit in what was left of the run's
//! budget or its agent's `max_cost`, even once every call in flight settled. The
//! ledger (`budget.rs`) decides; this is the error a failed agent carries.

use std::fmt;

/// Which limit a refused call would have passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// The run's `max_cost_usd`.
    RunCost,
    /// The run's `max_tokens`.
    RunTokens,
    /// The agent's `max_cost`.
    AgentCost,
    /// The run's `max_tool_calls`.
    RunToolCalls,
}

/// A provider call that cannot fit in what is left of a budget, even once every call
/// in flight settles: it is not made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct BudgetExceeded {
    /// The limit it would pass.
    pub limit: Limit,
    /// The limit's value (US dollars or tokens).
    pub budget: f64,
    /// What was already spent against it.
    pub spent: f64,
    /// The call's worst case against it.
    pub worst_case: f64,
    /// The call's worst case in tokens (prompt at most, and generated at most).
    pub tokens: (u64, u64),
}

impl fmt::Display for BudgetExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (prompt, output) = self.tokens;
        if self.limit == Limit::RunToolCalls {
            return write!(
                f,
                "this tool call was not made: the run's budget of {:.0} tool calls is spent; raise `max_tool_calls` \
                 (in the API or the conclave's `settings.budget`), or let the agents call fewer tools",
                self.budget
            );
        }
        let (what, to_do) = match self.limit {
            Limit::RunCost => (
                "the run's cost budget",
                "raise the budget (`--max-cost`, `max_cost_usd` in the API or the conclave's `settings.budget`)",
            ),
            Limit::RunTokens => (
                "the run's token budget",
                "raise the budget (`--max-tokens`, `max_tokens` in the API or the conclave's `settings.budget`)",
            ),
            Limit::AgentCost | Limit::RunToolCalls => {
                ("the agent's `max_cost`", "raise the agent's `max_cost` in the conclave")
            }
        };
        let amount = |v: f64| match self.limit {
            Limit::RunTokens => format!("{v:.0} tokens"),
            _ => format!("${v:.4}"),
        };
        write!(
            f,
            "this provider call was not made: it may use up to {} ({prompt} prompt tokens at most and {output} \
             generated), and {} of {what} of {} is already spent; {to_do}, or lower the agent's `max_tokens`",
            amount(self.worst_case),
            amount(self.spent),
            amount(self.budget)
        )
    }
}
