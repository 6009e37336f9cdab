//! The vendors' prompt caches, as their documentation describes them, for the fake
//! server: each request's usage is worked out from what earlier requests wrote, and
//! reported the way the vendor reports it.
//!
//! **Anthropic.** The prompt is a sequence of blocks: the tools, then the system
//! blocks, then each message's content blocks. A block marked with `cache_control`
//! is a breakpoint; a request may mark at most [`MAX_MARKS`] (more is a 400). A
//! breakpoint whose prefix has at least the model's minimum ([`anthropic_minimum`])
//! writes the prefix up to it; nothing else is ever written. A request reads the longest prefix written
//! earlier that ends at a block boundary at most 20 blocks before one of its
//! breakpoints and is identical up to there. A change of `tool_choice` changes the
//! message blocks' prefixes (the tools and system stay cached). An entry lives 5
//! minutes from its last use. Usage: `cache_read_input_tokens`,
//! `cache_creation_input_tokens` (from the read prefix to the last breakpoint
//! written) and `input_tokens` (the rest).
//!
//! **OpenAI.** Caching is automatic: the prompt (tools, the output schema, then the
//! messages or the instructions and input) is cached whole after each request, per
//! `prompt_cache_key` and model; a request of at least 1,024 tokens reads the longest
//! prefix it shares with an entry, in steps of 128 tokens from 1,024. Usage:
//! `prompt_tokens` (all of them) with `prompt_tokens_details.cached_tokens` (Chat
//! Completions), or `input_tokens` with `input_tokens_details.cached_tokens`
//! (Responses). Entries live 5 minutes from their last use.
//!
//! What a request writes becomes readable once its response begins (the server
//! commits it when it sends the stream's first chunk), as Anthropic documents ("a
//! cache entry only becomes available after the first response begins"): requests
//! sent before then do not read it, and a request that fails writes nothing. Tokens
//! are counted as a quarter of the bytes of each block's JSON, rounded up.

use serde_json::{Value, json};
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The most blocks of one Anthropic request that may carry `cache_control`.
pub const MAX_MARKS: usize = 4;

/// How far before a breakpoint Anthropic looks for a cached prefix, in blocks.
const LOOKBACK: usize = 20;

/// How long an entry lives after its last use.
pub const LIFETIME: Duration = Duration::from_secs(5 * 60);

/// Whose rules apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheRules {
    /// Anthropic's Messages API: explicit breakpoints.
    Anthropic,
    /// OpenAI's Chat Completions and Responses APIs: automatic prefix caching.
    OpenAi,
}

/// One request's prompt tokens, as the cache split them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheUsage {
    /// Every prompt token.
    pub total: u64,
    /// Read from the cache.
    pub read: u64,
    /// Written to the cache (Anthropic only; OpenAI does not bill writes apart).
    pub written: u64,
}

impl CacheUsage {
    /// Tokens neither read nor written.
    pub fn uncached(&self) -> u64 {
        self.total - self.read - self.written
    }

    /// Input billed in input-token units, a read at `read` of an input token and a
    /// write at `write`.
    pub fn billed(&self, read: f64, write: f64) -> f64 {
        self.uncached() as f64 + self.read as f64 * read + self.written as f64 * write
    }
}

/// What a request will write once it has been answered.
#[derive(Debug, Default)]
pub struct Pending {
    prefixes: Vec<u64>,
    prompt: Option<(String, String)>,
}

/// Why a request was refused by the cache's rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused(pub String);

/// A vendor's prompt cache.
#[derive(Debug)]
pub struct PromptCache {
    rules: CacheRules,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Anthropic: prefix hashes and when each was last used.
    prefixes: HashMap<u64, Instant>,
    /// OpenAI: whole prompts by partition, with when each was last used.
    prompts: HashMap<String, Vec<(String, Instant)>>,
    /// Time added to the clock, for tests of the lifetime.
    skew: Duration,
    /// Every request's usage, in order.
    log: Vec<CacheUsage>,
}

impl PromptCache {
    /// An empty cache under `rules`.
    pub fn new(rules: CacheRules) -> PromptCache {
        PromptCache { rules, state: Mutex::default() }
    }

