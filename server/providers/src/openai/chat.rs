//! The Chat Completions API: `POST /chat/completions` with `stream: true`. An answer
//! with nothing in it, and a `length` stop that is the context window's rather than
//! `max_tokens`', are told as what they are (see `cutoff.rs`).

use conclave_shared::Usage;
use futures::StreamExt;
use serde_json::{Value, json};
use std::collections::BTreeMap;

use super::tool_arguments::parse_arguments;
use crate::cutoff::LengthStop;
use crate::dialect::Dialect;
use crate::http::{parse_data, sse_events};
use conclave_core::StreamSink;
use conclave_core::{AgentReply, AgentRequest, Message, ProviderError, StopReason, ToolCall};

/// The request body; the shared prefix leads the system message, so every agent's
/// prompt starts alike (the prefix the server caches).
pub(super) fn request_body(request: &AgentRequest, cache: bool) -> Value {
    let mut messages = Vec::new();
    let system = request.system_text();
    if !system.is_empty() {
        messages.push(json!({"role": "system", "content": system}));
    }
    for message in &request.messages {
        messages.push(match message {
            Message::User(text) => json!({"role": "user", "content": text}),
            Message::Assistant { text, tool_calls } if tool_calls.is_empty() => {
                json!({"role": "assistant", "content": text})
            }
            Message::Assistant { text, tool_calls } => json!({
                "role": "assistant",
                "content": if text.is_empty() { Value::Null } else { json!(text) },
                "tool_calls": tool_calls.iter().map(|c| json!({
                    "id": c.id, "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments.to_string()}
                })).collect::<Vec<_>>()
            }),
            Message::ToolResult { call_id, content, .. } => {
                json!({"role": "tool", "tool_call_id": call_id, "content": content})
            }
        });
    }
    let mut body = json!({
        "model": request.model,
        "messages": messages,
        "max_completion_tokens": request.max_tokens,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    Dialect::OpenAiChat.add_schema(&mut body, request);
    super::cache::add_tools(
        &mut body,
        request,
        cache,
        |t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters, "strict": true}}),
    );
    body
}

#[derive(Default)]
struct PendingCall {
    id: String,
    name: String,
    arguments: String,
}

/// How a compatible server is given a larger context, for messages.
const LARGER_CONTEXT: &str = "start the server with a larger context (llama.cpp's `--ctx-size`, llama-cpp-python's \
     `--n_ctx`, vLLM's `--max-model-len`)";

/// What to say when a server answered with nothing at all.
const EMPTY_ANSWER: &str = "llama-cpp-python's server drops a streaming answer when another request arrives, unless \
     it is started with `--interrupt_requests False`; start it so, or send it one request at a time with \
     CONCLAVE_PROVIDER_LIMITS=openai=1";

pub(super) async fn read_stream(
    response: reqwest::Response,
    max_tokens: u32,
    sink: &dyn StreamSink,
) -> Result<AgentReply, ProviderError> {
    let mut events = sse_events(response);
    let mut reading = Reading { max_tokens, ..Reading::default() };
    let mut done = false;
    let mut chunks = 0;
    while let Some(event) = events.next().await {
        let event = event?;
        if event.data.trim() == "[DONE]" {
            done = true;
            break;
        }
        if event.data.trim().is_empty() {
            continue;
        }
        chunks += 1;
        if chunks == 1 {
            // The first streamed event: the vendor's cache holds this call's prompt.
            sink.began();
        }
        reading.apply(&parse_data(&event.data)?, sink).await?;
    }
    if chunks == 0 && !done {
        return Err(ProviderError::Malformed(
            "the answer has no Server-Sent Events: the server does not speak the Chat Completions API here".into(),
        ));
    }
    if !reading.refusal.is_empty() {
        return Err(ProviderError::Refusal(reading.refusal));
    }
    if !done && reading.finish.is_none() {
        return Err(ProviderError::Truncated("the event stream ended before a finish_reason or [DONE]".into()));
    }
    reading.reply(sink).await
}

/// An answer sent as one JSON document (a server that ignores `stream`): read as a
/// stream of one chunk whose message is the delta.
pub(super) async fn read_whole(
    data: &Value,
    max_tokens: u32,
    sink: &dyn StreamSink,
) -> Result<AgentReply, ProviderError> {
    let mut chunk = data.clone();
    if let Some(choice) = chunk.get_mut("choices").and_then(|c| c.get_mut(0))
        && let Some(message) = choice.get("message").cloned()
    {
        let mut delta = message;
        // A whole message's tool calls have no stream index; give each its position.
        if let Some(calls) = delta.get_mut("tool_calls").and_then(Value::as_array_mut) {
            for (i, call) in calls.iter_mut().enumerate() {
                call["index"] = json!(i);
            }
        }
        choice["delta"] = delta;
    }
    if chunk.get("error").is_none() && chunk.pointer("/choices/0/finish_reason").is_none() {
        return Err(ProviderError::Malformed(format!(
            "the answer is one JSON document without `choices[0].finish_reason`: {}",
            crate::http::error_message(&data.to_string())
        )));
    }
    let mut reading = Reading { max_tokens, ..Reading::default() };
    reading.apply(&chunk, sink).await?;
    if !reading.refusal.is_empty() {
        return Err(ProviderError::Refusal(reading.refusal));
    }
    reading.reply(sink).await
}

