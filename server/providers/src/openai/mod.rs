//! OpenAI and OpenAI-compatible servers (vLLM, llama.cpp's server, LM Studio), with
//! the Chat Completions API (`chat.rs`) or the Responses API (`responses.rs`), chosen
//! per agent. Both stream Server-Sent Events and use strict structured outputs.
//!
//! `OPENAI_BASE_URL` already ends in `/v1`. A key is required for the official
//! endpoint; compatible servers on another base URL may run without one.

mod chat;
mod responses;

use async_trait::async_trait;
use conclave_shared::OpenAiApi;
use serde_json::Value;

use crate::http::send;
use conclave_core::Secret;
use conclave_core::StreamSink;
use conclave_core::{AgentReply, AgentRequest, Capabilities, Provider, ProviderError};
use conclave_shared::LowerTarget;

const DEFAULT_BASE: &str = "https://api.openai.com/v1";

/// The OpenAI provider.
#[derive(Debug, Clone)]
pub struct OpenAiProvider {
    key: Option<Secret>,
    base_url: String,
}

impl OpenAiProvider {
    /// Configured from `OPENAI_API_KEY` and `OPENAI_BASE_URL`.
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> OpenAiProvider {
        OpenAiProvider {
            key: env("OPENAI_API_KEY").map(Secret::new),
            base_url: env("OPENAI_BASE_URL")
                .unwrap_or_else(|| DEFAULT_BASE.to_string())
                .trim_end_matches('/')
                .to_string(),
        }
    }

    /// The request body for `request` (public for tests that pin the wire format).
    pub fn request_body(request: &AgentRequest) -> Value {
        match request.api {
            OpenAiApi::Chat => chat::request_body(request),
            OpenAiApi::Responses => responses::request_body(request),
        }
    }
}

#[async_trait]
impl Provider for OpenAiProvider {
    fn name(&self) -> &str {
        "openai"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities { native_schema: Some(LowerTarget::OpenAi), tools: true }
    }

    fn default_model(&self) -> &str {
        "gpt-4.1-mini"
    }

    fn check_config(&self) -> Result<(), ProviderError> {
        if self.key.is_none() && self.base_url == DEFAULT_BASE {
            return Err(ProviderError::Config {
                provider: "openai".into(),
                message:
                    "OPENAI_API_KEY is not set; export it, or point OPENAI_BASE_URL at an OpenAI-compatible server"
                        .into(),
            });
        }
        Ok(())
    }

    async fn call(&self, request: &AgentRequest, stream: &dyn StreamSink) -> Result<AgentReply, ProviderError> {
        self.check_config()?;
        let path = match request.api {
            OpenAiApi::Chat => "chat/completions",
            OpenAiApi::Responses => "responses",
        };
        let mut http =
            crate::http::client().post(format!("{}/{path}", self.base_url)).json(&Self::request_body(request));
        if let Some(key) = &self.key {
            http = http.bearer_auth(key.expose());
        }
        let response = send(http).await?;
        match request.api {
            OpenAiApi::Chat => chat::read_stream(response, stream).await,
            OpenAiApi::Responses => responses::read_stream(response, stream).await,
        }
    }
}

/// A JSON object parsed from a tool call's argument string.
fn parse_arguments(name: &str, text: &str) -> Result<Value, ProviderError> {
    if text.trim().is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    serde_json::from_str(text)
        .map_err(|e| ProviderError::Malformed(format!("tool call `{name}` has arguments that are not JSON: {e}")))
}
