//! The Responses API: `POST /responses` with `stream: true`.

use conclave_shared::Usage;
use futures::StreamExt;
use serde_json::{Value, json};

use super::tool_arguments::parse_arguments;
use crate::dialect::Dialect;
use crate::http::{parse_data, sse_events};
use conclave_core::StreamSink;
use conclave_core::{AgentReply, AgentRequest, Message, ProviderError, StopReason, ToolCall};

/// The request body; the shared prefix leads the instructions (see `chat.rs`).
pub(super) fn request_body(request: &AgentRequest, cache: bool) -> Value {
    let mut input = Vec::new();
    for message in &request.messages {
        match message {
            Message::User(text) => input.push(json!({"role": "user", "content": text})),
            Message::Assistant { text, tool_calls } => {
                if !text.is_empty() {
                    input.push(json!({"role": "assistant", "content": text}));
                }
                for c in tool_calls {
                    input.push(json!({"type": "function_call", "call_id": c.id, "name": c.name, "arguments": c.arguments.to_string()}));
                }
            }
            Message::ToolResult { call_id, content, .. } => {
                input.push(json!({"type": "function_call_output", "call_id": call_id, "output": content}));
            }
        }
    }
    let mut body = json!({
        "model": request.model,
        "input": input,
        "max_output_tokens": request.max_tokens,
        "stream": true,
    });
    let system = request.system_text();
    if !system.is_empty() {
        body["instructions"] = json!(system);
    }
    Dialect::OpenAiResponses.add_schema(&mut body, request);
    super::cache::add_tools(
        &mut body,
        request,
        cache,
        |t| json!({"type": "function", "name": t.name, "description": t.description, "parameters": t.parameters, "strict": true}),
    );
    body
}

pub(super) async fn read_stream(
    response: reqwest::Response,
    sink: &dyn StreamSink,
) -> Result<AgentReply, ProviderError> {
    let mut events = sse_events(response);
    let mut text = String::new();
    let mut refusal = String::new();
    let mut tool_calls = Vec::new();
    let mut usage = Usage::default();
    while let Some(event) = events.next().await {
        let event = event?;
        if event.data.trim().is_empty() || event.data.trim() == "[DONE]" {
            continue;
        }
        let data = parse_data(&event.data)?;
        // The first streamed event: the vendor's cache holds this call's prompt.
        sink.began();
        let kind = data["type"].as_str().unwrap_or(&event.event).to_string();
        match kind.as_str() {
            "response.output_text.delta" => {
                let piece = data["delta"].as_str().unwrap_or_default();
                text.push_str(piece);
                sink.text(piece).await;
            }
            "response.refusal.delta" => refusal.push_str(data["delta"].as_str().unwrap_or_default()),
            "response.output_item.done"
                if data.pointer("/item/type").and_then(Value::as_str) == Some("function_call") =>
            {
                let item = &data["item"];
                let name = item["name"].as_str().unwrap_or_default().to_string();
                let arguments = parse_arguments(&name, item["arguments"].as_str().unwrap_or_default())?;
                sink.tool_call(&name, arguments.clone()).await;
                tool_calls.push(ToolCall {
                    id: item["call_id"].as_str().unwrap_or_default().to_string(),
                    name,
                    arguments,
                });
            }
            "response.completed" => {
                let u = data.pointer("/response/usage").cloned().unwrap_or(Value::Null);
                // `input_tokens` counts the cached ones too; they are paid apart.
                let cached = u.pointer("/input_tokens_details/cached_tokens").and_then(Value::as_u64).unwrap_or(0);
                usage.input_tokens = u["input_tokens"].as_u64().unwrap_or(0).saturating_sub(cached);
                usage.cache_read_tokens = cached;
                usage.output_tokens = u["output_tokens"].as_u64().unwrap_or(0);
                if !refusal.is_empty() {
                    return Err(ProviderError::Refusal(refusal));
                }
                let stop = if tool_calls.is_empty() { StopReason::EndTurn } else { StopReason::ToolUse };
                return Ok(AgentReply { text, json: None, tool_calls, usage, stop });
            }
            "response.incomplete" => {
                let reason =
                    data.pointer("/response/incomplete_details/reason").and_then(Value::as_str).unwrap_or("unknown");
                return Err(ProviderError::Truncated(format!(
                    "the response is incomplete ({reason}); the JSON is cut off; raise `max_tokens` on the agent"
                )));
            }
            "response.failed" => {
                let message =
                    data.pointer("/response/error/message").and_then(Value::as_str).unwrap_or("the response failed");
                return Err(ProviderError::Server { status: 500, message: message.to_string() });
            }
            "error" => {
                let message =
                    data["message"].as_str().or_else(|| data.pointer("/error/message").and_then(Value::as_str));
                return Err(ProviderError::Server {
                    status: 500,
                    message: message.unwrap_or("unknown error").to_string(),
                });
            }
            _ => {}
        }
    }
    Err(ProviderError::Truncated("the event stream ended before `response.completed`".into()))
}
