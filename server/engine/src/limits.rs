//! Concurrency limits. The engine owns one global limit and one limit per provider,
//! shared by every run it starts, so two runs in one `conclave serve` share them
//! rather than each getting the full amount. A conclave's own settings add tighter
//! limits for its runs; they can lower the engine's, never raise them.

use conclave_shared::Settings;
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::fleet::{FleetLimits, FleetSlot};

/// The largest limit: more concurrency than this is no limit at all, and it keeps
/// every count well inside what a semaphore can hold.
pub const MAX_LIMIT: usize = 1 << 20;

/// The engine-wide limits.
#[derive(Debug)]
pub struct Limits {
    global: Arc<Semaphore>,
    global_size: usize,
    providers: HashMap<String, (Arc<Semaphore>, usize)>,
    /// Limits held across every process on the database, when there are any.
    fleet: Option<FleetLimits>,
}

/// The limits one run's nodes acquire: the run's own (from its conclave's settings),
/// then the engine's.
#[derive(Debug, Clone)]
pub struct RunLimits {
    engine: Arc<Limits>,
    run: Option<Arc<Semaphore>>,
    providers: HashMap<String, Arc<Semaphore>>,
}

/// Permits held while a node runs; dropping them frees the slots.
#[derive(Debug)]
pub struct Permits {
    _held: Vec<OwnedSemaphorePermit>,
    _fleet: Option<FleetSlot>,
}

impl Limits {
    /// `max_concurrency` nodes at once, and at most `providers[p]` calls to `p` at once.
    pub fn new(max_concurrency: usize, providers: &HashMap<String, usize>) -> Limits {
        let global_size = max_concurrency.clamp(1, MAX_LIMIT);
        Limits {
            global: Arc::new(Semaphore::new(global_size)),
            global_size,
            providers: providers
                .iter()
                .map(|(name, &n)| {
                    (name.clone(), (Arc::new(Semaphore::new(n.clamp(1, MAX_LIMIT))), n.clamp(1, MAX_LIMIT)))
                })
                .collect(),
            fleet: None,
        }
    }

    /// The same limits, with `fleet`'s held across every process on the database.
    pub fn with_fleet(self, fleet: Option<FleetLimits>) -> Limits {
        Limits { fleet, ..self }
    }

    /// The limits for one run of a conclave with these settings.
    pub fn for_run(self: &Arc<Self>, settings: &Settings) -> RunLimits {
        let run = settings
            .max_concurrency
            .map(|m| (m as usize).max(1))
            .filter(|&m| m < self.global_size)
            .map(|m| Arc::new(Semaphore::new(m)));
        let providers = settings
            .provider_limits
            .iter()
            .map(|(name, &n)| (name.clone(), (n as usize).max(1)))
            .filter(|(name, n)| self.providers.get(name).is_none_or(|&(_, engine)| *n < engine))
            .map(|(name, n)| (name, Arc::new(Semaphore::new(n))))
            .collect();
        RunLimits { engine: self.clone(), run, providers }
    }
}

impl RunLimits {
    /// Waits for a slot to run a node; `provider` for agents. The provider's slots
    /// are taken before the global ones, so a node queued behind its provider does
    /// not hold a slot other providers' nodes could use. Every node takes them in
    /// the same order, so waiting cannot deadlock.
    pub async fn acquire(&self, provider: Option<&str>) -> Permits {
        let mut held = Vec::with_capacity(4);
        if let Some(provider) = provider {
            let local =
                self.providers.get(provider).into_iter().chain(self.engine.providers.get(provider).map(|(s, _)| s));
            hold(local, &mut held).await;
        }
        // The fleet's slot of the provider comes after this process's and before the
        // global slots, so a node waiting for the fleet keeps no other node waiting here.
        let fleet = match (provider, &self.engine.fleet) {
            (Some(provider), Some(fleet)) => fleet.acquire(provider).await,
            _ => None,
        };
        hold(self.run.iter().chain([&self.engine.global]), &mut held).await;
        Permits { _held: held, _fleet: fleet }
    }
}

/// Takes a permit of each semaphore in order.
async fn hold<'a>(semaphores: impl Iterator<Item = &'a Arc<Semaphore>>, held: &mut Vec<OwnedSemaphorePermit>) {
    for semaphore in semaphores {
        // The engine never closes its semaphores, so acquiring only fails if one
        // were closed; the node then runs without that limit rather than not at all.
        if let Ok(permit) = semaphore.clone().acquire_owned().await {
            held.push(permit);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_conclave_may_lower_the_engine_limits_but_not_raise_them() {
        let engine = Arc::new(Limits::new(4, &HashMap::from([("openai".to_string(), 2)])));
        let mut settings = Settings { max_concurrency: Some(8), ..Settings::default() };
        settings.provider_limits.insert("openai".into(), 5);
        settings.provider_limits.insert("ollama".into(), 1);
        let run = engine.for_run(&settings);
        assert!(run.run.is_none(), "8 does not lower the engine's 4");
        assert!(!run.providers.contains_key("openai"), "5 does not lower the engine's 2");
        assert_eq!(run.providers.get("ollama").map(|s| s.available_permits()), Some(1));
        settings.max_concurrency = Some(2);
        assert_eq!(engine.for_run(&settings).run.map(|s| s.available_permits()), Some(2));
    }
}
