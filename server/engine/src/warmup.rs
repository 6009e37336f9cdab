//! Whether an agent's first call waits for a sibling's to write their shared prompt
//! prefix into the vendor's cache. A vendor caches a prefix only once the call that
//! wrote it began to be answered, so agents that start together would each pay to
//! write the same prefix. When it pays, the first of them leads and the others wait
//! until its response begins (`StreamSink::began`), then read the prefix from the
//! cache. It pays only when all of these hold (one rule, here): the provider caches
//! prompts (`Provider::caches_prompts`, off with `CONCLAVE_PROMPT_CACHE=off`); the
//! shared prefix reaches the model's minimum cacheable length, by the estimate that
//! also places the cache marks (`Provider::caches_prefix`); and at least two agents
//! of the run call that provider and model. Otherwise every sibling goes at once. A
//! leader that fails before its response begins lets the others go at once, without
//! the cache. Each first call's order is a `cache_order` event.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Mutex;
use std::time::Instant;
use tokio::sync::watch;

use async_trait::async_trait;
use conclave_core::{AgentRequest, Provider, StreamSink};
use conclave_shared::{CacheOrderReason, CacheRole, EventKind};
use serde_json::Value;

use crate::plan::Plan;

/// The prefixes a run's agents have started to write, and how many agents of the
/// run call each provider and model.
#[derive(Debug, Default)]
pub struct Warmups {
    prefixes: Mutex<HashMap<u64, Written>>,
    sharers: HashMap<(String, String), u32>,
}

/// A prefix being written: which node leads, and how far its call got.
#[derive(Debug)]
struct Written {
    leader: String,
    state: watch::Receiver<State>,
}

/// How far the call writing a prefix got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Sent, not answered yet: the prefix is not readable.
    Sent,
    /// Its response began: the prefix is in the cache.
    Cached,
    /// It failed (or was stopped) before its response began: nothing was written.
    Failed,
}

/// Held by the call that writes a prefix first. Its siblings go once it says its
/// response began ([`Leader::began`]) or it is finished or dropped.
#[derive(Debug)]
pub struct Leader(watch::Sender<State>);

impl Leader {
    /// The call's response began: the prefix is in the vendor's cache.
    pub fn began(&self) {
        self.settle(State::Cached);
    }

    /// The call returned, `answered` or not. A call answered without saying its
    /// response began (a provider that does not stream) wrote the prefix all the same.
    pub fn finish(self, answered: bool) {
        self.settle(if answered { State::Cached } else { State::Failed });
    }

    fn settle(&self, to: State) {
        self.0.send_if_modified(|state| {
            let first = *state == State::Sent;
            if first {
                *state = to;
            }
            first
        });
    }
}

impl Drop for Leader {
    /// A leader dropped unsettled (its task aborted) lets the others go.
    fn drop(&mut self) {
        self.settle(State::Failed);
    }
}

/// A call's sink that also tells the siblings of a leading call when its response
/// began.
pub struct Announcing<'a> {
    /// Where the call streams.
    pub inner: &'a dyn StreamSink,
    /// The guard of a leading call.
    pub leader: Option<&'a Leader>,
}

impl std::fmt::Debug for Announcing<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Announcing").field("leader", &self.leader).finish_non_exhaustive()
    }
}

#[async_trait]
impl StreamSink for Announcing<'_> {
    fn began(&self) {
        if let Some(leader) = self.leader {
            leader.began();
        }
        self.inner.began();
    }

    async fn text(&self, text: &str) {
        self.inner.text(text).await;
    }

    async fn tool_call(&self, tool: &str, arguments: Value) {
        self.inner.tool_call(tool, arguments).await;
    }
}

/// How an agent's first call goes, and the `cache_order` event that says so.
#[derive(Debug)]
pub struct Order {
    /// For the call that writes the prefix: hold it while the call is out.
    pub leader: Option<Leader>,
    /// The event.
    pub event: EventKind,
}

