//! A run's spending limits: the most it may cost in US dollars, the most tokens
//! it may use and the most tool calls its agents may make, set in a conclave's `settings.budget` and on the command line or the
//! API, which combine as the tighter of the two.

use serde::{Deserialize, Deserializer, Serialize};

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
    #[cfg_attr(feature = "openapi", schema(minimum = 0))]
    pub max_cost_usd: Option<f64>,
    /// The most tokens (prompt and generated, cached ones included) the run's
    /// provider calls may use together.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "whole_number")]
    #[cfg_attr(feature = "json-schema", schemars(range(min = 1)))]
    #[cfg_attr(feature = "openapi", schema(minimum = 1))]
    pub max_tokens: Option<u64>,
    /// The most tool calls the run's agents may make together, built-in and MCP
    /// tools alike; the call past it fails its agent.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "whole_number")]
    #[cfg_attr(feature = "json-schema", schemars(range(min = 0)))]
    #[cfg_attr(feature = "openapi", schema(minimum = 0))]
    pub max_tool_calls: Option<u64>,
}

/// A count as JSON Schema's `integer` reads it: `1482` or `1482.0`, never `1482.5`
/// or below zero. Every count the API takes reads through it.
pub(crate) fn whole_number<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<u64>, D::Error> {
    let Some(number) = Option::<serde_json::Number>::deserialize(deserializer)? else { return Ok(None) };
    if let Some(n) = number.as_u64() {
        return Ok(Some(n));
    }
    match number.as_f64() {
        Some(f) if f >= 0.0 && f.fract() == 0.0 && f <= u64::MAX as f64 => Ok(Some(f as u64)),
        _ => Err(serde::de::Error::custom(format!("`{number}` is not a whole number at least 0"))),
    }
}

impl Budget {
    /// True when neither limit is set.
    pub fn is_unlimited(&self) -> bool {
        self.max_cost_usd.is_none() && self.max_tokens.is_none() && self.max_tool_calls.is_none()
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
            max_tool_calls: min_u(a.max_tool_calls, b.max_tool_calls),
        };
        (!budget.is_unlimited()).then_some(budget)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_count_is_any_whole_number_json_writes() {
        let read = |text: &str| serde_json::from_str::<Budget>(text).map(|b| b.max_tokens);
        assert_eq!(read(r#"{"max_tokens": 1482}"#).ok(), Some(Some(1482)));
        assert_eq!(read(r#"{"max_tokens": 1482.0}"#).ok(), Some(Some(1482)), "JSON Schema's integer");
        assert_eq!(read(r#"{}"#).ok(), Some(None));
        assert!(read(r#"{"max_tokens": 1482.5}"#).is_err());
        assert!(read(r#"{"max_tokens": -3}"#).is_err());
    }

    #[test]
    fn the_tighter_limit_wins_limit_by_limit() {
        let file = Budget { max_cost_usd: Some(0.5), max_tokens: None, max_tool_calls: Some(3) };
        let cli = Budget { max_cost_usd: Some(1.0), max_tokens: Some(1000), max_tool_calls: None };
        assert_eq!(
            Budget::tighter(Some(&file), Some(&cli)),
            Some(Budget { max_cost_usd: Some(0.5), max_tokens: Some(1000), max_tool_calls: Some(3) })
        );
        assert_eq!(Budget::tighter(None, Some(&cli)), Some(cli));
        assert_eq!(Budget::tighter(None, Some(&Budget::default())), None);
    }
}
