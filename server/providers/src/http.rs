//! HTTP plumbing shared by the HTTP providers: one client, status-to-error mapping
//! (with `retry-after`), error bodies read up to a bound, and streaming readers for
//! Server-Sent Events and NDJSON.

use eventsource_stream::Eventsource;
use futures::{Stream, StreamExt};
use reqwest::header::HeaderMap;
use serde_json::Value;
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};
use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};
use tokio_util::io::StreamReader;

use conclave_core::ProviderError;

/// Largest part of an error body quoted in a message.
const ERROR_BODY_LIMIT: usize = 2000;

/// The most of an error response's body that is read: far more than any real error
/// message, and a bound on what a broken or hostile server can make Conclave hold.
pub const ERROR_BODY_CAP: usize = 64 * 1024;

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

/// Sends a request and turns transport failures and non-2xx answers into typed errors.
/// (What they say is redacted where every provider's output is: `RedactingProvider`.)
pub async fn send(request: reqwest::RequestBuilder) -> Result<reqwest::Response, ProviderError> {
    let response = request.send().await.map_err(|e| ProviderError::Transport(describe(&e)))?;
    let status = response.status().as_u16();
    if (200..300).contains(&status) {
        return Ok(response);
    }
    let retry_after = retry_after(response.headers());
    let body = ErrorBody::read(response).await;
    Err(body.mark(error_from_status(status, retry_after, &body.text)))
}

/// The start of an error response's body: at most [`ERROR_BODY_CAP`] bytes, read as
/// they stream; the rest is never read (the connection is dropped with the response).
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorBody {
    /// What was read, as text.
    pub text: String,
    /// Whether the body went on past the cap.
    pub cut: bool,
}

impl ErrorBody {
    /// Reads the start of `response`'s body. A body that breaks off keeps what came.
    pub async fn read(mut response: reqwest::Response) -> ErrorBody {
        let mut kept: Vec<u8> = Vec::new();
        let mut cut = false;
        while let Ok(Some(chunk)) = response.chunk().await {
            let room = ERROR_BODY_CAP - kept.len();
            if chunk.len() > room {
                kept.extend_from_slice(&chunk[..room]);
                cut = true;
                break;
            }
            kept.extend_from_slice(&chunk);
        }
        ErrorBody { text: String::from_utf8_lossy(&kept).into_owned(), cut }
    }

    /// `error` with a note that the body was cut, when it was.
    pub fn mark(&self, error: ProviderError) -> ProviderError {
        if !self.cut {
            return error;
        }
        let note = |message: String| {
            format!("{message} (the error body went on past {} KiB; the rest was not read)", ERROR_BODY_CAP / 1024)
        };
        match error {
            ProviderError::Server { status, message } => ProviderError::Server { status, message: note(message) },
            ProviderError::Auth(message) => ProviderError::Auth(note(message)),
            ProviderError::BadRequest(message) => ProviderError::BadRequest(note(message)),
            ProviderError::DialectRejected { dialect, status, message } => {
                ProviderError::DialectRejected { dialect, status, message: note(message) }
            }
            other => other,
        }
    }
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

/// The longest wait a `retry-after` header is believed for; the retry policy caps it
/// further. Values beyond it (`inf`, `1e30`) are a provider's bug, not a reason to
/// wait a lifetime or to crash.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(24 * 3600);

/// `retry-after` (seconds or an HTTP date) or `retry-after-ms`.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    if let Some(ms) =
        headers.get("retry-after-ms").and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse::<f64>().ok())
    {
        return Duration::try_from_secs_f64(ms.max(0.0) / 1000.0).ok().map(|d| d.min(MAX_RETRY_AFTER));
    }
    let value = headers.get("retry-after")?.to_str().ok()?.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return Duration::try_from_secs_f64(secs.max(0.0)).ok().map(|d| d.min(MAX_RETRY_AFTER));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(SystemTime::now()).unwrap_or(Duration::ZERO))
}

/// A transport error with its causes, for messages.
pub(crate) fn describe(err: &reqwest::Error) -> String {
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

/// The longest NDJSON line accepted; a longer one is a broken stream, not an answer.
const NDJSON_LINE_LIMIT: usize = 16 * 1024 * 1024;

/// The JSON values of an NDJSON response body, one per line (the last line may lack
/// its newline).
pub fn ndjson_values(response: reqwest::Response) -> impl Stream<Item = Result<Value, ProviderError>> + Send + Unpin {
    let body = StreamReader::new(response.bytes_stream().map(|chunk| chunk.map_err(std::io::Error::other)));
    FramedRead::new(body, LinesCodec::new_with_max_length(NDJSON_LINE_LIMIT)).filter_map(|line| {
        futures::future::ready(match line {
            Ok(text) if text.trim().is_empty() => None,
            Ok(text) => Some(
                serde_json::from_str(text.trim())
                    .map_err(|e| ProviderError::Malformed(format!("a stream line is not JSON ({e}): {}", text.trim()))),
            ),
            Err(LinesCodecError::MaxLineLengthExceeded) => {
                Some(Err(ProviderError::Malformed(format!("a stream line is longer than {NDJSON_LINE_LIMIT} bytes"))))
            }
            Err(LinesCodecError::Io(e)) => {
                Some(Err(ProviderError::Transport(format!("the response stream broke: {e}"))))
            }
        })
    })
}

/// Parses one event's JSON payload.
pub fn parse_data(data: &str) -> Result<Value, ProviderError> {
    serde_json::from_str(data).map_err(|e| ProviderError::Malformed(format!("an event is not JSON ({e}): {data}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn ndjson_lines_are_split_including_a_last_line_without_newline() {
        let body = "{\"a\":1}\n\n{\"b\":2}\r\n{\"c\":3}";
        let response = reqwest::Response::from(http::Response::new(body));
        let values: Vec<Value> = ndjson_values(response).map(|v| v.expect("JSON")).collect().await;
        assert_eq!(values, vec![serde_json::json!({"a": 1}), serde_json::json!({"b": 2}), serde_json::json!({"c": 3})]);
        let broken = reqwest::Response::from(http::Response::new("{\"a\":1}\nnot json\n"));
        let results: Vec<Result<Value, ProviderError>> = ndjson_values(broken).collect().await;
        assert!(matches!(&results[1], Err(ProviderError::Malformed(m)) if m.contains("not json")), "{results:?}");
    }

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
    fn absurd_retry_after_values_never_panic() {
        for value in ["inf", "1e30", "-5", "NaN", "18446744073709551616"] {
            let mut headers = HeaderMap::new();
            headers.insert("retry-after", value.parse().expect("header"));
            let wait = retry_after(&headers);
            assert!(wait.is_none_or(|d| d <= MAX_RETRY_AFTER), "{value}: {wait:?}");
            let mut headers = HeaderMap::new();
            headers.insert("retry-after-ms", value.parse().expect("header"));
            assert!(retry_after(&headers).is_none_or(|d| d <= MAX_RETRY_AFTER), "{value} ms");
        }
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
