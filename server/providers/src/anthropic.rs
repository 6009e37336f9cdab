//! Anthropic's Messages API with streaming (Server-Sent Events).
//!
//! Structured output goes in `output_config.format` as a JSON schema; the answer
//! arrives as text and the engine parses it. Tools are sent with `strict: true`.
//! `ANTHROPIC_BASE_URL` is the origin; requests go to `<base>/v1/messages`.

use async_trait::async_trait;
use conclave_shared::Usage;
use futures::StreamExt;
use serde_json::{Value, json};

use crate::dialect::Dialect;
use crate::http::{parse_data, send, sse_events};
use conclave_core::Secret;
use conclave_core::StreamSink;
use conclave_core::{AgentReply, AgentRequest, Capabilities, Message, Provider, ProviderError, StopReason, ToolCall};

const DEFAULT_BASE: &str = "https://api.anthropic.com";
const API_VERSION: &str = "2023-06-01";

/// The Anthropic provider.
#[derive(Debug, Clone)]
pub struct AnthropicProvider {
    key: Option<Secret>,
    base_url: String,
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
        }
    }

    /// The request body for `request` (public for tests that pin the wire format).
    pub fn request_body(request: &AgentRequest) -> Value {
        let mut body = json!({
            "model": request.model,
            "max_tokens": request.max_tokens,
            "messages": messages(&request.messages),
            "stream": true,
        });
        if !request.system_prompt.is_empty() {
            body["system"] = json!(request.system_prompt);
        }
        if !request.tools.is_empty() {
            body["tools"] = request
                .tools
                .iter()
                .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters, "strict": true}))
                .collect();
        }
        Dialect::Anthropic.add_schema(&mut body, request);
        body
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
        Capabilities { native_schema: Some(Dialect::Anthropic.target()), tools: true }
    }

    fn default_model(&self) -> &str {
        "claude-sonnet-4-5"
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
            .json(&Self::request_body(request));
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
                self.usage.input_tokens =
                    data.pointer("/message/usage/input_tokens").and_then(Value::as_u64).unwrap_or(0);
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
