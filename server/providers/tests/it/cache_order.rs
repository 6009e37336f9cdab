//! Sibling agents and the vendor's prompt cache, through the real engine and the real
//! Anthropic provider against the fake server keeping Anthropic's cache by its
//! documented rules: one sibling leads and the others wait only when the cache pays
//! (caching on, a shared prefix reaching the model's minimum, an unknown model taking
//! the largest documented minimum), only until the leader's response begins, and not
//! at all once the leader failed before it began; `cache_order` events say which.
//! OpenAI's followers go at the leader's first streamed event.

use conclave_core::{ProviderRegistry, RunStore};
use conclave_doubles::MemoryStore;
use conclave_engine::{Engine, EngineConfig, RunHandle, RunOptions};
use conclave_providers::anthropic::{AnthropicProvider, MAX_MIN_CACHEABLE_TOKENS, min_cacheable_tokens};
use conclave_providers::openai::OpenAiProvider;
use conclave_shared::{CacheOrderReason, CacheRole, EventKind, RunEvent, RunStatus};
use conclave_testkit::wire::{Vendor, status};
use conclave_testkit::{CacheRules, CacheUsage, FakeServer, Reply};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::providers_http::{KEY, checked, conclave};

/// A model whose documented minimum is 1,024 tokens.
const SONNET: &str = "claude-sonnet-4-5";

/// What the shared prefix adds before a run input that is a string.
const HEADING: &str = "## Run input\n\n";

/// A change long enough to be worth caching for Sonnet 4.5 (about 3,400 tokens).
fn big_input() -> Value {
    let diff: String = (1..=300).map(|i| format!("{i:>4} + let value_{i} = compute({i}); // step {i}\n")).collect();
    json!({"diff": diff})
}

/// A run input (a string) whose shared prefix is `bytes` bytes long (a token per
/// four bytes, by the estimate that places the cache marks).
fn prefix_of(bytes: usize) -> Value {
    json!("x".repeat(bytes - HEADING.len()))
}

/// Three reviewers side by side on `vendor`'s `model`, with no tools.
fn siblings(vendor: Vendor, model: &str) -> conclave_shared::Conclave {
    let mut conclave = conclave(vendor, false);
    let mut reviewer = conclave.nodes.remove(1);
    if let Some(agent) = reviewer.agent.as_mut() {
        agent.model = model.into();
    }
    conclave.edges.clear();
    for id in ["a", "b", "c"] {
        let mut node = reviewer.clone();
        node.id = id.into();
        conclave.nodes.insert(1, node);
        conclave.edges.push(conclave_shared::Edge { from: "input".into(), to: id.into(), case: None });
        conclave.edges.push(conclave_shared::Edge { from: id.into(), to: "out".into(), case: None });
    }
    conclave
}

/// Starts the siblings on Anthropic's `model` and `input` against `server`, with
/// `extra` environment for the provider.
async fn start(
    server: &FakeServer,
    model: &str,
    input: Value,
    extra: &[(&str, &str)],
) -> (RunHandle, Arc<MemoryStore>) {
    start_on(Vendor::Anthropic, server, model, input, extra).await
}

/// [`start`] on `vendor`.
async fn start_on(
    vendor: Vendor,
    server: &FakeServer,
    model: &str,
    input: Value,
    extra: &[(&str, &str)],
) -> (RunHandle, Arc<MemoryStore>) {
    let mut env: HashMap<&str, String> = vendor.env(&server.base, KEY).into_iter().collect();
    env.extend(extra.iter().map(|(k, v)| (*k, v.to_string())));
    let lookup = |k: &str| env.get(k).cloned();
    let mut providers = ProviderRegistry::default();
    match vendor {
        Vendor::Anthropic => providers.register(Arc::new(AnthropicProvider::from_env(&lookup))),
        _ => providers.register(Arc::new(OpenAiProvider::from_env(&lookup))),
    }
    let store = Arc::new(MemoryStore::new());
    let engine = Engine::new(providers, store.clone(), EngineConfig::default());
    let handle = engine.start(checked(siblings(vendor, model)), input, RunOptions::default()).await.expect("starts");
    (handle, store)
}

/// Each agent's `cache_order` event: its role, reason and wait, by node id.
fn orders(events: &[RunEvent]) -> HashMap<String, (CacheRole, CacheOrderReason, u64)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::CacheOrder { node_id, role, reason, waited_ms, .. } => {
                Some((node_id.clone(), (*role, *reason, *waited_ms)))
            }
            _ => None,
        })
        .collect()
}

