//! Anthropic's Messages API with streaming (Server-Sent Events).
//!
//! Structured output goes in `output_config.format` as a JSON schema; the answer
//! arrives as text and the engine parses it. Tools are sent with `strict: true`.
//! `ANTHROPIC_BASE_URL` is the origin; requests go to `<base>/v1/messages`.
//!
//! Prompt caching (on unless `CONCLAVE_PROMPT_CACHE=off`: Anthropic-compatible
//! proxies pass the marks on): the vendor caches a prefix
//! of tools, then system, then messages, up to a block marked with `cache_control`.
//! The request's shared prefix (the same for every agent of a run) is the first
//! system block, marked; the agent's own instructions follow as a second block,
//! marked when the agent has tools (its later turns read through it); and in a tool
//! loop the last block of the conversation is marked, so the next turn reads the
//! conversation so far from the cache. That is at most 3 of the 4 marks a request
//! may carry, and a mark whose prefix is shorter than the model's minimum
//! cacheable length is left out. Usage counts cache reads and writes apart.

use async_trait::async_trait;
use conclave_shared::Usage;
use futures::StreamExt;
use serde_json::{Value, json};

use crate::dialect::Dialect;
use crate::http::{parse_data, send, sse_events};
use crate::prompt_cache::{reaches, shared_prefix_reaches, tool_bytes};
use conclave_core::Secret;
use conclave_core::StreamSink;
use conclave_core::{AgentReply, AgentRequest, Capabilities, Message, Provider, ProviderError, StopReason, ToolCall};

const DEFAULT_BASE: &str = "https://api.anthropic.com";
const API_VERSION: &str = "2023-06-01";

/// The most blocks of one request that may carry `cache_control`.
pub const MAX_CACHE_MARKS: usize = 4;

/// The Anthropic provider.
#[derive(Debug, Clone)]
pub struct AnthropicProvider {
    key: Option<Secret>,
    base_url: String,
    cache: bool,
}

/// The fewest tokens a prefix of each model family and version must have to be
/// cached, as Anthropic documents them.
const MIN_CACHEABLE: [(&str, (u32, u32), usize); 11] = [
    ("opus", (4, 6), 4096),
    ("opus", (4, 5), 4096),
    ("haiku", (4, 5), 4096),
    ("sonnet", (4, 6), 2048),
    ("sonnet", (4, 5), 1024),
    ("opus", (4, 1), 1024),
    ("opus", (4, 0), 1024),
    ("sonnet", (4, 0), 1024),
    ("sonnet", (3, 7), 1024),
    ("haiku", (3, 5), 2048),
    ("haiku", (3, 0), 2048),
];

/// The largest documented minimum, for models whose own is not known.
pub const MAX_MIN_CACHEABLE_TOKENS: usize = 4096;

/// The fewest tokens a prefix must have for `model` to cache it: the documented
/// minimum of its family and version, whatever the name's spelling (`claude-sonnet-4-5`,
/// `claude-sonnet-4-5-20250929`, `claude-3-5-haiku-latest`, a cloud's
/// `anthropic.claude-sonnet-4-5-20250929-v1:0`). A model the table does not know
/// (a newer one, or a proxy's own name) gets the largest documented minimum, so a
/// cache mark is never placed where the vendor would not cache, and siblings are
/// never held back for a cache that is not written.
pub fn min_cacheable_tokens(model: &str) -> usize {
    let Some((family, version)) = model_version(model) else { return MAX_MIN_CACHEABLE_TOKENS };
    MIN_CACHEABLE
        .iter()
        .find(|(f, v, _)| *f == family && *v == version)
        .map_or(MAX_MIN_CACHEABLE_TOKENS, |(_, _, minimum)| *minimum)
}

