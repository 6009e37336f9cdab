//! A Streamable HTTP MCP server, reached with the workspace's HTTP client: the
//! transport is the SDK's, over [`HttpClient`], this crate's implementation of its
//! `StreamableHttpClient` on the workspace's reqwest. The entry's `headers_from_env`
//! are read from the Conclave process's environment when connecting; their values go
//! into the requests only, and are taken out of every message this crate returns.

use async_trait::async_trait;
use conclave_core::{Redactor, ServerPlace, ToolOutcome, ToolServer, ToolServerError};
use conclave_shared::McpServerConfig;
use conclave_shared::mcp::McpToolInfo;
use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpClientTransport, StreamableHttpClientTransportConfig,
    StreamableHttpError, StreamableHttpPostResponse,
};
use serde_json::Value;
use sse_stream::{Sse, SseStream};
use std::collections::HashMap;
use std::sync::Arc;

use crate::session::{CallFailure, START_TIMEOUT, Session};

/// The header that carries the MCP session id.
const SESSION_HEADER: &str = "mcp-session-id";

/// A connected HTTP server.
#[derive(Debug)]
pub struct HttpServer {
    name: String,
    session: Session,
    redactor: Arc<Redactor>,
}

/// Connects to the server `name` at `url` and lists its tools.
pub async fn connect(
    name: &str,
    url: &str,
    config: &McpServerConfig,
    place: &ServerPlace,
) -> Result<HttpServer, ToolServerError> {
    let (headers, redactor) =
        headers(config, place).map_err(|reason| ToolServerError::Start { server: name.to_string(), reason })?;
    let refuse = |reason: String| ToolServerError::Start { server: name.to_string(), reason: redactor.redact(&reason) };
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| refuse(format!("the HTTP client could not be made: {e}")))?;
    let transport_config = StreamableHttpClientTransportConfig::with_uri(url.to_string()).custom_headers(headers);
    let transport = StreamableHttpClientTransport::with_client(HttpClient { client }, transport_config);
    let session =
        Session::open(name, transport, START_TIMEOUT).await.map_err(|reason| refuse(format!("{reason} (at {url})")))?;
    Ok(HttpServer { name: name.to_string(), session, redactor })
}

/// The entry's headers, their values read from the environment, and a redactor of
/// those values (with the process's secrets).
fn headers(
    config: &McpServerConfig,
    place: &ServerPlace,
) -> Result<(HashMap<HeaderName, HeaderValue>, Arc<Redactor>), String> {
    let mut headers = HashMap::new();
    let mut secrets = Vec::new();
    for (header, variable) in &config.headers_from_env {
        let value = std::env::var(variable)
            .map_err(|_| format!("its header `{header}` comes from the variable `{variable}`, which is not set"))?;
        let name = HeaderName::from_bytes(header.as_bytes()).map_err(|_| format!("`{header}` is not a header name"))?;
        let mut value = HeaderValue::from_str(&value)
            .map_err(|_| format!("the variable `{variable}` does not hold a valid header value"))?;
        value.set_sensitive(true);
        secrets.push(value.to_str().unwrap_or_default().to_string());
        // A bearer token is redacted alone too, wherever it appears without its scheme.
        if let Some((_, token)) = value.to_str().unwrap_or_default().split_once(' ') {
            secrets.push(token.to_string());
        }
        headers.insert(name, value);
    }
    let known = place.redactor.as_deref().cloned().unwrap_or_default();
    Ok((headers, Arc::new(known.with_secrets(secrets))))
}

#[async_trait]
impl ToolServer for HttpServer {
    fn tools(&self) -> &[McpToolInfo] {
        &self.session.tools
    }

    async fn call(&self, tool: &str, arguments: &Value) -> Result<ToolOutcome, ToolServerError> {
        match self.session.call(tool, arguments).await {
            Ok(outcome) => {
                Ok(ToolOutcome { content: self.redactor.redact(&outcome.content), is_error: outcome.is_error })
            }
            Err(CallFailure::Gone(reason)) => {
                Err(ToolServerError::Died { server: self.name.clone(), reason: self.redactor.redact(&reason) })
            }
        }
    }

