//! Requests laid out for the vendors' prompt caches, through the real engine against
//! the fake server keeping each vendor's cache by its documented rules
//! (`conclave_testkit::prompt_cache`): the shared prefix first, the same tools in
//! every call, Anthropic's marks (never more than 4) and OpenAI's
//! `prompt_cache_key`, and usage read as each vendor reports it.

use conclave_core::{ProviderRegistry, RunStore, ToolRunner};
use conclave_doubles::MemoryStore;
use conclave_engine::{Engine, EngineConfig, RunOptions};
use conclave_shared::{EventKind, RunStatus, Usage};
use conclave_testkit::wire::Vendor;
use conclave_testkit::{CacheRules, CacheUsage, FakeServer, Recorded};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;

use crate::providers_http::{FakeTools, KEY, checked, conclave};

/// A change long enough to be worth caching (about 3,000 tokens).
fn big_input() -> Value {
    let diff: String = (1..=300).map(|i| format!("{i:>4} + let value_{i} = compute({i}); // step {i}\n")).collect();
    json!({"diff": diff})
}

/// Runs the one-reviewer conclave with tools (a tool turn, a last tool-phase turn,
/// the extraction turn) against a caching fake; returns the requests, the cache's
/// log and the agent's usage.
async fn cached_run(vendor: Vendor, rules: CacheRules) -> (Vec<Recorded>, Vec<CacheUsage>, Usage, String) {
    // OpenAI's strict mode makes the optional `note` required and nullable.
    let valid = match vendor {
        Vendor::Anthropic => json!({"verdict": "approve", "line": 3}),
        _ => json!({"verdict": "approve", "line": 3, "note": null}),
    }
    .to_string();
    let script = vec![
        vendor.tool_calls(&[("call_1", "read_file", json!({"path": "src/lib.rs"}))]),
        vendor.answer("I have read the file; it looks fine."),
        vendor.answer(&valid),
    ];
    let server = FakeServer::start(script).await;
    let cache = server.keep_prompt_cache(rules);
    let mut env: HashMap<&str, String> = vendor.env(&server.base, KEY).into_iter().collect();
    env.insert("CONCLAVE_PROMPT_CACHE", "on".into());
    let lookup = |k: &str| env.get(k).cloned();
    let mut providers = ProviderRegistry::default();
    match vendor {
        Vendor::Anthropic => {
            providers.register(Arc::new(conclave_providers::anthropic::AnthropicProvider::from_env(&lookup)))
        }
        _ => providers.register(Arc::new(conclave_providers::openai::OpenAiProvider::from_env(&lookup))),
    }
    let store: Arc<dyn RunStore> = Arc::new(MemoryStore::new());
    let engine = Engine::new(providers, store.clone(), EngineConfig::default());
    let options = RunOptions { tools: Some(Arc::new(FakeTools) as Arc<dyn ToolRunner>), ..RunOptions::default() };
    let handle = engine.start(checked(conclave(vendor, true)), big_input(), options).await.expect("starts");
    let outcome = handle.wait().await;
    assert_eq!(outcome.status, RunStatus::Succeeded, "{:?}", outcome.error);
    let events = store.events(&outcome.run_id, 0).await.expect("events");
    let usage = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::NodeCompleted { node_id, usage, .. } if node_id == "reviewer" => Some(usage.clone()),
            _ => None,
        })
        .expect("the agent's usage");
    (server.requests(), cache.log(), usage, outcome.run_id)
}

#[tokio::test]
async fn anthropic_marks_the_shared_prefix_the_instructions_and_the_conversation() {
    let (requests, log, usage, _) = cached_run(Vendor::Anthropic, CacheRules::Anthropic).await;
    assert_eq!(requests.len(), 3);
    for r in &requests {
        let body = &r.body;
        assert!(body["system"][0]["text"].as_str().expect("a shared block").starts_with("## Run input"));
        assert_eq!(body["system"][0]["cache_control"], json!({"type": "ephemeral"}));
        assert_eq!(body["system"][1]["text"], "Review the change.");
        assert_eq!(body["tools"], requests[0].body["tools"], "the same tools in every call");
        assert!(body.get("tool_choice").is_none(), "tool_choice never changes, so the conversation stays cached");
        assert!(body.to_string().matches("\"cache_control\"").count() <= 4);
    }
    let last = requests[2].body["messages"].as_array().expect("messages").last().expect("a message").clone();
    assert!(last.to_string().contains("cache_control"), "the conversation's last block is marked: {last}");
    assert_eq!(log[0].read, 0);
    assert!(log[1].read > 0 && log[2].read > log[1].read, "each turn reads the one before: {log:?}");
    let read: u64 = log.iter().map(|u| u.read).sum();
    let written: u64 = log.iter().map(|u| u.written).sum();
    let uncached: u64 = log.iter().map(|u| u.uncached()).sum();
    assert_eq!((usage.cache_read_tokens, usage.cache_write_tokens, usage.input_tokens), (read, written, uncached));
}