/// A Claude model's family and version from its name: the version numbers follow the
/// family (`claude-opus-4-1`) or, in older names, precede it (`claude-3-7-sonnet`);
/// a date (eight digits) is not part of the version.
fn model_version(model: &str) -> Option<(&'static str, (u32, u32))> {
    let lower = model.to_ascii_lowercase();
    let words: Vec<&str> = lower.split(['-', '.', '_', '@', ':', '/']).collect();
    let at = words.iter().position(|w| ["opus", "sonnet", "haiku"].contains(w))?;
    let family = ["opus", "sonnet", "haiku"].into_iter().find(|f| *f == words[at])?;
    let number = |w: &&str| (w.len() <= 2).then(|| w.parse::<u32>().ok()).flatten();
    let after: Vec<u32> = words[at + 1..].iter().map_while(number).collect();
    let before: Vec<u32> = {
        let mut run: Vec<u32> = words[..at].iter().rev().map_while(number).collect();
        run.reverse();
        run
    };
    let numbers = if after.is_empty() { before } else { after };
    let major = *numbers.first()?;
    Some((family, (major, numbers.get(1).copied().unwrap_or(0))))
}

impl AnthropicProvider {
    /// Configured from `ANTHROPIC_API_KEY` and `ANTHROPIC_BASE_URL`.
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> AnthropicProvider {
        AnthropicProvider {
            key: env("ANTHROPIC_API_KEY").map(Secret::new),
            base_url: env("ANTHROPIC_BASE_URL")
                .unwrap_or_else(|| DEFAULT_BASE.to_string())
                .trim_end_matches('/')
                .to_string(),
            cache: crate::prompt_cache::PromptCache::from_env(env).enabled(true),
        }
    }

    /// The request body for `request` (public for tests that pin the wire format),
    /// laid out for the prompt cache when `cache`.
    pub fn request_body(request: &AgentRequest, cache: bool) -> Value {
        let tools: &[conclave_core::ToolSpec] = if cache { &request.tools } else { request.callable_tools() };
        let mut body = json!({
            "model": request.model,
            "max_tokens": request.max_tokens,
            "messages": messages(&request.messages),
            "stream": true,
        });
        if !tools.is_empty() {
            body["tools"] = tools
                .iter()
                .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters, "strict": true}))
                .collect();
        }
        // An agent with no tool of its own sees the others' (for the cache) but may
        // not call them. An agent asked for its final answer keeps `tool_choice` as it
        // was, since a change would make the vendor write its conversation again.
        if cache && !tools.is_empty() && request.callable_tools().is_empty() && request.agent.tools.is_empty() {
            body["tool_choice"] = json!({"type": "none"});
        }
        if cache {
            body["system"] = Value::Array(system_blocks(request, !request.agent.tools.is_empty()));
            mark_conversation(&mut body, request, !request.agent.tools.is_empty());
        } else if !request.system_text().is_empty() {
            body["system"] = json!(request.system_text());
        }
        if body["system"].as_array().is_some_and(Vec::is_empty) {
            body.as_object_mut().map(|b| b.remove("system"));
        }
        Dialect::Anthropic.add_schema(&mut body, request);
        body
    }
}

/// The system blocks: the shared prefix, marked, then the agent's own instructions,
/// marked when its tool loop will read through them again (`own_tools`). A mark goes
/// only where the prefix up to it (the tools sent first) is long enough to be cached.
fn system_blocks(request: &AgentRequest, own_tools: bool) -> Vec<Value> {
    let minimum = min_cacheable_tokens(&request.model);
    let mut bytes = tool_bytes(request);
    let mut blocks = Vec::new();
    for (text, wanted) in [(&request.shared_prefix, true), (&request.system_prompt, own_tools)] {
        if text.is_empty() {
            continue;
        }
        bytes += text.len();
        let mut block = json!({"type": "text", "text": text});
        if wanted && reaches(bytes, minimum) {
            block["cache_control"] = json!({"type": "ephemeral"});
        }
        blocks.push(block);
    }
    blocks
}

/// In a tool loop, marks the conversation's last block so the next turn reads all
/// of it from the cache.
fn mark_conversation(body: &mut Value, request: &AgentRequest, tools: bool) {
    if !tools {
        return;
    }
    let bytes = body.to_string().len();
    if !reaches(bytes, min_cacheable_tokens(&request.model)) {
        return;
    }
    let last = body["messages"].as_array_mut().and_then(|m| m.last_mut()).and_then(|m| m["content"].as_array_mut());
    if let Some(block) = last.and_then(|blocks| blocks.last_mut()) {
        block["cache_control"] = json!({"type": "ephemeral"});
    }
}

