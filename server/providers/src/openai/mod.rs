//! OpenAI and OpenAI-compatible servers (vLLM, llama.cpp's server, LM Studio), with
//! the Chat Completions API (`chat.rs`) or the Responses API (`responses.rs`), chosen
//! per agent. Both stream Server-Sent Events and use strict structured outputs.
//!
//! `OPENAI_BASE_URL` already ends in `/v1`. A key is required for the official
//! endpoint; compatible servers on another base URL may run without one.
//!
//! Compatible servers differ in how they take a schema, so each call is sent in the
//! structured-output dialect the engine picks (`OPENAI_OUTPUT_DIALECT`, or `auto`);
//! `errors.rs` tells a rejected dialect from other failures and names the server,
//! the model and what to try.

mod cache;
mod chat;
mod errors;
mod responses;
mod tool_arguments;

use async_trait::async_trait;
use conclave_shared::{DialectSetting, OpenAiApi};
use serde_json::{Value, json};

use crate::dialect::{Dialect, OBJECT_SCHEMA_TARGET};
use conclave_core::Secret;
use conclave_core::StreamSink;
use conclave_core::{AgentReply, AgentRequest, Capabilities, EndpointDialects, Provider, ProviderError};
use errors::{Body, Call};

const DEFAULT_BASE: &str = "https://api.openai.com/v1";

/// The fewest tokens of a prompt OpenAI caches.
pub const MIN_CACHEABLE_TOKENS: usize = 1024;

/// The OpenAI provider.
#[derive(Debug, Clone)]
pub struct OpenAiProvider {
    key: Option<Secret>,
    base_url: String,
    /// `OPENAI_OUTPUT_DIALECT`, or what was wrong with it.
    dialect: Result<DialectSetting, String>,
    /// Whether requests are laid out for the prompt cache and carry
    /// `prompt_cache_key` (OpenAI's own API, or `CONCLAVE_PROMPT_CACHE=on`).
    cache: bool,
}

impl OpenAiProvider {
    /// Configured from `OPENAI_API_KEY` and `OPENAI_BASE_URL`.
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> OpenAiProvider {
        let base_url =
            env("OPENAI_BASE_URL").unwrap_or_else(|| DEFAULT_BASE.to_string()).trim_end_matches('/').to_string();
        OpenAiProvider {
            key: env("OPENAI_API_KEY").map(Secret::new),
            cache: crate::prompt_cache::PromptCache::from_env(env).enabled(base_url == DEFAULT_BASE),
            base_url,
            dialect: match env("OPENAI_OUTPUT_DIALECT") {
                None => Ok(DialectSetting::Auto),
                Some(name) => DialectSetting::parse(name.trim()).ok_or_else(|| {
                    let known: Vec<&str> = DialectSetting::ALL.iter().map(|d| d.as_str()).collect();
                    format!("OPENAI_OUTPUT_DIALECT is `{name}`; use one of {}", known.join(", "))
                }),
            },
        }
    }

    /// The server's base URL.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The request body for `request` (public for tests that pin the wire format).
    /// Chat requests to a compatible server also carry the older `max_tokens`: some
    /// (llama-cpp-python's) ignore `max_completion_tokens` and would otherwise write
    /// until the context is full; OpenAI's own reasoning models refuse it.
    pub fn request_body(&self, request: &AgentRequest) -> Value {
        let mut body = match api(request) {
            OpenAiApi::Chat => {
                let mut body = chat::request_body(request, self.cache);
                if self.base_url != DEFAULT_BASE {
                    body["max_tokens"] = body["max_completion_tokens"].clone();
                }
                body
            }
            OpenAiApi::Responses => responses::request_body(request, self.cache),
        };
        if self.cache {
            body["prompt_cache_key"] = json!(cache::prompt_cache_key(request));
        }
        body
    }
}

#[async_trait]
impl Provider for OpenAiProvider {
    fn name(&self) -> &str {
        "openai"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities { native_schema: Some(Dialect::OpenAiChat.target()), tools: true, context_window: None }
    }

    fn default_model(&self) -> &str {
        "gpt-4.1-mini"
    }

    fn caches_prompts(&self) -> bool {
        self.cache
    }

    fn caches_prefix(&self, request: &AgentRequest) -> bool {
        self.cache && crate::prompt_cache::shared_prefix_reaches(request, MIN_CACHEABLE_TOKENS)
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
        if let Err(message) = &self.dialect {
            return Err(ProviderError::Config { provider: "openai".into(), message: message.clone() });
        }
        Ok(())
    }

    fn dialects(&self) -> Option<EndpointDialects> {
        Some(EndpointDialects {
            endpoint: self.base_url.clone(),
            setting: self.dialect.clone().unwrap_or_default(),
            object_schema: OBJECT_SCHEMA_TARGET,
        })
    }

    async fn call(&self, request: &AgentRequest, stream: &dyn StreamSink) -> Result<AgentReply, ProviderError> {
        self.check_config()?;
        let path = match api(request) {
            OpenAiApi::Chat => "chat/completions",
            OpenAiApi::Responses => "responses",
        };
        let mut http =
            crate::http::client().post(format!("{}/{path}", self.base_url)).json(&self.request_body(request));
        if let Some(key) = &self.key {
            http = http.bearer_auth(key.expose());
        }
        let call = Call::new(&self.base_url, request);
        let response = http.send().await.map_err(|e| call.unreachable(&e))?;
        let response = call.check(response).await?;
        // An answer sent whole begins with its headers; a stream, with its first event.
        if Call::whole(&response) {
            stream.began();
        }
        let body = call.body(response).await?;
        let result = match (api(request), body) {
            (OpenAiApi::Chat, Body::Stream(response)) => chat::read_stream(response, request.max_tokens, stream).await,
            (OpenAiApi::Chat, Body::Json(value)) => chat::read_whole(&value, request.max_tokens, stream).await,
            (OpenAiApi::Responses, Body::Stream(response)) => responses::read_stream(response, stream).await,
            (OpenAiApi::Responses, Body::Json(_)) => Err(ProviderError::Malformed(
                "the Responses API answered with one JSON document although a stream was asked for".into(),
            )),
        };
        result.map_err(|e| call.in_stream(e))
    }
}

/// Which of OpenAI's APIs the agent calls (its `api` setting; Chat Completions by
/// default).
fn api(request: &AgentRequest) -> OpenAiApi {
    request.agent.api.unwrap_or_default()
}