/// The roles of the three siblings' first calls, sorted (led before followed
/// before unordered), each with its reason.
fn roles(events: &[RunEvent]) -> Vec<(CacheRole, CacheOrderReason)> {
    let mut roles: Vec<_> = orders(events).into_values().map(|(role, reason, _)| (role, reason)).collect();
    roles.sort_by_key(|(role, _)| *role as u8);
    roles
}

/// Starts the siblings against a server that answers after a minute; how many of
/// their calls arrived once `settled` says the count is final, or `patience` has
/// passed; and the run's events once it was cancelled.
async fn calls_before_any_answer(
    model: &str,
    input: Value,
    extra: &[(&str, &str)],
    settled: fn(usize) -> bool,
    patience: u64,
) -> (usize, Vec<RunEvent>, Vec<Value>) {
    let server = FakeServer::start_responding(|_| Reply::After {
        millis: 60_000,
        reply: Box::new(Vendor::Anthropic.answer("{}")),
    })
    .await;
    let (handle, store) = start(&server, model, input, extra).await;
    let deadline = Instant::now() + Duration::from_secs(patience);
    while !settled(server.requests().len()) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let calls = server.requests().len();
    handle.cancel();
    let outcome = handle.wait().await;
    let events = store.events(&outcome.run_id, 0).await.expect("events");
    (calls, events, server.requests().into_iter().map(|r| r.body).collect())
}

/// Whether a request marks its shared block for the cache.
fn marked(body: &Value) -> bool {
    body["system"][0].get("cache_control").is_some()
}

#[tokio::test]
async fn a_prefix_just_under_the_minimum_goes_unordered_and_one_just_over_leads() {
    let minimum = min_cacheable_tokens(SONNET);
    assert_eq!(minimum, 1024);
    // One byte short of the minimum's 4,096 bytes.
    let (calls, events, bodies) =
        calls_before_any_answer(SONNET, prefix_of(minimum * 4 - 1), &[], |n| n >= 3, 30).await;
    assert_eq!(bodies[0]["system"][0]["text"].as_str().map(str::len), Some(minimum * 4 - 1), "the prefix's size");
    assert_eq!(calls, 3, "below the minimum the three first calls go at once");
    assert!(bodies.iter().all(|b| !marked(b)), "and nothing is marked for the cache");
    assert_eq!(roles(&events), vec![(CacheRole::Unordered, CacheOrderReason::ShortPrefix); 3]);
    // Waiting 3 s for a second call that must never come.
    let (calls, events, bodies) = calls_before_any_answer(SONNET, prefix_of(minimum * 4), &[], |n| n >= 2, 3).await;
    assert_eq!(bodies[0]["system"][0]["text"].as_str().map(str::len), Some(minimum * 4));
    assert_eq!(calls, 1, "at the minimum one call leads; the others wait to read its prefix");
    assert!(marked(&bodies[0]), "the leader's shared block is marked");
    assert_eq!(orders(&events).len(), 1, "only the leader has gone: {events:?}");
    assert_eq!(roles(&events), vec![(CacheRole::Led, CacheOrderReason::FirstToWrite)]);
}

#[tokio::test]
async fn with_caching_off_every_sibling_starts_at_once() {
    let off = [("CONCLAVE_PROMPT_CACHE", "off")];
    let (calls, events, bodies) = calls_before_any_answer(SONNET, big_input(), &off, |n| n >= 3, 30).await;
    assert_eq!(calls, 3, "the three first calls go before any is answered");
    assert!(bodies.iter().all(|b| !b.to_string().contains("cache_control")));
    assert_eq!(roles(&events), vec![(CacheRole::Unordered, CacheOrderReason::NotCaching); 3]);
}

#[test]
fn models_take_their_documented_minimum_and_unknown_ones_the_largest() {
    let documented = [
        ("claude-opus-4-6", 4096),
        ("claude-opus-4-5-20251101", 4096),
        ("claude-haiku-4-5", 4096),
        ("claude-sonnet-4-6", 2048),
        ("claude-sonnet-4-5-20250929", 1024),
        ("anthropic.claude-sonnet-4-5-20250929-v1:0", 1024),
        ("claude-opus-4-1", 1024),
        ("claude-opus-4-20250514", 1024),
        ("claude-opus-4-0", 1024),
        ("claude-sonnet-4-20250514", 1024),
        ("claude-3-7-sonnet-latest", 1024),
        ("claude-3-5-haiku-20241022", 2048),
        ("claude-3-haiku-20240307", 2048),
    ];
    for (model, minimum) in documented {
        assert_eq!(min_cacheable_tokens(model), minimum, "{model}");
        if model.starts_with("claude-") {
            // The fake is Anthropic's own API, which knows its models by these names.
            let fake = conclave_testkit::prompt_cache::anthropic_minimum(model);
            assert_eq!(fake, minimum as u64, "the fake: {model}");
        }
    }
    assert_eq!(MAX_MIN_CACHEABLE_TOKENS, 4096);
    for unknown in ["test-model", "claude-opus-5", "claude-sonnet-latest", "claude-3-opus-20240229"] {
        assert_eq!(min_cacheable_tokens(unknown), MAX_MIN_CACHEABLE_TOKENS, "{unknown}");
    }
}