    /// Moves the cache's clock forward.
    pub fn advance(&self, by: Duration) {
        self.lock().skew += by;
    }

    /// The usage of every request so far, in order.
    pub fn log(&self) -> Vec<CacheUsage> {
        self.lock().log.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Works out a request's usage; what it writes is kept by [`PromptCache::commit`].
    pub fn usage(&self, body: &Value) -> Result<(CacheUsage, Pending), Refused> {
        match self.rules {
            CacheRules::Anthropic => self.anthropic(body),
            CacheRules::OpenAi => Ok(self.openai(body)),
        }
    }

    /// Keeps what an answered request wrote.
    pub fn commit(&self, pending: Pending) {
        let mut state = self.lock();
        let now = Instant::now() + state.skew;
        for prefix in pending.prefixes {
            state.prefixes.insert(prefix, now);
        }
        if let Some((partition, prompt)) = pending.prompt {
            state.prompts.entry(partition).or_default().push((prompt, now));
        }
    }

    fn anthropic(&self, body: &Value) -> Result<(CacheUsage, Pending), Refused> {
        let blocks = anthropic_blocks(body);
        let marks: Vec<usize> = blocks.iter().enumerate().filter(|(_, b)| b.marked).map(|(i, _)| i).collect();
        if marks.len() > MAX_MARKS {
            return Err(Refused(format!(
                "A maximum of {MAX_MARKS} blocks with cache_control may be provided. Found {}.",
                marks.len()
            )));
        }
        let model = body["model"].as_str().unwrap_or_default();
        let minimum = anthropic_minimum(model);
        // Tokens up to the end of each block, and the prefix hash there.
        let mut ends = Vec::with_capacity(blocks.len());
        let mut hasher = DefaultHasher::new();
        model.hash(&mut hasher);
        let mut total = 0;
        for block in &blocks {
            block.text.hash(&mut hasher);
            total += block.tokens;
            ends.push((total, hasher.finish()));
        }
        let mut state = self.lock();
        let now = Instant::now() + state.skew;
        state.prefixes.retain(|_, used| now.duration_since(*used) < LIFETIME);
        let hit = marks
            .iter()
            .flat_map(|&m| (m.saturating_sub(LOOKBACK - 1)..=m).rev())
            .filter(|&j| state.prefixes.contains_key(&ends[j].1))
            .max();
        let read = hit.map_or(0, |j| ends[j].0);
        if let Some(j) = hit {
            state.prefixes.insert(ends[j].1, now);
        }
        let writes: Vec<usize> =
            marks.iter().copied().filter(|&m| hit.is_none_or(|j| m > j) && ends[m].0 >= minimum).collect();
        let written = writes.last().map_or(0, |&m| ends[m].0 - read);
        let usage = CacheUsage { total, read, written };
        state.log.push(usage);
        Ok((usage, Pending { prefixes: writes.iter().map(|&m| ends[m].1).collect(), prompt: None }))
    }

    fn openai(&self, body: &Value) -> (CacheUsage, Pending) {
        let prompt = openai_prompt(body);
        let total = tokens(&prompt);
        let partition = format!(
            "{}\u{0}{}",
            body["model"].as_str().unwrap_or_default(),
            body["prompt_cache_key"].as_str().unwrap_or_default()
        );
        let mut state = self.lock();
        let now = Instant::now() + state.skew;
        let entries = state.prompts.entry(partition.clone()).or_default();
        entries.retain(|(_, used)| now.duration_since(*used) < LIFETIME);
        let best = entries.iter_mut().map(|e| (common_prefix(&e.0, &prompt), e)).max_by_key(|(n, _)| *n);
        let shared = best.map_or(0, |(n, entry)| {
            entry.1 = now;
            tokens_of_bytes(n)
        });
        let read = if total >= 1024 && shared >= 1024 { 1024 + (shared - 1024) / 128 * 128 } else { 0 };
        let usage = CacheUsage { total, read, written: 0 };
        state.log.push(usage);
        (usage, Pending { prefixes: Vec::new(), prompt: (total >= 1024).then_some((partition, prompt)) })
    }
}

/// The fewest tokens Anthropic caches for `model`, as its documentation lists them:
/// 4,096 for Claude Opus 4.6 and 4.5 and Haiku 4.5; 2,048 for Sonnet 4.6 and Haiku
/// 3.5 and 3; 1,024 for Sonnet 4.5, Opus 4.1, Opus 4, Sonnet 4 and Sonnet 3.7. The
/// fake takes any other name as a model it does not know, cached from 4,096 tokens.
pub fn anthropic_minimum(model: &str) -> u64 {
    const LISTED: [(&str, u64); 12] = [
        ("claude-opus-4-6", 4096),
        ("claude-opus-4-5", 4096),
        ("claude-haiku-4-5", 4096),
        ("claude-sonnet-4-6", 2048),
        ("claude-3-5-haiku", 2048),
        ("claude-3-haiku", 2048),
        ("claude-sonnet-4-5", 1024),
        ("claude-opus-4-1", 1024),
        ("claude-opus-4-0", 1024),
        ("claude-opus-4-2025", 1024),
        ("claude-sonnet-4-", 1024),
        ("claude-3-7-sonnet", 1024),
    ];
    LISTED.iter().find(|(name, _)| model.starts_with(name)).map_or(4096, |(_, minimum)| *minimum)
}

/// One block of an Anthropic prompt: its text for the prefix hash (without the
/// mark), its tokens and whether it is marked.
struct Block {
    text: String,
    tokens: u64,
    marked: bool,
}

fn anthropic_blocks(body: &Value) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut push = |value: &Value, salt: &str| {
        let marked = value.get("cache_control").is_some();
        let mut value = value.clone();
        if let Some(object) = value.as_object_mut() {
            object.remove("cache_control");
        }
        let text = format!("{salt}{value}");
        blocks.push(Block { tokens: tokens(&value.to_string()), text, marked });
    };
    for tool in body["tools"].as_array().into_iter().flatten() {
        push(tool, "tool:");
    }
    match &body["system"] {
        Value::String(text) => push(&json!({"type": "text", "text": text}), "system:"),
        Value::Array(items) => items.iter().for_each(|b| push(b, "system:")),
        _ => {}
    }
    // A change of tool_choice changes every message block's prefix.
    let choice = format!("choice:{}:", body.get("tool_choice").cloned().unwrap_or(Value::Null));
    for message in body["messages"].as_array().into_iter().flatten() {
        let role = message["role"].as_str().unwrap_or_default();
        let salt = format!("{choice}{role}:");
        match &message["content"] {
            Value::String(text) => push(&json!({"type": "text", "text": text}), &salt),
            Value::Array(items) => items.iter().for_each(|b| push(b, &salt)),
            _ => {}
        }
    }
    blocks
}

