//! Token prices per model, for the cost shown per agent.
//!
//! The table is `server/core/data/pricing.json`, compiled in; a file of the same shape at
//! `$CONCLAVE_CONFIG_DIR/pricing.json` overrides or extends it. A model matches
//! exactly or by the longest listed prefix; unknown models have no cost.

use conclave_shared::Usage;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;

const BUILTIN: &str = include_str!("../data/pricing.json");

/// Dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    /// Prompt tokens.
    pub input: f64,
    /// Generated tokens.
    pub output: f64,
}

/// Prices by provider and model.
#[derive(Debug, Clone, Default)]
pub struct PriceTable {
    prices: HashMap<String, HashMap<String, Price>>,
}

impl PriceTable {
    /// The built-in table alone; reads no file.
    pub fn builtin() -> PriceTable {
        let mut table = PriceTable::default();
        table.merge(BUILTIN);
        table
    }

    /// The built-in table, overridden by `<config_dir>/pricing.json` when present
    /// (a file read: call it off the async threads).
    pub fn load(config_dir: Option<&Path>) -> PriceTable {
        let mut table = PriceTable::builtin();
        if let Some(text) = config_dir.and_then(|d| std::fs::read_to_string(d.join("pricing.json")).ok()) {
            table.merge(&text);
        }
        table
    }

    fn merge(&mut self, text: &str) {
        let Ok(Value::Object(providers)) = serde_json::from_str::<Value>(text) else {
            tracing::warn!("a pricing table is not a JSON object; ignoring it");
            return;
        };
        for (provider, models) in providers {
            let Value::Object(models) = models else { continue };
            let entry = self.prices.entry(provider).or_default();
            for (model, price) in models {
                if let (Some(input), Some(output)) =
                    (price.get("input").and_then(Value::as_f64), price.get("output").and_then(Value::as_f64))
                {
                    entry.insert(model, Price { input, output });
                }
            }
        }
    }

    /// The price of `model` on `provider`, by exact name or longest prefix.
    pub fn price(&self, provider: &str, model: &str) -> Option<Price> {
        let models = self.prices.get(provider)?;
        models.get(model).copied().or_else(|| {
            models
                .iter()
                .filter(|(name, _)| model.starts_with(name.as_str()))
                .max_by_key(|(name, _)| name.len())
                .map(|(_, p)| *p)
        })
    }

    /// Fills in `usage.cost_usd` where the price is known.
    pub fn apply(&self, provider: &str, model: &str, usage: &mut Usage) {
        if let Some(p) = self.price(provider, model) {
            usage.cost_usd = Some((usage.input_tokens as f64 * p.input + usage.output_tokens as f64 * p.output) / 1e6);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_prefix_wins_and_overrides_apply() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            dir.path().join("pricing.json"),
            r#"{"openai": {"gpt-4.1-mini": {"input": 1.0, "output": 2.0}}}"#,
        )
        .expect("write");
        let table = PriceTable::load(Some(dir.path()));
        assert_eq!(table.price("openai", "gpt-4.1-mini-2025-04-14"), Some(Price { input: 1.0, output: 2.0 }));
        assert_eq!(table.price("openai", "gpt-4.1-2025-04-14"), Some(Price { input: 2.0, output: 8.0 }));
        assert_eq!(table.price("openai", "mystery"), None);
        let mut usage = Usage { input_tokens: 1_000_000, output_tokens: 500_000, cost_usd: None };
        table.apply("anthropic", "claude-sonnet-4-5", &mut usage);
        assert_eq!(usage.cost_usd, Some(10.5));
    }
}