    async fn stop(&self) {
        self.session.close().await;
    }
}

/// The SDK's Streamable HTTP client contract on the workspace's reqwest client.
#[derive(Debug, Clone)]
pub struct HttpClient {
    client: reqwest::Client,
}

type HttpError = StreamableHttpError<reqwest::Error>;

impl HttpClient {
    fn request(
        &self,
        builder: reqwest::RequestBuilder,
        session_id: Option<&str>,
        auth: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> reqwest::RequestBuilder {
        let mut builder = builder;
        if let Some(token) = auth {
            builder = builder.bearer_auth(token);
        }
        if let Some(session) = session_id {
            builder = builder.header(SESSION_HEADER, session);
        }
        for (name, value) in custom_headers {
            builder = builder.header(name, value);
        }
        builder
    }
}

fn events(response: reqwest::Response) -> BoxStream<'static, Result<Sse, SseError>> {
    SseStream::from_bytes_stream(response.bytes_stream()).boxed()
}

fn is(response: &reqwest::Response, mime: &str) -> bool {
    response.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|v| v.starts_with(mime))
}

impl StreamableHttpClient for HttpClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let builder = self.client.post(uri.as_ref()).header(ACCEPT, "application/json, text/event-stream");
        let request = self.request(builder, session_id.as_deref(), auth_header, custom_headers);
        let response = request.json(&message).send().await.map_err(StreamableHttpError::Client)?;
        let status = response.status();
        if status == reqwest::StatusCode::ACCEPTED || status == reqwest::StatusCode::NO_CONTENT {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == reqwest::StatusCode::NOT_FOUND && session_id.is_some() {
            return Err(StreamableHttpError::SessionExpired);
        }
        if !status.is_success() {
            return Err(StreamableHttpError::UnexpectedServerResponse(format!("HTTP status {status}").into()));
        }
        let session = response.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::to_string);
        if is(&response, "text/event-stream") {
            return Ok(StreamableHttpPostResponse::Sse(events(response), session));
        }
        if is(&response, "application/json") {
            let body = response.bytes().await.map_err(StreamableHttpError::Client)?;
            if body.is_empty() {
                return Ok(StreamableHttpPostResponse::Accepted);
            }
            let message: ServerJsonRpcMessage = serde_json::from_slice(&body)?;
            return Ok(StreamableHttpPostResponse::Json(message, session));
        }
        if response.content_length() == Some(0) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        let kind = response.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(str::to_string);
        Err(StreamableHttpError::UnexpectedContentType(kind))
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), HttpError> {
        let request = self.request(self.client.delete(uri.as_ref()), Some(&session_id), auth_header, custom_headers);
        let response = request.send().await.map_err(StreamableHttpError::Client)?;
        if response.status() == reqwest::StatusCode::METHOD_NOT_ALLOWED || response.status().is_success() {
            return Ok(());
        }
        Err(StreamableHttpError::UnexpectedServerResponse(format!("HTTP status {}", response.status()).into()))
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, HttpError> {
        let builder = self.client.get(uri.as_ref()).header(ACCEPT, "text/event-stream");
        let mut request = self.request(builder, session_id.as_deref(), auth_header, custom_headers);
        if let Some(last) = last_event_id {
            request = request.header("last-event-id", last);
        }
        let response = request.send().await.map_err(StreamableHttpError::Client)?;
        if response.status() == reqwest::StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        if !response.status().is_success() {
            return Err(StreamableHttpError::UnexpectedServerResponse(
                format!("HTTP status {}", response.status()).into(),
            ));
        }
        if !is(&response, "text/event-stream") {
            let kind = response.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(str::to_string);
            return Err(StreamableHttpError::UnexpectedContentType(kind));
        }
        Ok(events(response))
    }
}
