//! Which structured-output dialect each server takes, for providers whose servers
//! differ (OpenAI-compatible ones). A run keeps one [`DialectBook`]: an agent on
//! `auto` starts with the dialect the store remembers for its server (else
//! `json_schema`), and when the server rejects a dialect, the book steps down once to
//! the next one for the rest of the run and remembers it in the store for later runs.
//!
//! Sibling agents that are rejected at the same moment step the book down once: the
//! first records the change, the others retry with the dialect it chose.

use conclave_core::RunStore;
use conclave_shared::{DialectSetting, OutputDialect};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// A provider and its server's base URL.
type Server = (String, String);

/// The dialects of one run's servers.
#[derive(Debug)]
pub struct DialectBook {
    store: Arc<dyn RunStore>,
    known: Mutex<HashMap<Server, OutputDialect>>,
}

/// What a rejection changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepDown {
    /// The dialect to use now.
    pub to: OutputDialect,
    /// Whether this rejection made the change (and so reports it), rather than a
    /// sibling's rejection a moment earlier.
    pub changed: bool,
}

impl DialectBook {
    /// A book that reads and remembers dialects in `store`.
    pub fn new(store: Arc<dyn RunStore>) -> DialectBook {
        DialectBook { store, known: Mutex::default() }
    }

    /// The dialect to use for `provider` at `endpoint` under `setting`: a fixed one,
    /// or for `auto` the one this run settled on, else the one the store remembers,
    /// else `json_schema`. A store that cannot answer is not a reason to fail a call.
    pub async fn current(&self, provider: &str, endpoint: &str, setting: DialectSetting) -> OutputDialect {
        if let Some(fixed) = setting.fixed() {
            return fixed;
        }
        let key = (provider.to_string(), endpoint.to_string());
        if let Some(known) = self.lock().get(&key) {
            return *known;
        }
        let remembered = match self.store.endpoint_dialect(provider, endpoint).await {
            Ok(found) => found,
            Err(e) => {
                tracing::warn!(provider, endpoint, "cannot read the remembered dialect: {e}");
                None
            }
        };
        *self.lock().entry(key).or_insert(remembered.unwrap_or(OutputDialect::JsonSchema))
    }

    /// The server rejected `rejected`: the next dialect to try, or `None` when there
    /// is none left.
    pub async fn step_down(&self, provider: &str, endpoint: &str, rejected: OutputDialect) -> Option<StepDown> {
        let key = (provider.to_string(), endpoint.to_string());
        let to = {
            let mut known = self.lock();
            let current = known.get(&key).copied().unwrap_or(rejected);
            if current > rejected {
                return Some(StepDown { to: current, changed: false });
            }
            let next = rejected.next()?;
            known.insert(key, next);
            next
        };
        if let Err(e) = self.store.remember_endpoint_dialect(provider, endpoint, to).await {
            tracing::warn!(provider, endpoint, "cannot remember the dialect `{to}`: {e}");
        }
        Some(StepDown { to, changed: true })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Server, OutputDialect>> {
        self.known.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use conclave_doubles::MemoryStore;

    const LOCAL: &str = "http://127.0.0.1:8080/v1";

    #[tokio::test]
    async fn auto_steps_down_once_per_rejection_and_the_store_remembers_it() {
        let store: Arc<dyn RunStore> = Arc::new(MemoryStore::new());
        let book = DialectBook::new(store.clone());
        assert_eq!(book.current("openai", LOCAL, DialectSetting::Auto).await, OutputDialect::JsonSchema);
        let first = book.step_down("openai", LOCAL, OutputDialect::JsonSchema).await;
        assert_eq!(first, Some(StepDown { to: OutputDialect::JsonObjectSchema, changed: true }));
        // A sibling rejected at the same moment retries with the new dialect.
        let sibling = book.step_down("openai", LOCAL, OutputDialect::JsonSchema).await;
        assert_eq!(sibling, Some(StepDown { to: OutputDialect::JsonObjectSchema, changed: false }));
        assert_eq!(book.current("openai", LOCAL, DialectSetting::Auto).await, OutputDialect::JsonObjectSchema);
        assert_eq!(
            book.current("openai", LOCAL, DialectSetting::JsonSchema).await,
            OutputDialect::JsonSchema,
            "a fixed dialect is kept"
        );
        // A later run starts where this one ended.
        let later = DialectBook::new(store.clone());
        assert_eq!(later.current("openai", LOCAL, DialectSetting::Auto).await, OutputDialect::JsonObjectSchema);
        assert_eq!(
            later.current("openai", "http://elsewhere/v1", DialectSetting::Auto).await,
            OutputDialect::JsonSchema
        );
        for step in [OutputDialect::JsonObjectSchema, OutputDialect::JsonObject] {
            assert!(later.step_down("openai", LOCAL, step).await.is_some_and(|s| s.changed));
        }
        assert_eq!(
            later.step_down("openai", LOCAL, OutputDialect::Prompt).await,
            None,
            "nothing is left after the prompt"
        );
        assert_eq!(store.endpoint_dialect("openai", LOCAL).await.expect("read"), Some(OutputDialect::Prompt));
    }
}