impl Warmups {
    /// For a run of `plan`: how many agents (each sample counted) call each provider
    /// and model, in the conclave, its loops' bodies and its nested conclaves.
    pub fn for_plan(plan: &Plan) -> Warmups {
        let mut sharers = HashMap::new();
        count_agents(plan, &mut sharers);
        Warmups { prefixes: Mutex::default(), sharers }
    }

    /// For the first call of agent `node_id` on `provider` (named `name`): leads,
    /// waits for the sibling writing the same prefix until its response began, or goes
    /// at once, by the rule in this module's header.
    pub async fn order(&self, node_id: &str, name: &str, provider: &dyn Provider, request: &AgentRequest) -> Order {
        let unordered = |reason| Order { leader: None, event: event(node_id, CacheRole::Unordered, reason, 0, None) };
        if !provider.caches_prompts() {
            return unordered(CacheOrderReason::NotCaching);
        }
        if !provider.caches_prefix(request) {
            return unordered(CacheOrderReason::ShortPrefix);
        }
        if self.sharers.get(&(name.to_string(), request.model.clone())).copied().unwrap_or(0) < 2 {
            return unordered(CacheOrderReason::NoSibling);
        }
        let key = prefix_key(name, request);
        let (leader, mut state) = {
            let mut prefixes = self.prefixes.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            match prefixes.get(&key) {
                Some(written) => (written.leader.clone(), written.state.clone()),
                None => {
                    let (sender, receiver) = watch::channel(State::Sent);
                    prefixes.insert(key, Written { leader: node_id.to_string(), state: receiver });
                    let event = event(node_id, CacheRole::Led, CacheOrderReason::FirstToWrite, 0, None);
                    return Order { leader: Some(Leader(sender)), event };
                }
            }
        };
        let started = Instant::now();
        // A leader's sender is dropped only after it settled, so `Sent` never stays.
        let settled = state.wait_for(|s| *s != State::Sent).await.map_or(State::Failed, |s| *s);
        let reason = match settled {
            State::Cached => CacheOrderReason::PrefixCached,
            State::Sent | State::Failed => CacheOrderReason::LeaderFailed,
        };
        let waited = started.elapsed().as_millis() as u64;
        Order { leader: None, event: event(node_id, CacheRole::Followed, reason, waited, Some(leader)) }
    }
}

fn event(
    node_id: &str,
    role: CacheRole,
    reason: CacheOrderReason,
    waited_ms: u64,
    leader: Option<String>,
) -> EventKind {
    EventKind::CacheOrder { node_id: node_id.to_string(), role, reason, waited_ms, leader }
}

