//! The local-model fallback: agents whose provider is not configured (no key) run on
//! the embedded model instead, and the review says so. What it did is data
//! ([`Fallback`]); each interface adds how to turn it off (the CLI its flag, the API
//! its field).

use conclave_catalog::CheckedConclave;
use conclave_core::{ProviderError, ProviderRegistry};
use std::fmt;

/// The provider agents fall back to when theirs is not configured.
pub const FALLBACK_PROVIDER: &str = "local";

/// Agents moved to the local model because their provider is not configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fallback {
    /// Why, once per provider: `provider: what is missing`.
    pub reasons: Vec<String>,
    /// The agents moved, in conclave order.
    pub agents: Vec<String>,
    /// The local model they run on.
    pub model: String,
}

impl fmt::Display for Fallback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} not configured ({}); running {} on the local model ({}) instead",
            if self.reasons.len() == 1 { "a provider is" } else { "providers are" },
            self.reasons.join("; "),
            self.agents.join(", "),
            self.model,
        )
    }
}

/// The agents whose provider is not configured (no key), each with why, in conclave
/// order.
pub fn unconfigured_agents(conclave: &CheckedConclave, providers: &ProviderRegistry) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for node in &conclave.conclave().nodes {
        let Some(agent) = node.agent.as_ref() else { continue };
        let Some(provider) = providers.get(&agent.provider) else { continue };
        if let Err(ProviderError::Config { message, .. }) = provider.check_config() {
            found.push((
                node.id.clone(),
                format!("{}: {}", agent.provider, message.split(';').next().unwrap_or(&message)),
            ));
        }
    }
    found
}

/// Moves every agent whose provider is not configured (no key) onto the local model;
/// returns what moved, or `None` when nothing did.
pub fn fallback_to_local(conclave: &mut CheckedConclave, providers: &ProviderRegistry) -> Option<Fallback> {
    let model = providers.default_model(FALLBACK_PROVIDER)?;
    let mut fallback = Fallback { reasons: Vec::new(), agents: Vec::new(), model };
    for (id, reason) in unconfigured_agents(conclave, providers) {
        if !fallback.reasons.contains(&reason) {
            fallback.reasons.push(reason);
        }
        conclave.reassign(&id, FALLBACK_PROVIDER, &fallback.model);
        fallback.agents.push(id);
    }
    (!fallback.agents.is_empty()).then_some(fallback)
}