#[tokio::test]
async fn an_unknown_model_caches_only_from_the_largest_documented_minimum() {
    let unknown = "claude-unreleased";
    // About 3,400 tokens: enough for Sonnet 4.5, not for a model that may need 4,096.
    let (calls, events, bodies) = calls_before_any_answer(unknown, big_input(), &[], |n| n >= 3, 30).await;
    assert_eq!(calls, 3, "no sibling waits for a cache that may not be written");
    assert!(bodies.iter().all(|b| !marked(b)));
    assert_eq!(roles(&events), vec![(CacheRole::Unordered, CacheOrderReason::ShortPrefix); 3]);
    let (calls, events, bodies) =
        calls_before_any_answer(unknown, prefix_of(MAX_MIN_CACHEABLE_TOKENS * 4), &[], |n| n >= 2, 3).await;
    assert_eq!(calls, 1, "at 4,096 tokens it leads");
    assert!(marked(&bodies[0]));
    assert_eq!(roles(&events), vec![(CacheRole::Led, CacheOrderReason::FirstToWrite)]);
}

/// A valid answer of the siblings' schema.
fn answer() -> Reply {
    Vendor::Anthropic.answer(r#"{"verdict":"approve","line":3}"#)
}

/// What a run of the three siblings on a big input did against a caching fake that
/// answers with `reply`.
struct Round {
    events: Vec<RunEvent>,
    log: Vec<CacheUsage>,
    /// Each request's arrival, and when its response began and ended, from the
    /// first arrival.
    times: Vec<(Duration, Option<Duration>, Option<Duration>)>,
}

async fn round(reply: fn(&Value) -> Reply) -> Round {
    let server = FakeServer::start_responding(reply).await;
    let cache = server.keep_prompt_cache(CacheRules::Anthropic);
    let (handle, store) = start(&server, SONNET, big_input(), &[]).await;
    let outcome = handle.wait().await;
    assert_eq!(outcome.status, RunStatus::Succeeded, "{:?}", outcome.error);
    let events = store.events(&outcome.run_id, 0).await.expect("events");
    let requests = server.requests();
    let zero = requests[0].at;
    let since = |t: Instant| t.duration_since(zero);
    let times = requests
        .iter()
        .zip(server.answered())
        .map(|(r, a)| (since(r.at), a.began.map(since), a.ended.map(since)))
        .collect();
    Round { events, log: cache.log(), times }
}

/// Billed input, a cache read at 0.1 of an input token and a write at 1.25.
fn billed(log: &[CacheUsage]) -> f64 {
    log.iter().map(|u| u.billed(0.1, 1.25)).sum()
}

#[tokio::test]
async fn followers_go_when_the_leaders_response_begins_and_read_its_prefix() {
    // The response begins after 0.3 s and ends after 2 s.
    let paced = round(|_| Reply::Paced { begin_ms: 300, end_ms: 2000, reply: Box::new(answer()) }).await;
    let Round { events, log, times } = &paced;
    assert_eq!(times.len(), 3, "{times:?}");
    let (_, leader_began, leader_ended) = times[0];
    let (leader_began, leader_ended) = (leader_began.expect("began"), leader_ended.expect("ended"));
    for (at, _, _) in &times[1..] {
        assert!(*at >= leader_began, "a follower went before the leader's response began: {times:?}");
        assert!(*at < leader_ended, "a follower waited for the leader's whole answer: {times:?}");
    }
    let round_end = times.iter().filter_map(|t| t.2).max().expect("ended");
    println!("the specialists' round took {round_end:?}: {times:?}");
    // Followers sent after the leader's whole answer would end 4 s after it began at the
    // earliest (2 s each); sent when its response began, 2.3 s and some scheduling.
    assert!(round_end < Duration::from_secs(4), "the round took {round_end:?}");
    assert_eq!(log.iter().filter(|u| u.written > 0 && u.read == 0).count(), 1, "one call writes: {log:?}");
    assert_eq!(log.iter().filter(|u| u.read > 0).count(), 2, "two read the prefix by the cache's rule: {log:?}");
    let mut roles = roles(events);
    roles.sort_by_key(|(role, _)| *role as u8);
    assert_eq!(
        roles,
        vec![
            (CacheRole::Led, CacheOrderReason::FirstToWrite),
            (CacheRole::Followed, CacheOrderReason::PrefixCached),
            (CacheRole::Followed, CacheOrderReason::PrefixCached)
        ]
    );
    assert!(orders(events).values().filter(|o| o.0 == CacheRole::Followed).all(|o| o.2 > 0), "they say they waited");
    // The order the engine had before, the followers waiting for the leader's whole
    // answer, is what a response that begins when it ends gives.
    let whole = round(|_| Reply::After { millis: 2000, reply: Box::new(answer()) }).await;
    let (now, before) = (billed(log), billed(&whole.log));
    println!("billed input: {now:.0} tokens, {before:.0} when the followers waited for the whole answer");
    assert!((now - before).abs() <= before * 0.05, "billed input {now:.0} against {before:.0}");
}

#[tokio::test]
async fn a_leader_failing_before_its_response_begins_lets_the_followers_go_at_once() {
    let refused =
        status(400, Vec::new(), json!({"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}));
    // The followers' responses begin late enough that neither reads what the other writes.
    let late = || Reply::After { millis: 300, reply: Box::new(answer()) };
    let script = vec![Reply::After { millis: 300, reply: Box::new(refused) }, late(), late()];
    let server = FakeServer::start(script).await;
    let cache = server.keep_prompt_cache(CacheRules::Anthropic);
    let (handle, store) = start(&server, SONNET, big_input(), &[]).await;
    let outcome = handle.wait().await;
    let events = store.events(&outcome.run_id, 0).await.expect("events");
    let orders = orders(&events);
    let leader = orders.iter().find(|(_, o)| o.0 == CacheRole::Led).map(|(id, _)| id.clone()).expect("a leader");
    assert_eq!(outcome.status, RunStatus::Failed);
    assert_eq!(outcome.failed_node.as_deref(), Some(leader.as_str()), "{:?}", outcome.error);
    let completed: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::NodeCompleted { node_id, .. } if ["a", "b", "c"].contains(&node_id.as_str()) => {
                Some(node_id.as_str())
            }
            _ => None,
        })
        .collect();
    assert_eq!(completed.len(), 2, "both followers succeed: {events:?}");
    for (id, (role, reason, _)) in &orders {
        if *id != leader {
            assert_eq!((*role, *reason), (CacheRole::Followed, CacheOrderReason::LeaderFailed));
        }
    }
    let requests = server.requests();
    let failed = server.answered()[0].ended.expect("the refusal was sent");
    assert!(requests[1..].iter().all(|r| r.at >= failed), "the followers went after the leader failed");
    assert!(cache.log().iter().all(|u| u.read == 0), "the leader wrote nothing for them to read: {:?}", cache.log());
}

#[tokio::test]
async fn openai_followers_go_at_the_leaders_first_streamed_event() {
    let server = FakeServer::start_responding(|_| Reply::Paced {
        begin_ms: 300,
        end_ms: 2000,
        reply: Box::new(Vendor::OpenAiChat.answer(r#"{"verdict":"approve","line":3,"note":null}"#)),
    })
    .await;
    let cache = server.keep_prompt_cache(CacheRules::OpenAi);
    let on = [("CONCLAVE_PROMPT_CACHE", "on")];
    let (handle, store) = start_on(Vendor::OpenAiChat, &server, "gpt-4.1", big_input(), &on).await;
    let outcome = handle.wait().await;
    assert_eq!(outcome.status, RunStatus::Succeeded, "{:?}", outcome.error);
    let (requests, answered) = (server.requests(), server.answered());
    let (began, ended) = (answered[0].began.expect("began"), answered[0].ended.expect("ended"));
    assert!(requests[1..].iter().all(|r| r.at >= began && r.at < ended), "the followers went when it began");
    let events = store.events(&outcome.run_id, 0).await.expect("events");
    assert_eq!(
        roles(&events),
        vec![
            (CacheRole::Led, CacheOrderReason::FirstToWrite),
            (CacheRole::Followed, CacheOrderReason::PrefixCached),
            (CacheRole::Followed, CacheOrderReason::PrefixCached)
        ]
    );
    let log = cache.log();
    assert_eq!(log.iter().filter(|u| u.read > 0).count(), 2, "the followers read the prefix: {log:?}");
}
