//! `--max-cost` and `--max-tokens`, defined once for `conclave run` and `conclave
//! review`: the run's budget, which combines with the conclave's `settings.budget`
//! as the tighter of the two.

use clap::Args;
use conclave_core::RunStore;
use conclave_engine::budget::spent_in;
use conclave_shared::Budget;

/// The most a run may spend.
#[derive(Debug, Clone, Copy, Default, Args)]
pub struct BudgetArgs {
    /// Most the run's provider calls may cost together, in US dollars (every agent,
    /// sample, loop iteration and nested conclave). A call that cannot fit in what
    /// is left is not made and its agent fails with `budget` (exit 3). With the
    /// conclave's `settings.budget`, the tighter holds.
    #[arg(long, value_name = "USD", value_parser = parse_usd)]
    pub max_cost: Option<f64>,
    /// Most tokens (prompt and generated) the run's provider calls may use together.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_tokens: Option<u64>,
}

impl BudgetArgs {
    /// The budget given, if any.
    pub fn budget(self) -> Option<Budget> {
        Budget::tighter(
            Some(&Budget { max_cost_usd: self.max_cost, max_tokens: self.max_tokens, max_tool_calls: None }),
            None,
        )
    }
}

/// One line on standard error saying what a finished run with a budget spent
/// against it; nothing for a run without one.
pub async fn print_spending(store: &dyn RunStore, run_id: &str) {
    let Ok(Some(record)) = store.get_run(run_id).await else { return };
    let Some(budget) = record.conclave.settings.budget else { return };
    let Ok(events) = store.events(run_id, 0).await else { return };
    let (spent, _) = spent_in(&events);
    let cost = budget.max_cost_usd.map_or(String::new(), |max| format!("${:.4} of ${max:.4}, ", spent.cost_usd));
    let tokens =
        budget.max_tokens.map_or(format!("{} tokens", spent.tokens), |max| format!("{} of {max} tokens", spent.tokens));
    eprintln!("budget: spent {cost}{tokens}");
}

fn parse_usd(text: &str) -> Result<f64, String> {
    match text.trim().trim_start_matches('$').parse::<f64>() {
        Ok(usd) if usd.is_finite() && usd >= 0.0 => Ok(usd),
        _ => Err(format!("`{text}` is not an amount of US dollars; give one such as 0.50")),
    }
}
