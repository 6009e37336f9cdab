//! HTTP plumbing shared by the HTTP providers: one client, status-to-error mapping
//! (with `retry-after`), and streaming readers for Server-Sent Events and NDJSON.

use eventsource_stream::Eventsource;
use futures::{Stream, StreamExt};
use reqwest::header::HeaderMap;
use serde_json::Value;
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use conclave_core::ProviderError;
use conclave_core::Secret;

/// Largest error body read into a message.
const ERROR_BODY_LIMIT: usize = 2000;

/// The shared client: connection pooling, a connect timeout, no overall timeout
/// (streams run long; node timeouts bound them).
pub fn client() -> &'static reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT.get_or_init(|| {
        reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(15))
            .user_agent(concat!("conclave/", env!("CARGO_PKG_VERSION")))
            .build()
            .unwrap_or_else(|_| reqwest::Client::new())
    })
}

/// Sends a request and turns transport failures and non-2xx answers into typed errors,
/// with the key redacted from anything reported.
pub async fn send(
    request: reqwest::RequestBuilder,
    secret: Option<&Secret>,
) -> Result<reqwest::Response, ProviderError> {
    let redact = |text: String| secret.map_or_else(|| text.clone(), |s| s.redact(&text));
    let response = request.send().await.map_err(|e| ProviderError::Transport(redact(describe(&e))))?;
    let status = response.status().as_u16();
    if (200..300).contains(&status) {
        return Ok(response);
    }
    let retry_after = retry_after(response.headers());
    let body = response.text().await.unwrap_or_default();
    Err(error_from_status(status, retry_after, &redact(body)))
}

/// Maps an HTTP error status to the error a user can act on.
pub fn error_from_status(status: u16, retry_after: Option<Duration>, body: &str) -> ProviderError {
    let message = error_message(body);
    match status {
        429 => ProviderError::RateLimited { retry_after },
        401 | 403 => ProviderError::Auth(message),
        408 | 409 | 425 | 500..=599 => ProviderError::Server { status, message },
        _ => ProviderError::BadRequest(format!("HTTP {status}: {message}")),
    }
}

/// The human part of a provider's error body.
pub fn error_message(body: &str) -> String {
    if let Ok(v) = serde_json::from_str::<Value>(body) {
        let candidates = [v.pointer("/error/message"), v.get("error"), v.get("message"), v.pointer("/detail")];
        for c in candidates.into_iter().flatten() {
            if let Some(s) = c.as_str() {
                return s.to_string();
            }
        }
    }
    let trimmed = body.trim();
    if trimmed.is_empty() {
        return "no details in the response body".to_string();
    }
    trimmed.chars().take(ERROR_BODY_LIMIT).collect()
}

/// `retry-after` (seconds or an HTTP date) or `retry-after-ms`.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    if let Some(ms) =
        headers.get("retry-after-ms").and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse::<f64>().ok())
    {
        return Some(Duration::from_secs_f64(ms.max(0.0) / 1000.0));
    }
    let value = headers.get("retry-after")?.to_str().ok()?.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return Some(Duration::from_secs_f64(secs.max(0.0)));
    }
    let when = humantime::parse_rfc3339_weak(value).ok().or_else(|| parse_http_date(value))?;
    Some(when.duration_since(SystemTime::now()).unwrap_or(Duration::ZERO))
}

/// `Sun, 06 Nov 1994 08:49:37 GMT`.
fn parse_http_date(value: &str) -> Option<SystemTime> {
    let parts: Vec<&str> = value.split_whitespace().collect();
    let [_, day, month, year, time, _] = parts.as_slice() else { return None };
    let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let month = months.iter().position(|m| m == month)? + 1;
    let text = format!("{year}-{month:02}-{:02} {time}", day.parse::<u32>().ok()?);
    humantime::parse_rfc3339_weak(&text).ok()
}

fn describe(err: &reqwest::Error) -> String {
    let mut text = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(s) = source {
        text.push_str(&format!(": {s}"));
        source = s.source();
    }
    if err.is_timeout() { format!("timed out: {text}") } else { text }
}

/// One Server-Sent Event.
#[derive(Debug, Clone, PartialEq)]
pub struct SseEvent {
    /// The `event:` field (empty when absent).
    pub event: String,
    /// The `data:` field.
    pub data: String,
}

/// The events of an SSE response body.
pub fn sse_events(response: reqwest::Response) -> impl Stream<Item = Result<SseEvent, ProviderError>> + Send + Unpin {
    response.bytes_stream().eventsource().map(|item| match item {
        Ok(ev) => Ok(SseEvent { event: ev.event, data: ev.data }),
        Err(e) => Err(ProviderError::Transport(format!("the event stream broke: {e}"))),
    })
}

/// The JSON values of an NDJSON response body, one per line.
pub fn ndjson_values(response: reqwest::Response) -> impl Stream<Item = Result<Value, ProviderError>> + Send + Unpin {
    let mut buffer: Vec<u8> = Vec::new();
    let bytes = response.bytes_stream();
    Box::pin(
        bytes
            .map(move |chunk| -> Vec<Result<Value, ProviderError>> {
                let chunk = match chunk {
                    Ok(c) => c,
                    Err(e) => return vec![Err(ProviderError::Transport(format!("the response stream broke: {e}")))],
                };
                buffer.extend_from_slice(&chunk);
                let mut out = Vec::new();
                while let Some(pos) = buffer.iter().position(|&b| b == b'\n') {
                    let line: Vec<u8> = buffer.drain(..=pos).collect();
                    let text = String::from_utf8_lossy(&line);
                    if text.trim().is_empty() {
                        continue;
                    }
                    out.push(serde_json::from_str(text.trim()).map_err(|e| {
                        ProviderError::Malformed(format!("a stream line is not JSON ({e}): {}", text.trim()))
                    }));
                }
                out
            })
            .flat_map(futures::stream::iter),
    )
}

/// Parses one event's JSON payload.
pub fn parse_data(data: &str) -> Result<Value, ProviderError> {
    serde_json::from_str(data).map_err(|e| ProviderError::Malformed(format!("an event is not JSON ({e}): {data}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_actionable_errors() {
        assert!(matches!(error_from_status(429, None, ""), ProviderError::RateLimited { retry_after: None }));
        assert_eq!(
            error_from_status(401, None, r#"{"error":{"message":"invalid x-api-key"}}"#),
            ProviderError::Auth("invalid x-api-key".into())
        );
        assert_eq!(
            error_from_status(
                529,
                None,
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            ),
            ProviderError::Server { status: 529, message: "Overloaded".into() }
        );
        assert_eq!(
            error_from_status(400, None, r#"{"error":"model not found"}"#),
            ProviderError::BadRequest("HTTP 400: model not found".into())
        );
        assert!(error_from_status(503, None, "").is_retryable());
        assert!(!error_from_status(401, None, "").is_retryable());
        assert!(!error_from_status(422, None, "").is_retryable());
    }

    #[test]
    fn retry_after_reads_seconds_milliseconds_and_dates() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", "2".parse().expect("header"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", "1500".parse().expect("header"));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(1500)));
        let mut past = HeaderMap::new();
        past.insert("retry-after", "Sun, 06 Nov 1994 08:49:37 GMT".parse().expect("header"));
        assert_eq!(retry_after(&past), Some(Duration::ZERO));
        let mut junk = HeaderMap::new();
        junk.insert("retry-after", "soon".parse().expect("header"));
        assert_eq!(retry_after(&junk), None);
    }
}