/// An OpenAI prompt in the order it is cached: tools, the output schema, then the
/// instructions and the conversation.
fn openai_prompt(body: &Value) -> String {
    let mut prompt = String::new();
    for key in ["tools", "response_format", "text", "instructions", "messages", "input"] {
        if let Some(value) = body.get(key) {
            prompt.push_str(&value.to_string());
        }
    }
    prompt
}

fn tokens(text: &str) -> u64 {
    tokens_of_bytes(text.len())
}

fn tokens_of_bytes(bytes: usize) -> u64 {
    bytes.div_ceil(4) as u64
}

fn common_prefix(a: &str, b: &str) -> usize {
    a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count()
}

/// Writes `usage` into an answer's stream as the vendor reports it.
pub fn report(rules: CacheRules, chunk: &str, usage: CacheUsage) -> String {
    let Some((head, data)) = chunk.split_once("data: ") else { return chunk.to_string() };
    let Ok(mut value) = serde_json::from_str::<Value>(data.trim_end()) else { return chunk.to_string() };
    let uncached = usage.uncached();
    match (rules, value["type"].as_str()) {
        (CacheRules::Anthropic, Some("message_start")) => {
            value["message"]["usage"] = json!({
                "input_tokens": uncached,
                "cache_creation_input_tokens": usage.written,
                "cache_read_input_tokens": usage.read,
                "output_tokens": 1
            });
        }
        (CacheRules::OpenAi, Some("response.completed")) => {
            value["response"]["usage"]["input_tokens"] = json!(usage.total);
            value["response"]["usage"]["input_tokens_details"] = json!({"cached_tokens": usage.read});
        }
        (CacheRules::OpenAi, _) if value.get("usage").is_some_and(Value::is_object) => {
            value["usage"]["prompt_tokens"] = json!(usage.total);
            value["usage"]["prompt_tokens_details"] = json!({"cached_tokens": usage.read});
        }
        _ => return chunk.to_string(),
    }
    format!("{head}data: {value}\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(n: usize) -> String {
        // A text block's JSON adds 25 bytes around its text.
        "x".repeat(n * 4 - 25)
    }

    fn anthropic(system: &[(&str, bool)], messages: &[(&str, bool)]) -> Value {
        let block = |(t, marked): &(&str, bool)| {
            let mut b = json!({"type": "text", "text": t});
            if *marked {
                b["cache_control"] = json!({"type": "ephemeral"});
            }
            b
        };
        json!({
            "model": "claude-sonnet-4-5",
            "system": system.iter().map(block).collect::<Vec<_>>(),
            "messages": [{"role": "user", "content": messages.iter().map(block).collect::<Vec<_>>()}],
        })
    }

    #[test]
    fn anthropic_writes_then_reads_up_to_a_breakpoint_and_expires() {
        let cache = PromptCache::new(CacheRules::Anthropic);
        let shared = text(2000);
        let first = anthropic(&[(&shared, true), ("lane one", false)], &[("hi", false)]);
        let (usage, pending) = cache.usage(&first).expect("allowed");
        assert_eq!((usage.read, usage.written), (0, 2000));
        let (again, _) = cache.usage(&first).expect("allowed");
        assert_eq!(again.read, 0, "nothing is read before the writer's answer was sent");
        cache.commit(pending);
        let second = anthropic(&[(&shared, true), ("lane two", false)], &[("hi", false)]);
        let (usage, _) = cache.usage(&second).expect("allowed");
        assert_eq!((usage.read, usage.written), (2000, 0));
        assert!(usage.uncached() > 0);
        cache.advance(LIFETIME);
        assert_eq!(cache.usage(&second).expect("allowed").0.read, 0, "entries last five minutes");
    }

    #[test]
    fn anthropic_ignores_short_prefixes_and_refuses_a_fifth_mark() {
        let cache = PromptCache::new(CacheRules::Anthropic);
        let short = anthropic(&[("short", true)], &[("hi", false)]);
        assert_eq!(cache.usage(&short).expect("allowed").0.written, 0, "below 1,024 tokens nothing is written");
        let marks = [("a", true), ("b", true), ("c", true)];
        let five = anthropic(&marks, &[("d", true), ("e", true)]);
        assert!(cache.usage(&five).is_err());
    }

    #[test]
    fn a_change_of_tool_choice_keeps_the_system_but_not_the_messages() {
        let cache = PromptCache::new(CacheRules::Anthropic);
        let shared = text(1500);
        let mut first = anthropic(&[(&shared, true)], &[(&text(1200), true)]);
        let (usage, pending) = cache.usage(&first).expect("allowed");
        assert_eq!(usage.written, usage.total);
        cache.commit(pending);
        assert_eq!(cache.usage(&first).expect("allowed").0.read, usage.total);
        first["tool_choice"] = json!({"type": "none"});
        assert_eq!(cache.usage(&first).expect("allowed").0.read, 1500);
    }

    #[test]
    fn openai_reads_the_common_prefix_in_steps_of_128_tokens() {
        let cache = PromptCache::new(CacheRules::OpenAi);
        let body = |tail: &str| json!({"model": "gpt-4.1", "messages": [{"role": "system", "content": format!("{}{tail}", "y".repeat(6000))}]});
        let (first, pending) = cache.usage(&body("one")).expect("allowed");
        assert_eq!(first.read, 0);
        cache.commit(pending);
        let (second, _) = cache.usage(&body("two")).expect("allowed");
        assert!(second.read >= 1024 && (second.read - 1024) % 128 == 0, "{second:?}");
        assert!(second.read <= second.total);
        let mut other_key = body("two");
        other_key["prompt_cache_key"] = json!("another review");
        assert_eq!(cache.usage(&other_key).expect("allowed").0.read, 0, "another key is another partition");
    }
}
