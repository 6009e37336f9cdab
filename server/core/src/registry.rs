//! The providers available to a run, by name, and the names a conclave may use.
//! `conclave-providers` builds the registry of the built-in vendors and says which
//! names they have (those its build leaves out included); tests register fakes.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use crate::provider::{Provider, ProviderError};
use crate::record::{RecordingProvider, ReplayingProvider};
use crate::record_tools::{RecordingToolServers, ReplayingToolServers};
use crate::redact::{RedactingProvider, Redactor};
use crate::tool_servers::ToolServers;

/// The providers available to a run, by name.
#[derive(Debug, Clone, Default)]
pub struct ProviderRegistry {
    providers: BTreeMap<String, Arc<dyn Provider>>,
    /// Names a conclave may use whether or not this build registered them, in the
    /// order they are listed to users.
    known: Vec<String>,
    /// The redactor every provider was wrapped with, which recordings use too.
    redactor: Option<Arc<Redactor>>,
    /// How runs connect to the MCP servers their conclaves declare, if they may.
    tool_servers: Option<Arc<dyn ToolServers>>,
}

impl ProviderRegistry {
    /// The same providers, each wrapped so its every output passes through `redactor`.
    pub fn redacted(self, redactor: Arc<Redactor>) -> ProviderRegistry {
        let providers = self
            .providers
            .into_iter()
            .map(|(name, p)| {
                let wrapped: Arc<dyn Provider> = Arc::new(RedactingProvider::new(p, redactor.clone()));
                (name, wrapped)
            })
            .collect();
        ProviderRegistry { providers, known: self.known, redactor: Some(redactor), tool_servers: self.tool_servers }
    }

    /// The same providers, each writing every call it answers into `dir` (see
    /// `record.rs`), its request redacted as the providers' outputs are.
    pub fn recording(self, dir: &Path) -> ProviderRegistry {
        let redactor = self.redactor.clone();
        let mut registry = self.wrapped(|p| Arc::new(RecordingProvider::new(p, dir.to_path_buf(), redactor.clone())));
        registry.tool_servers = registry.tool_servers.take().map(|inner| {
            Arc::new(RecordingToolServers::new(inner, dir.to_path_buf(), redactor)) as Arc<dyn ToolServers>
        });
        registry
    }

    /// The same providers' names and capabilities, answering every call from the
    /// recordings in `dir` and never calling the providers themselves.
    pub fn replaying(self, dir: &Path) -> ProviderRegistry {
        let redactor = self.redactor.clone();
        let mut registry = self.wrapped(|p| Arc::new(ReplayingProvider::new(p, dir.to_path_buf(), redactor.clone())));
        // No server is started in a replay: every listing and call is answered from `dir`.
        registry.tool_servers = Some(Arc::new(ReplayingToolServers::new(dir.to_path_buf(), redactor)));
        registry
    }

    /// The same providers, with runs connecting to MCP servers through `servers`.
    pub fn with_tool_servers(mut self, servers: Arc<dyn ToolServers>) -> ProviderRegistry {
        self.tool_servers = Some(servers);
        self
    }

    /// How runs connect to MCP servers, if they may.
    pub fn tool_servers(&self) -> Option<Arc<dyn ToolServers>> {
        self.tool_servers.clone()
    }

    fn wrapped(self, wrap: impl Fn(Arc<dyn Provider>) -> Arc<dyn Provider>) -> ProviderRegistry {
        let providers = self.providers.into_iter().map(|(name, p)| (name, wrap(p))).collect();
        ProviderRegistry { providers, known: self.known, redactor: self.redactor, tool_servers: self.tool_servers }
    }

    /// The redactor every provider was wrapped with, if any: the secrets this
    /// process knows, which the engine also takes out of what commands print.
    pub fn redactor(&self) -> Option<Arc<Redactor>> {
        self.redactor.clone()
    }

    /// Adds (or replaces) a provider.
    pub fn register(&mut self, provider: Arc<dyn Provider>) {
        self.providers.insert(provider.name().to_string(), provider);
    }

    /// Makes `names` known, listed first and in this order, even those no provider is
    /// registered under (a provider this build leaves out is then reported as not
    /// compiled in rather than unknown).
    pub fn know(&mut self, names: &[&str]) {
        for name in names {
            if !self.known.iter().any(|k| k == name) {
                self.known.push(name.to_string());
            }
        }
    }

    /// Looks a provider up.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Provider>> {
        self.providers.get(name).cloned()
    }

    /// Names a conclave may use: the known names, then any other registered.
    pub fn known_names(&self) -> Vec<String> {
        let mut names = self.known.clone();
        for name in self.providers.keys() {
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
        names
    }

    /// The default model of a registered provider.
    pub fn default_model(&self, name: &str) -> Option<String> {
        self.providers.get(name).map(|p| p.default_model().to_string())
    }

    /// Every registered provider with whether it is configured.
    pub fn status(&self) -> Vec<(String, Result<(), ProviderError>)> {
        self.providers.iter().map(|(name, p)| (name.clone(), p.check_config())).collect()
    }
}
