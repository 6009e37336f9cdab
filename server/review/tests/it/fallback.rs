//! The local-model fallback of the review pipeline: agents whose provider has no key
//! move to the local model, with one line that says which and why.

use async_trait::async_trait;
use conclave_catalog::check_text;
use conclave_core::{AgentReply, AgentRequest, Capabilities, Provider, ProviderError, ProviderRegistry, StreamSink};
use conclave_review::fallback::fallback_to_local;
use conclave_review::pipeline::BUILTIN_REVIEW;
use conclave_testkit::test_catalog;
use std::sync::Arc;

/// A provider that is configured or not, and is never called.
#[derive(Debug)]
struct Stub {
    name: &'static str,
    default_model: &'static str,
    missing: Option<&'static str>,
}

#[async_trait]
impl Provider for Stub {
    fn name(&self) -> &str {
        self.name
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities { native_schema: None, tools: false, context_window: None }
    }

    fn check_config(&self) -> Result<(), ProviderError> {
        match self.missing {
            Some(message) => Err(ProviderError::Config { provider: self.name.into(), message: message.into() }),
            None => Ok(()),
        }
    }

    fn default_model(&self) -> &str {
        self.default_model
    }

    async fn call(&self, _request: &AgentRequest, _stream: &dyn StreamSink) -> Result<AgentReply, ProviderError> {
        Err(ProviderError::Transport("a stub is never called".into()))
    }
}

fn registry(anthropic_key: bool) -> ProviderRegistry {
    let mut providers = ProviderRegistry::default();
    let missing = (!anthropic_key).then_some("ANTHROPIC_API_KEY is not set; export it or pass --provider");
    providers.register(Arc::new(Stub { name: "anthropic", default_model: "claude-sonnet-4-5", missing }));
    providers.register(Arc::new(Stub { name: "local", default_model: "smollm2-135m", missing: None }));
    providers
}

#[test]
fn agents_without_a_key_fall_back_to_the_local_model_with_one_line() {
    let mut conclave = check_text("builtin", BUILTIN_REVIEW, &test_catalog()).expect("the built-in conclave checks");
    let fallback = fallback_to_local(&mut conclave, &registry(false)).expect("the agents moved");
    assert_eq!(fallback.agents, ["security", "correctness", "conventions", "writer"]);
    assert_eq!(
        fallback.to_string(),
        "a provider is not configured (anthropic: ANTHROPIC_API_KEY is not set); running security, correctness, conventions, writer on the local model (smollm2-135m) instead",
        "the line names no command-line flag: an API user has none"
    );
    let agents: Vec<_> = conclave.conclave().nodes.iter().filter_map(|n| n.agent.as_ref()).collect();
    assert!(agents.iter().all(|a| a.provider == "local" && a.model == "smollm2-135m"), "{agents:?}");

    let mut untouched = check_text("builtin", BUILTIN_REVIEW, &test_catalog()).expect("checks");
    assert_eq!(fallback_to_local(&mut untouched, &registry(true)), None);
    assert!(untouched.conclave().nodes.iter().filter_map(|n| n.agent.as_ref()).all(|a| a.provider == "anthropic"));
}