/// One answer as its chunks arrive.
#[derive(Default)]
struct Reading {
    text: String,
    refusal: String,
    calls: BTreeMap<u64, PendingCall>,
    usage: Usage,
    /// Whether the server reported its usage.
    usage_seen: bool,
    finish: Option<String>,
    /// The agent's `max_tokens`, to tell its limit from the context window's.
    max_tokens: u32,
}

impl Reading {
    /// Takes one chunk.
    async fn apply(&mut self, data: &Value, sink: &dyn StreamSink) -> Result<(), ProviderError> {
        if let Some(error) = data.get("error") {
            let message = error.get("message").and_then(Value::as_str).unwrap_or("unknown error").to_string();
            return Err(ProviderError::Server { status: 500, message });
        }
        if let Some(u) = data.get("usage").filter(|u| u.is_object()) {
            self.usage_seen = true;
            // `prompt_tokens` counts the cached ones too; they are paid apart.
            let cached = u.pointer("/prompt_tokens_details/cached_tokens").and_then(Value::as_u64).unwrap_or(0);
            let prompt = u["prompt_tokens"].as_u64().unwrap_or(self.usage.input_tokens + cached);
            self.usage.input_tokens = prompt.saturating_sub(cached);
            self.usage.cache_read_tokens = cached;
            self.usage.output_tokens = u["completion_tokens"].as_u64().unwrap_or(self.usage.output_tokens);
        }
        let Some(choice) = data.get("choices").and_then(|c| c.get(0)) else { return Ok(()) };
        let delta = &choice["delta"];
        if let Some(piece) = delta.get("content").and_then(Value::as_str) {
            self.text.push_str(piece);
            sink.text(piece).await;
        }
        if let Some(piece) = delta.get("refusal").and_then(Value::as_str) {
            self.refusal.push_str(piece);
        }
        for call in delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
            let pending = self.calls.entry(call["index"].as_u64().unwrap_or(0)).or_default();
            if let Some(id) = call["id"].as_str() {
                pending.id = id.to_string();
            }
            if let Some(name) = call.pointer("/function/name").and_then(Value::as_str) {
                pending.name.push_str(name);
            }
            if let Some(args) = call.pointer("/function/arguments").and_then(Value::as_str) {
                pending.arguments.push_str(args);
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish = Some(reason.to_string());
        }
        Ok(())
    }

    /// The reply: tool calls reported, then the stop reason decides.
    async fn reply(self, sink: &dyn StreamSink) -> Result<AgentReply, ProviderError> {
        if self.finish.as_deref() == Some("length") {
            return Err(self.length_stop().error());
        }
        if self.text.is_empty() && self.calls.is_empty() {
            let finish = self.finish.as_ref().map_or("no finish_reason".into(), |f| format!("finish_reason `{f}`"));
            return Err(ProviderError::Malformed(format!(
                "the server returned nothing: no text and no tool call ({finish}). {EMPTY_ANSWER}"
            )));
        }
        let mut tool_calls = Vec::new();
        for call in self.calls.into_values() {
            let arguments = parse_arguments(&call.name, &call.arguments)?;
            sink.tool_call(&call.name, arguments.clone()).await;
            tool_calls.push(ToolCall { id: call.id, name: call.name, arguments });
        }
        let stop = match self.finish.as_deref() {
            Some("content_filter") => {
                return Err(ProviderError::Refusal("the answer was withheld by the content filter".into()));
            }
            Some("tool_calls") => StopReason::ToolUse,
            Some("stop") | None => StopReason::EndTurn,
            Some(other) => StopReason::Other(other.to_string()),
        };
        Ok(AgentReply { text: self.text, json: None, tool_calls, usage: self.usage, stop })
    }

    /// What a `length` stop means here.
    fn length_stop(&self) -> LengthStop {
        LengthStop {
            reason: "finish_reason `length`",
            wrote: !self.text.is_empty() || !self.calls.is_empty(),
            usage: self.usage_seen.then_some((self.usage.input_tokens, self.usage.output_tokens)),
            max_tokens: self.max_tokens,
            larger_context: LARGER_CONTEXT,
        }
    }
}