/// Converts the conversation, merging consecutive user-side turns (tool results are
/// user content in this API).
fn messages(conversation: &[Message]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for message in conversation {
        let (role, blocks) = match message {
            Message::User(text) => ("user", vec![json!({"type": "text", "text": text})]),
            Message::Assistant { text, tool_calls } => {
                let mut blocks = Vec::new();
                if !text.is_empty() {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                for call in tool_calls {
                    blocks.push(json!({"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}));
                }
                ("assistant", blocks)
            }
            Message::ToolResult { call_id, content, is_error, .. } => (
                "user",
                vec![json!({"type": "tool_result", "tool_use_id": call_id, "content": content, "is_error": is_error})],
            ),
        };
        match out.last_mut() {
            Some(last) if last["role"] == role => {
                if let Some(content) = last["content"].as_array_mut() {
                    content.extend(blocks);
                }
            }
            _ => out.push(json!({"role": role, "content": blocks})),
        }
    }
    out
}

#[async_trait]
impl Provider for AnthropicProvider {
    fn name(&self) -> &str {
        "anthropic"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities { native_schema: Some(Dialect::Anthropic.target()), tools: true, context_window: None }
    }

    fn default_model(&self) -> &str {
        "claude-sonnet-4-5"
    }

    fn caches_prompts(&self) -> bool {
        self.cache
    }

    fn caches_prefix(&self, request: &AgentRequest) -> bool {
        self.cache && shared_prefix_reaches(request, min_cacheable_tokens(&request.model))
    }

    fn check_config(&self) -> Result<(), ProviderError> {
        match self.key {
            Some(_) => Ok(()),
            None => Err(ProviderError::Config {
                provider: "anthropic".into(),
                message: "ANTHROPIC_API_KEY is not set; export it (and ANTHROPIC_BASE_URL for a proxy) before running"
                    .into(),
            }),
        }
    }

    async fn call(&self, request: &AgentRequest, stream: &dyn StreamSink) -> Result<AgentReply, ProviderError> {
        self.check_config()?;
        let key = self.key.as_ref();
        let http = crate::http::client()
            .post(format!("{}/v1/messages", self.base_url))
            .header("x-api-key", key.map(Secret::expose).unwrap_or_default())
            .header("anthropic-version", API_VERSION)
            .json(&Self::request_body(request, self.cache));
        let response = send(http).await?;
        read_stream(response, stream).await
    }
}

/// A content block being streamed.
enum Block {
    Text,
    Tool { id: String, name: String, json: String },
    Other,
}

async fn read_stream(response: reqwest::Response, sink: &dyn StreamSink) -> Result<AgentReply, ProviderError> {
    let mut events = sse_events(response);
    let mut reading = Reading::default();
    while let Some(event) = events.next().await {
        let event = event?;
        if event.event == "ping" || event.data.is_empty() {
            continue;
        }
        let data = parse_data(&event.data)?;
        let kind = data["type"].as_str().unwrap_or(&event.event).to_string();
        if kind == "error" {
            return Err(stream_error(&data));
        }
        if reading.apply(&kind, &data, sink).await? {
            return reading.finish();
        }
    }
    Err(ProviderError::Truncated("the event stream ended before `message_stop`".into()))
}

/// One answer as its stream events arrive.
#[derive(Default)]
struct Reading {
    text: String,
    blocks: Vec<Block>,
    tool_calls: Vec<ToolCall>,
    usage: Usage,
    stop_reason: Option<String>,
}

impl Reading {
    /// Takes one event; true once the message has ended.
    async fn apply(&mut self, kind: &str, data: &Value, sink: &dyn StreamSink) -> Result<bool, ProviderError> {
        match kind {
            "message_start" => {
                // The vendor's cache holds what this call wrote from here on.
                sink.began();
                let tokens =
                    |name: &str| data.pointer(&format!("/message/usage/{name}")).and_then(Value::as_u64).unwrap_or(0);
                self.usage.input_tokens = tokens("input_tokens");
                self.usage.cache_read_tokens = tokens("cache_read_input_tokens");
                self.usage.cache_write_tokens = tokens("cache_creation_input_tokens");
            }
            "content_block_start" => {
                let block = &data["content_block"];
                self.blocks.push(match block["type"].as_str() {
                    Some("text") => Block::Text,
                    Some("tool_use") => Block::Tool {
                        id: block["id"].as_str().unwrap_or_default().to_string(),
                        name: block["name"].as_str().unwrap_or_default().to_string(),
                        json: String::new(),
                    },
                    _ => Block::Other,
                });
            }
            "content_block_delta" => {
                match (data.pointer("/delta/type").and_then(Value::as_str), self.blocks.last_mut()) {
                    (Some("text_delta"), _) => {
                        let piece = data.pointer("/delta/text").and_then(Value::as_str).unwrap_or_default();
                        self.text.push_str(piece);
                        sink.text(piece).await;
                    }
                    (Some("input_json_delta"), Some(Block::Tool { json, .. })) => {
                        json.push_str(data.pointer("/delta/partial_json").and_then(Value::as_str).unwrap_or_default());
                    }
                    _ => {}
                }
            }
            "content_block_stop" => self.end_block(sink).await?,
            "message_delta" => {
                if let Some(reason) = data.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(reason.to_string());
                }
                if let Some(out) = data.pointer("/usage/output_tokens").and_then(Value::as_u64) {
                    self.usage.output_tokens = out;
                }
            }
            "message_stop" => return Ok(true),
            _ => {}
        }
        Ok(false)
    }

    /// A finished tool-use block becomes a tool call.
    async fn end_block(&mut self, sink: &dyn StreamSink) -> Result<(), ProviderError> {
        let Some(Block::Tool { id, name, json }) = self.blocks.last() else { return Ok(()) };
        let arguments = if json.trim().is_empty() {
            json!({})
        } else {
            serde_json::from_str(json).map_err(|e| {
                ProviderError::Malformed(format!("tool call `{name}` has arguments that are not JSON: {e}"))
            })?
        };
        sink.tool_call(name, arguments.clone()).await;
        self.tool_calls.push(ToolCall { id: id.clone(), name: name.clone(), arguments });
        Ok(())
    }

    /// The reply, by why the model stopped.
    fn finish(self) -> Result<AgentReply, ProviderError> {
        let Reading { text, tool_calls, usage, stop_reason, .. } = self;
        let stop = match stop_reason.as_deref() {
            Some("refusal") => {
                return Err(ProviderError::Refusal(if text.is_empty() {
                    "stop_reason `refusal`".into()
                } else {
                    text
                }));
            }
            Some("max_tokens") => {
                return Err(ProviderError::Truncated(format!(
                    "stop_reason `max_tokens` after {} tokens; the JSON is incomplete; raise `max_tokens` on the agent",
                    usage.output_tokens
                )));
            }
            Some("tool_use") => StopReason::ToolUse,
            Some("end_turn") | Some("stop_sequence") | None => StopReason::EndTurn,
            Some(other) => StopReason::Other(other.to_string()),
        };
        Ok(AgentReply { text, json: None, tool_calls, usage, stop })
    }
}

fn stream_error(data: &Value) -> ProviderError {
    let message = data.pointer("/error/message").and_then(Value::as_str).unwrap_or("unknown error").to_string();
    match data.pointer("/error/type").and_then(Value::as_str) {
        Some("overloaded_error") => ProviderError::Server { status: 529, message },
        Some("rate_limit_error") => ProviderError::RateLimited { retry_after: None },
        Some("api_error") => ProviderError::Server { status: 500, message },
        Some("authentication_error" | "permission_error") => ProviderError::Auth(message),
        _ => ProviderError::BadRequest(message),
    }
}
