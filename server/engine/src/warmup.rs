//! The first call of sibling agents that share a prompt prefix goes alone. A vendor's
//! prompt cache holds a prefix only once the call that wrote it has been answered,
//! so agents that start together would each pay to write the same prefix; instead
//! the first of them leads and the others wait until its call is answered, then
//! read the prefix from the cache. Only for providers that cache prompts
//! (`Provider::caches_prompts`), and only for an agent's first call.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Mutex;
use tokio::sync::watch;

use conclave_core::AgentRequest;

/// The prefixes a run's agents have started to write, each with whether its
/// writer's call was answered.
#[derive(Debug, Default)]
pub struct Warmups {
    prefixes: Mutex<HashMap<u64, watch::Receiver<bool>>>,
}

/// Held by the call that writes a prefix first; dropping it (the call answered or
/// failed) lets the agents waiting on that prefix go.
#[derive(Debug)]
pub struct Leader(watch::Sender<bool>);

impl Drop for Leader {
    fn drop(&mut self) {
        let _ = self.0.send(true);
    }
}

impl Warmups {
    /// For the first call of an agent: `Some` when this call writes the prefix (hold
    /// the guard until it is answered), else `None` once the call that writes it was
    /// answered.
    pub async fn lead_or_wait(&self, provider: &str, request: &AgentRequest) -> Option<Leader> {
        let key = prefix_key(provider, request);
        let mut waiting = {
            let mut prefixes = self.prefixes.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            match prefixes.get(&key) {
                Some(done) => done.clone(),
                None => {
                    let (sender, receiver) = watch::channel(false);
                    prefixes.insert(key, receiver);
                    return Some(Leader(sender));
                }
            }
        };
        // A leader dropped without sending (its task aborted) also lets them go.
        let _ = waiting.wait_for(|answered| *answered).await;
        None
    }
}

/// What decides whether two calls share their cached prefix: the provider, the
/// model, the tools offered (they come first) and the shared prefix.
fn prefix_key(provider: &str, request: &AgentRequest) -> u64 {
    let mut hasher = DefaultHasher::new();
    provider.hash(&mut hasher);
    request.model.hash(&mut hasher);
    for tool in &request.tools {
        tool.name.hash(&mut hasher);
        tool.description.hash(&mut hasher);
        tool.parameters.to_string().hash(&mut hasher);
    }
    request.shared_prefix.hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use conclave_shared::AgentConfig;
    use std::sync::Arc;
    use std::time::Duration;

    fn request(prefix: &str) -> AgentRequest {
        AgentRequest {
            run_id: "r".into(),
            node_id: "n".into(),
            model: "m".into(),
            shared_prefix: prefix.into(),
            system_prompt: String::new(),
            input: serde_json::Value::Null,
            messages: Vec::new(),
            tools: Vec::new(),
            tool_calls_allowed: false,
            output_schema: None,
            max_tokens: 1,
            agent: Arc::new(AgentConfig::new("p")),
            dialect: None,
            attempt: 1,
            max_turns: 1,
            workdir: None,
        }
    }

    #[tokio::test]
    async fn followers_wait_for_the_leader_and_other_prefixes_do_not() {
        let warmups = Arc::new(Warmups::default());
        let leader = warmups.lead_or_wait("p", &request("diff")).await;
        assert!(leader.is_some(), "the first call leads");
        assert!(warmups.lead_or_wait("p", &request("other")).await.is_some(), "another prefix has its own leader");
        let follower = tokio::spawn({
            let warmups = warmups.clone();
            async move { warmups.lead_or_wait("p", &request("diff")).await.is_none() }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!follower.is_finished(), "a follower waits while the leader's call is out");
        drop(leader);
        assert!(follower.await.expect("joins"), "the follower goes once the leader was answered, without leading");
        assert!(warmups.lead_or_wait("p", &request("diff")).await.is_none(), "later calls never wait");
    }
}
