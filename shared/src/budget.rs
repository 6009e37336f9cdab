//! A run's spending limits: the most it may cost in US dollars and the most tokens
//! it may use, set in a conclave's `settings.budget` and on the command line or the
//! API, which combine as the tighter of the two.

use serde::{Deserialize, Serialize};

/// The most a run may spend. An absent limit is no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Budget {
    /// The most the run's provider calls may cost, in US dollars, every agent,
    /// sample, loop iteration and nested conclave together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "json-schema", schemars(range(min = 0)))]
    pub max_cost_usd: Option<f64>,
    /// The most tokens (prompt and generated, cached ones included) the run's
    /// provider calls may use together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "json-schema", schemars(range(min = 1)))]
    pub max_tokens: Option<u64>,
}

impl Budget {
    /// True when neither limit is set.
    pub fn is_unlimited(&self) -> bool {
        self.max_cost_usd.is_none() && self.max_tokens.is_none()
    }

    /// The tighter of two budgets, limit by limit; `None` when neither sets any.
    pub fn tighter(a: Option<&Budget>, b: Option<&Budget>) -> Option<Budget> {
        let min_f = |x: Option<f64>, y: Option<f64>| match (x, y) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, y) => x.or(y),
        };
        let min_u = |x: Option<u64>, y: Option<u64>| match (x, y) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, y) => x.or(y),
        };
        let (a, b) = (a.copied().unwrap_or_default(), b.copied().unwrap_or_default());
        let budget = Budget {
            max_cost_usd: min_f(a.max_cost_usd, b.max_cost_usd),
            max_tokens: min_u(a.max_tokens, b.max_tokens),
        };
        (!budget.is_unlimited()).then_some(budget)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tighter_limit_wins_limit_by_limit() {
        let file = Budget { max_cost_usd: Some(0.5), max_tokens: None };
        let cli = Budget { max_cost_usd: Some(1.0), max_tokens: Some(1000) };
        assert_eq!(
            Budget::tighter(Some(&file), Some(&cli)),
            Some(Budget { max_cost_usd: Some(0.5), max_tokens: Some(1000) })
        );
        assert_eq!(Budget::tighter(None, Some(&cli)), Some(cli));
        assert_eq!(Budget::tighter(None, Some(&Budget::default())), None);
    }
}