/// Adds the agents of `plan` to `sharers`, by provider and model.
fn count_agents(plan: &Plan, sharers: &mut HashMap<(String, String), u32>) {
    for node in &plan.nodes {
        if let Some(agent) = &node.agent {
            let key = (agent.config.provider.clone(), agent.config.model.clone());
            *sharers.entry(key).or_default() += agent.samples.max(1);
        }
        if let Some(repeat) = &node.repeat {
            count_agents(&repeat.body, sharers);
        }
        if let Some(child) = &node.child {
            count_agents(child, sharers);
        }
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
    use conclave_core::{AgentReply, Capabilities, ProviderError};
    use conclave_shared::AgentConfig;
    use std::sync::Arc;
    use std::time::Duration;

    /// A provider that caches prompts whose shared prefix is at least `minimum` bytes.
    #[derive(Debug)]
    struct Caching {
        on: bool,
        minimum: usize,
    }

    #[async_trait]
    impl Provider for Caching {
        fn name(&self) -> &str {
            "p"
        }
        fn capabilities(&self) -> Capabilities {
            Capabilities { native_schema: None, tools: false, context_window: None }
        }
        fn default_model(&self) -> &str {
            "m"
        }
        fn caches_prompts(&self) -> bool {
            self.on
        }
        fn caches_prefix(&self, request: &AgentRequest) -> bool {
            self.on && request.shared_prefix.len() >= self.minimum
        }
        async fn call(&self, _: &AgentRequest, _: &dyn StreamSink) -> Result<AgentReply, ProviderError> {
            Err(ProviderError::Malformed("not called".into()))
        }
    }

    const ON: Caching = Caching { on: true, minimum: 4 };

    fn request(prefix: &str) -> AgentRequest {
        AgentRequest {
            run_id: "r".into(),
            node_id: "n".into(),
            model: "m".into(),
            shared_prefix: prefix.into(),
            system_prompt: String::new(),
            input: Value::Null,
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

    fn warmups(agents: u32) -> Arc<Warmups> {
        let sharers = HashMap::from([(("p".to_string(), "m".to_string()), agents)]);
        Arc::new(Warmups { prefixes: Mutex::default(), sharers })
    }

    fn said(order: &Order) -> (CacheRole, CacheOrderReason) {
        match &order.event {
            EventKind::CacheOrder { role, reason, .. } => (*role, *reason),
            other => panic!("not a cache_order event: {other:?}"),
        }
    }

    /// A follower of the leader of `prefix`, spawned.
    fn follower(warmups: &Arc<Warmups>, prefix: &'static str) -> tokio::task::JoinHandle<Order> {
        let warmups = warmups.clone();
        tokio::spawn(async move { warmups.order("b", "p", &ON, &request(prefix)).await })
    }

    #[tokio::test]
    async fn followers_wait_until_the_leaders_response_begins() {
        let warmups = warmups(3);
        let leader = warmups.order("a", "p", &ON, &request("diff")).await;
        assert_eq!(said(&leader), (CacheRole::Led, CacheOrderReason::FirstToWrite));
        let other = warmups.order("c", "p", &ON, &request("other")).await;
        assert_eq!(said(&other).0, CacheRole::Led, "another prefix has its own leader");
        let waiting = follower(&warmups, "diff");
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiting.is_finished(), "a follower waits while the leader's response has not begun");
        let guard = leader.leader.expect("the leader holds the guard");
        guard.began();
        let followed = waiting.await.expect("joins");
        assert_eq!(said(&followed), (CacheRole::Followed, CacheOrderReason::PrefixCached));
        assert!(followed.leader.is_none());
        match followed.event {
            EventKind::CacheOrder { waited_ms, leader, .. } => {
                assert!(waited_ms >= 20, "it says how long it waited: {waited_ms}");
                assert_eq!(leader.as_deref(), Some("a"));
            }
            other => panic!("{other:?}"),
        }
        guard.finish(true);
        let later = warmups.order("d", "p", &ON, &request("diff")).await;
        assert_eq!(said(&later), (CacheRole::Followed, CacheOrderReason::PrefixCached), "later calls never wait");
    }

    #[tokio::test]
    async fn a_leader_failing_before_its_response_began_lets_the_followers_go_without_the_cache() {
        let warmups = warmups(2);
        let leader = warmups.order("a", "p", &ON, &request("diff")).await.leader.expect("leads");
        let waiting = follower(&warmups, "diff");
        tokio::time::sleep(Duration::from_millis(20)).await;
        leader.finish(false);
        assert_eq!(said(&waiting.await.expect("joins")), (CacheRole::Followed, CacheOrderReason::LeaderFailed));
        // A leader whose task was aborted (dropped unsettled) lets them go too.
        let dropped = warmups.order("a", "p", &ON, &request("more")).await.leader.expect("leads");
        let waiting = follower(&warmups, "more");
        drop(dropped);
        assert_eq!(said(&waiting.await.expect("joins")).1, CacheOrderReason::LeaderFailed);
    }

    #[tokio::test]
    async fn calls_go_unordered_without_caching_a_long_enough_prefix_or_a_sibling() {
        let off = Caching { on: false, minimum: 4 };
        let order = warmups(3).order("a", "p", &off, &request("diff")).await;
        assert_eq!(said(&order), (CacheRole::Unordered, CacheOrderReason::NotCaching));
        assert!(order.leader.is_none());
        let order = warmups(3).order("a", "p", &ON, &request("dif")).await;
        assert_eq!(said(&order), (CacheRole::Unordered, CacheOrderReason::ShortPrefix));
        let order = warmups(1).order("a", "p", &ON, &request("diff")).await;
        assert_eq!(said(&order), (CacheRole::Unordered, CacheOrderReason::NoSibling));
    }
}
