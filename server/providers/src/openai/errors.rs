//! What an OpenAI-compatible server's failures mean, told apart the way a user needs:
//! a rejected structured-output dialect (which `auto` steps down from), a request
//! error a server reports as HTTP 500 (never retried as if it could pass), an unknown
//! model (404), an HTML page from a proxy in front of the server, and the rest. Every
//! message names the server and the model and says what to try.

use conclave_core::{AgentRequest, ProviderError};
use conclave_shared::OutputDialect;
use reqwest::Response;
use serde_json::Value;

use crate::http::{ErrorBody, describe, error_from_status, error_message, retry_after};

/// How much of an HTML page is read to say what it is.
const HTML_SNIPPET: usize = 200;

/// One call to a server, for its error messages.
pub(super) struct Call<'a> {
    base: &'a str,
    model: &'a str,
    /// The dialect of the schema part the request carries, if it carries one.
    dialect: Option<OutputDialect>,
}

/// A successful answer's body.
pub(super) enum Body {
    /// A Server-Sent Events stream (or a body without a content type, read as one).
    Stream(Response),
    /// One JSON document: a server that does not stream.
    Json(Value),
}

impl<'a> Call<'a> {
    pub(super) fn new(base: &'a str, request: &'a AgentRequest) -> Call<'a> {
        let dialect = request
            .output_schema
            .as_ref()
            .map(|_| request.dialect.unwrap_or(OutputDialect::JsonSchema))
            .filter(|d| *d != OutputDialect::Prompt);
        Call { base, model: &request.model, dialect }
    }

    fn server(&self) -> String {
        format!("the OpenAI-compatible server at {} (model `{}`)", self.base, self.model)
    }

    /// The server could not be reached.
    pub(super) fn unreachable(&self, error: &reqwest::Error) -> ProviderError {
        ProviderError::Transport(format!(
            "{}: {}; check that it is running and that OPENAI_BASE_URL points at it",
            self.server(),
            describe(error)
        ))
    }

    /// The response when its status is a success, else the error it means.
    pub(super) async fn check(&self, response: Response) -> Result<Response, ProviderError> {
        let status = response.status().as_u16();
        if (200..300).contains(&status) {
            return Ok(response);
        }
        let wait = retry_after(response.headers());
        let content_type = content_type(&response);
        let body = ErrorBody::read(response).await;
        Err(body.mark(self.classify(status, wait, &content_type, &body.text)))
    }

    /// Whether a success is sent whole (one JSON document) rather than streamed: its
    /// response began with its headers.
    pub(super) fn whole(response: &Response) -> bool {
        content_type(response).starts_with("application/json")
    }

    /// A success's body: a stream, or one JSON document; an HTML page is an error.
    pub(super) async fn body(&self, response: Response) -> Result<Body, ProviderError> {
        let content_type = content_type(&response);
        if content_type.starts_with("application/json") {
            let bytes = response.bytes().await.map_err(|e| {
                ProviderError::Transport(format!("{}: the answer broke off: {}", self.server(), describe(&e)))
            })?;
            return serde_json::from_slice(&bytes).map(Body::Json).map_err(|e| {
                ProviderError::Malformed(format!("{} answered with JSON that does not parse ({e})", self.server()))
            });
        }
        if content_type.starts_with("text/html") {
            let page = ErrorBody::read(response).await;
            return Err(page.mark(ProviderError::BadRequest(self.html(200, &page.text))));
        }
        Ok(Body::Stream(response))
    }

    /// An error met while reading a success's body, with the server named.
    pub(super) fn in_stream(&self, error: ProviderError) -> ProviderError {
        match error {
            ProviderError::Malformed(m) => ProviderError::Malformed(format!("{}: {m}", self.server())),
            ProviderError::Transport(m) => ProviderError::Transport(format!("{}: {m}", self.server())),
            ProviderError::Server { status, message } => {
                ProviderError::Server { status, message: format!("{}: {message}", self.server()) }
            }
            other => other,
        }
    }

    /// The error an unsuccessful status and body mean.
    pub(super) fn classify(
        &self,
        status: u16,
        wait: Option<std::time::Duration>,
        content_type: &str,
        body: &str,
    ) -> ProviderError {
        if status == 429 {
            return ProviderError::RateLimited { retry_after: wait };
        }
        if content_type.starts_with("text/html") || body.trim_start().starts_with('<') {
            let message = self.html(status, body);
            return match status {
                408 | 500..=599 => ProviderError::Server { status, message },
                _ => ProviderError::BadRequest(message),
            };
        }
        let said = error_message(body);
        if let Some(dialect) = self.dialect
            && matches!(status, 400 | 422 | 500)
            && names_the_schema(body)
        {
            return ProviderError::DialectRejected {
                dialect,
                status,
                message: format!(
                    "{} says: {said}. With the `auto` dialect Conclave steps down to the next one; a fixed one is \
                     changed with the agent's `dialect` or OPENAI_OUTPUT_DIALECT",
                    self.server()
                ),
            };
        }
        if status == 404 {
            return ProviderError::BadRequest(format!(
                "{} answered HTTP 404 ({said}): the model is unknown there, or OPENAI_BASE_URL lacks the API's path \
                 (it usually ends in /v1). List the server's models with GET {}/models, then set the agent's model",
                self.server(),
                self.base
            ));
        }
        if status == 500 && is_request_error(body) {
            return ProviderError::BadRequest(format!(
                "{} answered HTTP 500 but says the request is invalid, so it is not retried: {said}. Check the \
                 model name and the agent's settings against what the server supports",
                self.server()
            ));
        }
        match error_from_status(status, wait, body) {
            ProviderError::Server { status, message } => {
                ProviderError::Server { status, message: format!("{}: {message}", self.server()) }
            }
            ProviderError::BadRequest(m) => ProviderError::BadRequest(format!("{}: {m}", self.server())),
            other => other,
        }
    }

    fn html(&self, status: u16, page: &str) -> String {
        let title = page
            .split_once("<title>")
            .and_then(|(_, rest)| rest.split_once("</title>"))
            .map(|(title, _)| title.trim().chars().take(HTML_SNIPPET).collect::<String>())
            .filter(|t| !t.is_empty())
            .map(|t| format!(" titled \"{t}\""))
            .unwrap_or_default();
        format!(
            "{} answered HTTP {status} with an HTML page{title}, not the OpenAI API: a proxy, gateway or login page \
             is in the way, or OPENAI_BASE_URL points at a web page rather than the API (it usually ends in /v1)",
            self.server()
        )
    }
}

