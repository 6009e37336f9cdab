//! Token prices per model, for the cost shown per agent.
//!
//! The table is `server/core/data/pricing.json`, compiled in; a file of the same shape at
//! `$CONCLAVE_CONFIG_DIR/pricing.json` overrides or extends it. A model matches
//! exactly or by the longest listed prefix; unknown models have no cost. Besides
//! `input` and `output`, a model may price prompt-cache reads (`cache_read`) and
//! writes (`cache_write`); a missing one costs what an input token costs. A model
//! may also give its `context` window in tokens, as its vendor documents it (what
//! one call can hold: prompt and answer); the embedded model's is the context it is
//! run with, `CONCLAVE_LOCAL_CONTEXT` or its default.

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
    /// Prompt tokens read from the cache, when the vendor prices them apart.
    pub cache_read: Option<f64>,
    /// Prompt tokens written to the cache, when the vendor prices them apart.
    pub cache_write: Option<f64>,
}

impl Price {
    /// Prompt-cache reads, per million tokens.
    pub fn cache_read_rate(&self) -> f64 {
        self.cache_read.unwrap_or(self.input)
    }

    /// Prompt-cache writes, per million tokens.
    pub fn cache_write_rate(&self) -> f64 {
        self.cache_write.unwrap_or(self.input)
    }

    /// The most a prompt token can cost: the input price, or a dearer cache write.
    pub fn worst_input_rate(&self) -> f64 {
        self.input.max(self.cache_write_rate())
    }

    /// The cost of `usage` in US dollars, and what its cached tokens saved against
    /// the input price.
    pub fn cost(&self, usage: &Usage) -> (f64, f64) {
        let (read, write) = (usage.cache_read_tokens as f64, usage.cache_write_tokens as f64);
        let cached = read * self.cache_read_rate() + write * self.cache_write_rate();
        let cost = usage.input_tokens as f64 * self.input + usage.output_tokens as f64 * self.output + cached;
        let saved = (read + write) * self.input - cached;
        (cost / 1e6, saved / 1e6)
    }
}

/// Prices by provider and model.
#[derive(Debug, Clone, Default)]
pub struct PriceTable {
    prices: HashMap<String, HashMap<String, Price>>,
    contexts: HashMap<String, HashMap<String, u64>>,
}

/// The provider whose context window is the one it is run with.
const EMBEDDED_PROVIDER: &str = "local";

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
            let contexts = self.contexts.entry(provider.clone()).or_default();
            for (model, figures) in &models {
                if let Some(context) = figures.get("context").and_then(Value::as_u64) {
                    contexts.insert(model.clone(), context);
                }
            }
            let entry = self.prices.entry(provider).or_default();
            for (model, price) in models {
                let rate = |name: &str| price.get(name).and_then(Value::as_f64);
                if let (Some(input), Some(output)) = (rate("input"), rate("output")) {
                    let (cache_read, cache_write) = (rate("cache_read"), rate("cache_write"));
                    entry.insert(model, Price { input, output, cache_read, cache_write });
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

    /// The context window of `model` on `provider` in tokens, by exact name or
    /// longest prefix; for the embedded model, `CONCLAVE_LOCAL_CONTEXT` when set (as
    /// the provider reads it). `None` when unknown.
    pub fn context_window(&self, provider: &str, model: &str) -> Option<u64> {
        if provider == EMBEDDED_PROVIDER
            && let Some(context) =
                std::env::var("CONCLAVE_LOCAL_CONTEXT").ok().and_then(|v| v.trim().parse::<u64>().ok())
            && context >= 512
        {
            return Some(context);
        }
        let models = self.contexts.get(provider)?;
        models.get(model).copied().or_else(|| {
            models
                .iter()
                .filter(|(name, _)| model.starts_with(name.as_str()))
                .max_by_key(|(name, _)| name.len())
                .map(|(_, c)| *c)
        })
    }

    /// Fills in `usage.cost_usd` where the price is known, and what the prompt cache
    /// saved when any token was cached.
    pub fn apply(&self, provider: &str, model: &str, usage: &mut Usage) {
        if let Some(p) = self.price(provider, model) {
            let (cost, saved) = p.cost(usage);
            usage.cost_usd = Some(cost);
            if usage.cache_read_tokens + usage.cache_write_tokens > 0 {
                usage.cache_savings_usd = Some(saved);
            }
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
        let overridden = table.price("openai", "gpt-4.1-mini-2025-04-14").expect("priced");
        assert_eq!((overridden.input, overridden.output, overridden.cache_read), (1.0, 2.0, None));
        assert_eq!(overridden.cache_read_rate(), 1.0, "an unpriced cache read costs an input token");
        let full = table.price("openai", "gpt-4.1-2025-04-14").expect("priced");
        assert_eq!((full.input, full.output, full.cache_read), (2.0, 8.0, Some(0.5)));
        assert_eq!(table.price("openai", "mystery"), None);
        let mut usage = Usage::tokens(1_000_000, 500_000);
        table.apply("anthropic", "claude-sonnet-4-5", &mut usage);
        assert_eq!(usage.cost_usd, Some(10.5));
        assert_eq!(usage.cache_savings_usd, None, "nothing was cached");
    }

    #[test]
    fn context_windows_come_from_the_table_by_longest_prefix_and_unknown_models_have_none() {
        let table = PriceTable::builtin();
        assert_eq!(table.context_window("anthropic", "claude-sonnet-4-5"), Some(200_000));
        assert_eq!(table.context_window("openai", "gpt-4o-mini-2024"), Some(128_000));
        assert_eq!(table.context_window("openai", "gpt-4.1-nano"), Some(1_047_576));
        assert_eq!(table.context_window("openai", "unknown-model"), None);
        assert_eq!(table.context_window("fake", "any"), None);
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("pricing.json"), r#"{"acme": {"m": {"context": 32000}}}"#).expect("write");
        let table = PriceTable::load(Some(dir.path()));
        assert_eq!(table.context_window("acme", "m-1"), Some(32_000), "a context without a price still counts");
        assert_eq!(table.price("acme", "m-1"), None);
    }

    #[test]
    fn cache_reads_and_writes_are_priced_and_their_savings_counted() {
        let table = PriceTable::builtin();
        let sonnet = table.price("anthropic", "claude-sonnet-4-5").expect("priced");
        assert_eq!((sonnet.cache_read, sonnet.cache_write), (Some(0.3), Some(3.75)));
        assert_eq!(sonnet.worst_input_rate(), 3.75);
        // 1M paid in full, 2M read, 1M written: 3 + 0.6 + 3.75 = 7.35 dollars; the
        // 3M cached would have cost 9, so caching saved 9 - 4.35 = 4.65.
        let mut usage =
            Usage { cache_read_tokens: 2_000_000, cache_write_tokens: 1_000_000, ..Usage::tokens(1_000_000, 0) };
        table.apply("anthropic", "claude-sonnet-4-5", &mut usage);
        let (cost, saved) = (usage.cost_usd.expect("cost"), usage.cache_savings_usd.expect("savings"));
        assert!((cost - 7.35).abs() < 1e-9, "{cost}");
        assert!((saved - 4.65).abs() < 1e-9, "{saved}");
    }
}
