//! Each vendor's streaming wire format, as the fake server sends it.

use crate::fake_server::Reply;
use serde_json::{Value, json};

/// Which provider (and API) a scenario speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vendor {
    Anthropic,
    OpenAiChat,
    OpenAiResponses,
    Ollama,
}

/// Splits `text` into three pieces so streams really arrive in parts.
fn pieces(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let third = chars.len().div_ceil(3).max(1);
    chars.chunks(third).map(|c| c.iter().collect()).collect()
}

fn sse(events: &[(Option<&str>, Value)]) -> Vec<String> {
    events
        .iter()
        .map(|(name, data)| match name {
            Some(name) => format!("event: {name}\ndata: {data}\n\n"),
            None => format!("data: {data}\n\n"),
        })
        .collect()
}

fn sse_reply(chunks: Vec<String>) -> Reply {
    Reply::Stream { content_type: "text/event-stream", chunks }
}

fn ndjson_reply(lines: Vec<Value>) -> Reply {
    Reply::Stream {
        content_type: "application/x-ndjson",
        chunks: lines.into_iter().map(|l| format!("{l}\n")).collect(),
    }
}

impl Vendor {
    /// The provider name agents use.
    pub fn provider(self) -> &'static str {
        match self {
            Vendor::Anthropic => "anthropic",
            Vendor::OpenAiChat | Vendor::OpenAiResponses => "openai",
            Vendor::Ollama => "ollama",
        }
    }

    /// The request path the provider calls.
    pub fn path(self) -> &'static str {
        match self {
            Vendor::Anthropic => "/v1/messages",
            Vendor::OpenAiChat => "/v1/chat/completions",
            Vendor::OpenAiResponses => "/v1/responses",
            Vendor::Ollama => "/api/chat",
        }
    }

    /// Environment pointing the provider at `base` with `key`.
    pub fn env(self, base: &str, key: &str) -> Vec<(&'static str, String)> {
        match self {
            Vendor::Anthropic => vec![("ANTHROPIC_BASE_URL", base.to_string()), ("ANTHROPIC_API_KEY", key.to_string())],
            Vendor::OpenAiChat | Vendor::OpenAiResponses => {
                vec![("OPENAI_BASE_URL", format!("{base}/v1")), ("OPENAI_API_KEY", key.to_string())]
            }
            Vendor::Ollama => vec![("OLLAMA_HOST", base.to_string())],
        }
    }

    /// A complete streamed answer with `text`.
    pub fn answer(self, text: &str) -> Reply {
        match self {
            Vendor::Anthropic => {
                let mut events = vec![
                    (
                        Some("message_start"),
                        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "usage": {"input_tokens": 120, "output_tokens": 1}}}),
                    ),
                    (
                        Some("content_block_start"),
                        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                    ),
                    (Some("ping"), json!({"type": "ping"})),
                ];
                for p in pieces(text) {
                    events.push((
                        Some("content_block_delta"),
                        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}}),
                    ));
                }
                events.push((Some("content_block_stop"), json!({"type": "content_block_stop", "index": 0})));
                events.push((Some("message_delta"), json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 42}})));
                events.push((Some("message_stop"), json!({"type": "message_stop"})));
                sse_reply(sse(&events))
            }
            Vendor::OpenAiChat => {
                let chunk = |delta: Value, finish: Value| json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "gpt-4.1-mini", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
                let mut events = vec![(None, chunk(json!({"role": "assistant", "content": ""}), Value::Null))];
                for p in pieces(text) {
                    events.push((None, chunk(json!({"content": p}), Value::Null)));
                }
                events.push((None, chunk(json!({}), json!("stop"))));
                events.push((None, json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [], "usage": {"prompt_tokens": 120, "completion_tokens": 42, "total_tokens": 162}})));
                let mut chunks = sse(&events);
                chunks.push("data: [DONE]\n\n".into());
                sse_reply(chunks)
            }
            Vendor::OpenAiResponses => {
                let mut events = vec![(
                    Some("response.created"),
                    json!({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}}),
                )];
                for p in pieces(text) {
                    events.push((Some("response.output_text.delta"), json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": p})));
                }
                events.push((Some("response.completed"), json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "usage": {"input_tokens": 120, "output_tokens": 42, "total_tokens": 162}}})));
                sse_reply(sse(&events))
            }
            Vendor::Ollama => {
                let mut lines: Vec<Value> = pieces(text)
                    .into_iter()
                    .map(|p| json!({"model": "qwen3", "created_at": "2026-11-21T10:00:00Z", "message": {"role": "assistant", "content": p}, "done": false}))
                    .collect();
                lines.push(json!({"model": "qwen3", "created_at": "2026-11-21T10:00:01Z", "message": {"role": "assistant", "content": ""}, "done": true, "done_reason": "stop", "prompt_eval_count": 120, "eval_count": 42}));
                ndjson_reply(lines)
            }
        }
    }

    /// The model declines to answer, or `None` where the API has no refusal.
    pub fn refusal(self, why: &str) -> Option<Reply> {
        Some(match self {
            Vendor::Anthropic => sse_reply(sse(&[
                (
                    Some("message_start"),
                    json!({"type": "message_start", "message": {"id": "msg_1", "usage": {"input_tokens": 10, "output_tokens": 0}}}),
                ),
                (
                    Some("content_block_start"),
                    json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                ),
                (
                    Some("content_block_delta"),
                    json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": why}}),
                ),
                (Some("content_block_stop"), json!({"type": "content_block_stop", "index": 0})),
                (
                    Some("message_delta"),
                    json!({"type": "message_delta", "delta": {"stop_reason": "refusal"}, "usage": {"output_tokens": 5}}),
                ),
                (Some("message_stop"), json!({"type": "message_stop"})),
            ])),
            Vendor::OpenAiChat => {
                let mut chunks = sse(&[
                    (
                        None,
                        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "refusal": why}, "finish_reason": null}]}),
                    ),
                    (None, json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})),
                ]);
                chunks.push("data: [DONE]\n\n".into());
                sse_reply(chunks)
            }
            Vendor::OpenAiResponses => sse_reply(sse(&[
                (Some("response.refusal.delta"), json!({"type": "response.refusal.delta", "delta": why})),
                (
                    Some("response.completed"),
                    json!({"type": "response.completed", "response": {"status": "completed", "usage": {"input_tokens": 10, "output_tokens": 5}}}),
                ),
            ])),
            Vendor::Ollama => return None,
        })
    }

    /// A stream that stops partway, without its terminal event.
    pub fn truncated(self, text: &str) -> Reply {
        match self.answer(text) {
            Reply::Stream { content_type, mut chunks } => {
                let keep = match self {
                    Vendor::OpenAiChat => chunks.len() - 3,
                    _ => chunks.len() - 2,
                };
                chunks.truncate(keep);
                Reply::Stream { content_type, chunks }
            }
            other => other,
        }
    }

    /// A streamed request for tool calls.
    pub fn tool_calls(self, calls: &[(&str, &str, Value)]) -> Reply {
        match self {
            Vendor::Anthropic => {
                let mut events = vec![(
                    Some("message_start"),
                    json!({"type": "message_start", "message": {"id": "msg_t", "usage": {"input_tokens": 50, "output_tokens": 1}}}),
                )];
                for (i, (id, name, args)) in calls.iter().enumerate() {
                    let text = args.to_string();
                    let (a, b) = text.split_at(text.len() / 2);
                    events.push((Some("content_block_start"), json!({"type": "content_block_start", "index": i, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}})));
                    events.push((Some("content_block_delta"), json!({"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": a}})));
                    events.push((Some("content_block_delta"), json!({"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": b}})));
                    events.push((Some("content_block_stop"), json!({"type": "content_block_stop", "index": i})));
                }
                events.push((Some("message_delta"), json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 12}})));
                events.push((Some("message_stop"), json!({"type": "message_stop"})));
                sse_reply(sse(&events))
            }
            Vendor::OpenAiChat => {
                let mut events = Vec::new();
                for (i, (id, name, args)) in calls.iter().enumerate() {
                    let text = args.to_string();
                    let (a, b) = text.split_at(text.len() / 2);
                    events.push((None, json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "id": id, "type": "function", "function": {"name": name, "arguments": a}}]}, "finish_reason": null}]})));
                    events.push((None, json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "function": {"arguments": b}}]}, "finish_reason": null}]})));
                }
                events.push((None, json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})));
                events.push((
                    None,
                    json!({"choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 12, "total_tokens": 62}}),
                ));
                let mut chunks = sse(&events);
                chunks.push("data: [DONE]\n\n".into());
                sse_reply(chunks)
            }
            Vendor::OpenAiResponses => {
                let mut events = Vec::new();
                for (id, name, args) in calls {
                    events.push((Some("response.output_item.done"), json!({"type": "response.output_item.done", "item": {"type": "function_call", "id": "fc_1", "call_id": id, "name": name, "arguments": args.to_string()}})));
                }
                events.push((Some("response.completed"), json!({"type": "response.completed", "response": {"status": "completed", "usage": {"input_tokens": 50, "output_tokens": 12}}})));
                sse_reply(sse(&events))
            }
            Vendor::Ollama => {
                let tool_calls: Vec<Value> = calls
                    .iter()
                    .map(|(_, name, args)| json!({"function": {"name": name, "arguments": args}}))
                    .collect();
                ndjson_reply(vec![
                    json!({"model": "qwen3", "message": {"role": "assistant", "content": "", "tool_calls": tool_calls}, "done": false}),
                    json!({"model": "qwen3", "message": {"role": "assistant", "content": ""}, "done": true, "done_reason": "stop", "prompt_eval_count": 50, "eval_count": 12}),
                ])
            }
        }
    }

    /// The text of the last user-side message of a request body (where feedback goes).
    pub fn last_user_text(self, body: &Value) -> String {
        let items = match self {
            Vendor::OpenAiResponses => body["input"].as_array(),
            _ => body["messages"].as_array(),
        };
        let Some(last) = items.and_then(|m| m.iter().rev().find(|m| m["role"] == "user")) else { return String::new() };
        match &last["content"] {
            Value::String(s) => s.clone(),
            Value::Array(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).collect::<Vec<_>>().join("\n"),
            _ => String::new(),
        }
    }
}

/// A plain error status reply.
pub fn status(status: u16, headers: Vec<(&'static str, String)>, body: Value) -> Reply {
    Reply::Status { status, headers, body: body.to_string() }
}