async fn openai(vendor: Vendor) {
    let (requests, log, usage, run_id) = cached_run(vendor, CacheRules::OpenAi).await;
    assert_eq!(requests.len(), 3);
    for r in &requests {
        assert_eq!(r.body["prompt_cache_key"], json!(format!("conclave-{run_id}")));
        assert_eq!(r.body["tools"], requests[0].body["tools"], "the same tools in every call");
        let system = match vendor {
            Vendor::OpenAiResponses => r.body["instructions"].as_str().expect("instructions").to_string(),
            _ => r.body["messages"][0]["content"].as_str().expect("a system message").to_string(),
        };
        assert!(system.starts_with("## Run input"), "the shared prefix comes first: {system}");
    }
    assert!(requests[0].body.get("tool_choice").is_none());
    assert_eq!(requests[2].body["tool_choice"], "none", "the final answer may not call a tool");
    assert!(log[1].read >= 1024, "the second call reads the first one's prefix: {log:?}");
    let read: u64 = log.iter().map(|u| u.read).sum();
    let total: u64 = log.iter().map(|u| u.total).sum();
    assert_eq!(usage.cache_read_tokens, read);
    assert_eq!(usage.input_tokens + usage.cache_read_tokens, total, "the cached tokens are not counted twice");
}

#[tokio::test]
async fn openai_chat_sends_the_prefix_first_with_a_cache_key_and_reads_cached_tokens() {
    openai(Vendor::OpenAiChat).await;
}

#[tokio::test]
async fn openai_responses_sends_the_prefix_first_with_a_cache_key_and_reads_cached_tokens() {
    openai(Vendor::OpenAiResponses).await;
}

/// Three reviewers side by side on Anthropic, with no tools.
fn siblings() -> conclave_shared::Conclave {
    let mut conclave = conclave(Vendor::Anthropic, false);
    let reviewer = conclave.nodes.remove(1);
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

/// Starts the three siblings on `input` against a server that answers after a
/// minute; how many of their calls have arrived once `settled` says the count is
/// final, or `patience` has passed. The run is cancelled before it returns.
async fn calls_before_any_answer(input: Value, settled: fn(usize) -> bool, patience: u64) -> usize {
    let server = FakeServer::start_responding(|_| conclave_testkit::Reply::After {
        millis: 60_000,
        reply: Box::new(Vendor::Anthropic.answer("{}")),
    })
    .await;
    let env: HashMap<&str, String> = Vendor::Anthropic.env(&server.base, KEY).into_iter().collect();
    let lookup = |k: &str| env.get(k).cloned();
    let mut providers = ProviderRegistry::default();
    providers.register(Arc::new(conclave_providers::anthropic::AnthropicProvider::from_env(&lookup)));
    let engine = Engine::new(providers, Arc::new(MemoryStore::new()), EngineConfig::default());
    let handle = engine.start(checked(siblings()), input, RunOptions::default()).await.expect("starts");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(patience);
    while !settled(server.requests().len()) && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    handle.cancel();
    server.requests().len()
}

#[tokio::test]
async fn siblings_start_together_unless_their_shared_prefix_is_long_enough_to_cache() {
    // A prefix of a few hundred tokens, far below Sonnet's 1,024: no cache to share,
    // so no call waits for another.
    let short = calls_before_any_answer(json!({"diff": "+ let x = 1;"}), |n| n >= 3, 30).await;
    assert_eq!(short, 3, "the three first calls go at once, before any is answered");
    // About 3,000 tokens: the first call writes the prefix and the others wait for it.
    // (Waiting 3 s for a second call that must never come.)
    let long = calls_before_any_answer(big_input(), |n| n >= 2, 3).await;
    assert_eq!(long, 1, "one call leads; the others wait to read its prefix from the cache");
}
