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
    let mut reviewer = conclave(vendor, true);
    // A model whose minimum cacheable length is known (1,024 tokens), under the input.
    if vendor == Vendor::Anthropic
        && let Some(agent) = reviewer.nodes[1].agent.as_mut()
    {
        agent.model = "claude-sonnet-4-5".into();
    }
    let handle = engine.start(checked(reviewer), big_input(), options).await.expect("starts");
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