/// The response's content type, lower case, or empty.
fn content_type(response: &Response) -> String {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

/// Whether an error body is about how the schema was sent.
fn names_the_schema(body: &str) -> bool {
    let body = body.to_ascii_lowercase();
    ["response_format", "json_schema", "schema"].iter().any(|word| body.contains(word))
}

/// Whether an error body describes a request the server finds invalid (what some
/// servers report as HTTP 500).
fn is_request_error(body: &str) -> bool {
    let body = body.to_ascii_lowercase();
    ["validation error", "input should be", "field required", "extra inputs are not permitted", "invalid_request"]
        .iter()
        .any(|phrase| body.contains(phrase))
}

#[cfg(test)]
mod tests {
    use super::*;
    use conclave_core::SchemaSpec;
    use conclave_shared::AgentConfig;
    use std::sync::Arc;

    fn request(dialect: Option<OutputDialect>, structured: bool) -> AgentRequest {
        AgentRequest {
            run_id: "r".into(),
            node_id: "n".into(),
            model: "smollm2".into(),
            shared_prefix: String::new(),
            system_prompt: String::new(),
            input: Value::Null,
            messages: Vec::new(),
            tools: Vec::new(),
            tool_calls_allowed: false,
            output_schema: structured
                .then(|| SchemaSpec { name: "out".into(), schema: Arc::new(serde_json::json!({"type": "object"})) }),
            max_tokens: 64,
            agent: Arc::new(AgentConfig::new("openai")),
            dialect,
            attempt: 1,
            max_turns: 1,
            workdir: None,
        }
    }

    const BASE: &str = "http://127.0.0.1:8000/v1";
    const PYDANTIC_500: &str = r#"{"error":{"message":"1 validation error for CreateChatCompletionRequest\nresponse_format.type\n  Input should be 'text' or 'json_object'","type":"internal_server_error"}}"#;

    #[test]
    fn a_schema_rejection_is_a_rejected_dialect_only_when_a_schema_was_sent() {
        let structured = request(None, true);
        let error = Call::new(BASE, &structured).classify(500, None, "application/json", PYDANTIC_500);
        assert!(
            matches!(&error, ProviderError::DialectRejected { dialect: OutputDialect::JsonSchema, status: 500, message }
                if message.contains(BASE) && message.contains("smollm2") && message.contains("Input should be")),
            "{error:?}"
        );
        assert!(!error.is_retryable());
        // Without a schema part the same body is a request error, still not retried.
        let plain = request(Some(OutputDialect::Prompt), true);
        let error = Call::new(BASE, &plain).classify(500, None, "application/json", PYDANTIC_500);
        assert!(matches!(&error, ProviderError::BadRequest(m) if m.contains("not retried")), "{error:?}");
        // A plain crash stays a server error that may pass.
        let error =
            Call::new(BASE, &structured).classify(500, None, "application/json", r#"{"error":"out of memory"}"#);
        assert!(error.is_retryable(), "{error:?}");
    }

    #[test]
    fn unknown_models_and_html_pages_name_the_server_the_model_and_what_to_try() {
        let call_request = request(None, false);
        let call = Call::new(BASE, &call_request);
        let error = call.classify(404, None, "application/json", r#"{"error":{"message":"model not found"}}"#);
        let text = error.to_string();
        assert!(text.contains(BASE) && text.contains("smollm2") && text.contains("/models"), "{text}");
        let page = "<html><head><title>Sign in - Corporate Proxy</title></head><body>...</body></html>";
        let error = call.classify(403, None, "text/html; charset=utf-8", page);
        assert!(
            matches!(&error, ProviderError::BadRequest(m) if m.contains("Corporate Proxy") && m.contains("/v1")),
            "{error:?}"
        );
        let error = call.classify(502, None, "text/html", "<html>Bad Gateway</html>");
        assert!(error.is_retryable() && error.to_string().contains("HTML page"), "{error}");
        for error in [error, call.classify(404, None, "", "")] {
            assert!(!error.to_string().contains("cut off"), "{error}");
        }
    }
}
