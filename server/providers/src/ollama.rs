//! Ollama's `/api/chat` with streaming NDJSON. The schema goes in `format`, where
//! llama.cpp turns it into a grammar (best effort; the engine always validates).
//! `OLLAMA_HOST` is a `host:port` or a URL; the default is `127.0.0.1:11434`.

use async_trait::async_trait;
use conclave_shared::Usage;
use futures::StreamExt;
use serde_json::{Value, json};

use crate::cutoff::LengthStop;
use crate::dialect::Dialect;
use crate::http::{ndjson_values, send};
use conclave_core::StreamSink;
use conclave_core::{AgentReply, AgentRequest, Capabilities, Message, Provider, ProviderError, StopReason, ToolCall};

/// The Ollama provider.
#[derive(Debug, Clone)]
pub struct OllamaProvider {
    base_url: String,
}

impl OllamaProvider {
    /// Configured from `OLLAMA_HOST`.
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> OllamaProvider {
        OllamaProvider { base_url: base_url(env("OLLAMA_HOST").as_deref()) }
    }

    /// The request body for `request` (public for tests that pin the wire format).
    pub fn request_body(request: &AgentRequest) -> Value {
        let mut messages = Vec::new();
        let system = request.system_text();
        if !system.is_empty() {
            messages.push(json!({"role": "system", "content": system}));
        }
        for message in &request.messages {
            messages.push(match message {
                Message::User(text) => json!({"role": "user", "content": text}),
                Message::Assistant { text, tool_calls } if tool_calls.is_empty() => json!({"role": "assistant", "content": text}),
                Message::Assistant { text, tool_calls } => json!({
                    "role": "assistant", "content": text,
                    "tool_calls": tool_calls.iter().map(|c| json!({"function": {"name": c.name, "arguments": c.arguments}})).collect::<Vec<_>>()
                }),
                Message::ToolResult { name, content, .. } => json!({"role": "tool", "tool_name": name, "content": content}),
            });
        }
        let mut body = json!({
            "model": request.model,
            "messages": messages,
            "stream": true,
            "options": {"num_predict": request.max_tokens},
        });
        Dialect::Ollama.add_schema(&mut body, request);
        if !request.callable_tools().is_empty() {
            body["tools"] = request
                .callable_tools()
                .iter()
                .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}))
                .collect();
        }
        body
    }
}

/// `OLLAMA_HOST` as a URL: `host:port`, `:port`, or a full URL, without a trailing slash.
fn base_url(host: Option<&str>) -> String {
    let host = host.map(str::trim).filter(|h| !h.is_empty()).unwrap_or("127.0.0.1:11434");
    let with_scheme = if host.contains("://") { host.to_string() } else { format!("http://{host}") };
    let with_host = with_scheme.replacen("://:", "://127.0.0.1:", 1);
    with_host.trim_end_matches('/').to_string()
}

#[async_trait]
impl Provider for OllamaProvider {
    fn name(&self) -> &str {
        "ollama"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities { native_schema: Some(Dialect::Ollama.target()), tools: true, context_window: None }
    }

    fn default_model(&self) -> &str {
        "qwen3:8b"
    }

    async fn call(&self, request: &AgentRequest, stream: &dyn StreamSink) -> Result<AgentReply, ProviderError> {
        let http = crate::http::client().post(format!("{}/api/chat", self.base_url)).json(&Self::request_body(request));
        let response = send(http).await.map_err(|e| match e {
            ProviderError::Transport(m) => {
                ProviderError::Transport(format!("{m} (is Ollama running at {}? set OLLAMA_HOST)", self.base_url))
            }
            other => other,
        })?;
        let mut lines = ndjson_values(response);
        let mut text = String::new();
        let mut tool_calls = Vec::new();
        let mut usage = Usage::default();
        while let Some(line) = lines.next().await {
            let line = line?;
            if let Some(error) = line.get("error").and_then(Value::as_str) {
                return Err(ProviderError::Server { status: 500, message: error.to_string() });
            }
            if let Some(piece) = line.pointer("/message/content").and_then(Value::as_str)
                && !piece.is_empty()
            {
                text.push_str(piece);
                stream.text(piece).await;
            }
            for call in line.pointer("/message/tool_calls").and_then(Value::as_array).into_iter().flatten() {
                let name = call.pointer("/function/name").and_then(Value::as_str).unwrap_or_default().to_string();
                let arguments = call.pointer("/function/arguments").cloned().unwrap_or_else(|| json!({}));
                stream.tool_call(&name, arguments.clone()).await;
                tool_calls.push(ToolCall { id: format!("call_{}", tool_calls.len() + 1), name, arguments });
            }
            if line.get("done").and_then(Value::as_bool) == Some(true) {
                usage.input_tokens = line["prompt_eval_count"].as_u64().unwrap_or(0);
                usage.output_tokens = line["eval_count"].as_u64().unwrap_or(0);
                return match line["done_reason"].as_str() {
                    Some("length") => Err(LengthStop {
                        reason: "done_reason `length`",
                        wrote: !text.is_empty() || !tool_calls.is_empty(),
                        usage: line.get("eval_count").is_some().then_some((usage.input_tokens, usage.output_tokens)),
                        max_tokens: request.max_tokens,
                        larger_context: "give the model a larger `num_ctx` (in its Modelfile, or OLLAMA_CONTEXT_LENGTH \
                                         for the server)",
                    }
                    .error()),
                    _ => {
                        let stop = if tool_calls.is_empty() { StopReason::EndTurn } else { StopReason::ToolUse };
                        Ok(AgentReply { text, json: None, tool_calls, usage, stop })
                    }
                };
            }
        }
        Err(ProviderError::Truncated("the stream ended before a line with \"done\": true".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ollama_host_forms() {
        assert_eq!(base_url(None), "http://127.0.0.1:11434");
        assert_eq!(base_url(Some("gpu-box:11434")), "http://gpu-box:11434");
        assert_eq!(base_url(Some(":9000")), "http://127.0.0.1:9000");
        assert_eq!(base_url(Some("https://ollama.internal/")), "https://ollama.internal");
    }
}
