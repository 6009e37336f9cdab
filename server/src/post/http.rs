//! The forges' REST client: one request with typed errors (a permission refusal, a
//! rate limit with the wait the forge asked for, a server error), retried with
//! `backon`'s exponential backoff, and pagination by `Link` (parsed by `http-link`) or
//! `X-Next-Page`.

use backon::{ExponentialBuilder, Retryable};
use conclave_core::{Redactor, Secret};
use reqwest::header::HeaderMap;
use reqwest::{Method, Url};
use serde_json::Value;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::PostError;

/// The longest wait for a rate limit this process sits through; a longer one fails
/// with the time to come back.
const MAX_WAIT: Duration = Duration::from_secs(120);
/// Retries after the first try.
const RETRIES: usize = 4;
/// The most pages read of one list.
const MAX_PAGES: usize = 100;

/// One forge's API: its base URL, how its token is sent, and what its errors mean.
#[derive(Debug)]
pub struct Api {
    client: reqwest::Client,
    base: Url,
    auth: (&'static str, Secret),
    headers: Vec<(&'static str, &'static str)>,
    redactor: Redactor,
    /// The variable the token comes from, and what to do about a permission
    /// refusal, for the error messages.
    explain: (&'static str, &'static str),
}

impl Api {
    /// A client of the API at `base`, sending the token in header `auth.0`.
    /// `token` is what errors are cleaned of (the header may wrap it, as `Bearer …`);
    /// `explain` names its variable and what a token needs to post.
    pub fn new(
        base: Url,
        auth: (&'static str, Secret),
        token: &Secret,
        headers: Vec<(&'static str, &'static str)>,
        explain: (&'static str, &'static str),
    ) -> Result<Api, PostError> {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(15))
            .timeout(Duration::from_secs(60))
            .user_agent(concat!("conclave/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| PostError::Transport { request: base.to_string(), message: e.to_string() })?;
        let redactor = Redactor::new([token.expose().to_string()]);
        Ok(Api { client, base, auth, headers, redactor, explain })
    }

    /// The URL of `segments` under the base (each segment percent-encoded, so a
    /// GitLab project path `group/name` is one segment).
    pub fn url(&self, segments: &[&str]) -> Url {
        let mut url = self.base.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty().extend(segments);
        }
        url
    }

    /// Sends one request, retrying rate limits, server errors and broken connections;
    /// the JSON answer (`null` for an empty body) and its headers.
    /// Whatever it writes passes the process's redactor first (every secret the
    /// process knows, in every encoding) and this token's.
    pub async fn send(&self, method: Method, url: Url, body: Option<&Value>) -> Result<(HeaderMap, Value), PostError> {
        let redacted = body.map(|body| {
            let mut body = body.clone();
            conclave_core::process_redactor().redact_value(&mut body);
            self.redactor.redact_value(&mut body);
            body
        });
        let body = redacted.as_ref();
        let backoff = ExponentialBuilder::default()
            .with_min_delay(Duration::from_millis(500))
            .with_max_delay(Duration::from_secs(30))
            .with_max_times(RETRIES)
            .with_jitter();
        (|| self.send_once(method.clone(), url.clone(), body))
            .retry(backoff)
            .sleep(tokio::time::sleep)
            .when(PostError::is_retryable)
            .adjust(|error, delay| delay.map(|d| error.wait().unwrap_or(d)))
            .notify(|error, delay| eprintln!("post: {error}; retrying in {:.1}s", delay.as_secs_f64()))
            .await
    }

    /// Every item of a paginated list, following `Link: <…>; rel="next"` or `X-Next-Page`.
    pub async fn get_all(&self, mut url: Url) -> Result<Vec<Value>, PostError> {
        url.query_pairs_mut().append_pair("per_page", "100");
        let mut items = Vec::new();
        for _ in 0..MAX_PAGES {
            let (headers, page) = self.send(Method::GET, url.clone(), None).await?;
            match page {
                Value::Array(list) => items.extend(list),
                other => return Err(malformed(&Method::GET, &url, format!("expected a list, got {other}"))),
            }
            match next_page(&headers, &url) {
                Some(next) => url = next,
                None => return Ok(items),
            }
        }
        Err(malformed(&Method::GET, &url, format!("more than {MAX_PAGES} pages")))
    }

    async fn send_once(&self, method: Method, url: Url, body: Option<&Value>) -> Result<(HeaderMap, Value), PostError> {
        let request = format!("{method} {}", url.path());
        let mut builder = self.client.request(method.clone(), url.clone()).header(self.auth.0, self.auth.1.expose());
        for (name, value) in &self.headers {
            builder = builder.header(*name, *value);
        }
        if let Some(body) = body {
            builder = builder.json(body);
        }
        let response = builder.send().await.map_err(|e| PostError::Transport {
            request: request.clone(),
            message: self.redactor.redact(&e.to_string()),
        })?;
        let (status, headers) = (response.status().as_u16(), response.headers().clone());
        let text = response.text().await.unwrap_or_default();
        if (200..300).contains(&status) {
            let value = if text.trim().is_empty() {
                Value::Null
            } else {
                serde_json::from_str(&text).map_err(|e| malformed(&method, &url, e.to_string()))?
            };
            return Ok((headers, value));
        }
        Err(self.error(request, status, &headers, &text))
    }

    fn error(&self, request: String, status: u16, headers: &HeaderMap, body: &str) -> PostError {
        let message = self.redactor.redact(&error_message(body));
        let wait = rate_limit_wait(headers);
        match status {
            429 => PostError::RateLimited { request, wait },
            403 if wait.is_some() => PostError::RateLimited { request, wait },
            401 => PostError::Unauthorized { request, message, variable: self.explain.0 },
            403 => PostError::Permission { request, status, message, hint: self.explain.1 },
            500..=599 => PostError::Server { request, status, message },
            _ => PostError::Status { request, status, message },
        }
    }
}

impl PostError {
    /// Whether trying again may help: a rate limit the process may wait out, a
    /// server error, a broken connection.
    pub fn is_retryable(&self) -> bool {
        match self {
            PostError::RateLimited { wait, .. } => wait.is_none_or(|w| w <= MAX_WAIT),
            PostError::Server { .. } | PostError::Transport { .. } => true,
            _ => false,
        }
    }

    /// The wait the forge asked for, if any.
    fn wait(&self) -> Option<Duration> {
        match self {
            PostError::RateLimited { wait, .. } => *wait,
            _ => None,
        }
    }
}

/// How long a rate-limited answer asks to wait: `retry-after` (seconds or an HTTP
/// date), else the reset time (`x-ratelimit-reset` on GitHub, `RateLimit-Reset` on
/// GitLab, both seconds since the epoch) when no requests remain. `None` when the
/// answer says nothing of a rate limit.
fn rate_limit_wait(headers: &HeaderMap) -> Option<Duration> {
    if let Some(wait) = conclave_providers::http::retry_after(headers) {
        return Some(wait);
    }
    let number = |name: &str| headers.get(name)?.to_str().ok()?.trim().parse::<u64>().ok();
    let remaining = number("x-ratelimit-remaining").or_else(|| number("ratelimit-remaining"))?;
    if remaining > 0 {
        return None;
    }
    let reset = number("x-ratelimit-reset").or_else(|| number("ratelimit-reset"))?;
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
    Some(Duration::from_secs(reset.saturating_sub(now)))
}

/// The next page: the `Link` header's `rel="next"` target (RFC 8288, resolved
/// against this URL), else `X-Next-Page` on this URL.
fn next_page(headers: &HeaderMap, url: &Url) -> Option<Url> {
    let links = headers.get_all("link").iter().filter_map(|v| v.to_str().ok());
    let mut parsed = links.filter_map(|v| http_link::parse_link_header(v, url).ok()).flatten();
    if let Some(next) = parsed.find(|link| link.rel == "next") {
        return Some(next.target);
    }
    let page = headers.get("x-next-page")?.to_str().ok()?.trim().to_string();
    if page.is_empty() {
        return None;
    }
    let mut next = url.clone();
    let kept: Vec<(String, String)> =
        url.query_pairs().filter(|(k, _)| k != "page").map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
    next.query_pairs_mut().clear().extend_pairs(kept).append_pair("page", &page);
    Some(next)
}

/// The human part of a forge's error body (`message`, GitHub's `errors`, GitLab's `error`).
fn error_message(body: &str) -> String {
    let Ok(value) = serde_json::from_str::<Value>(body) else {
        let text = body.trim();
        return if text.is_empty() {
            "no details in the response".to_string()
        } else {
            text.chars().take(500).collect()
        };
    };
    let mut parts: Vec<String> = ["message", "error"]
        .iter()
        .filter_map(|key| value.get(*key))
        .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
        .collect();
    if let Some(errors) = value.get("errors") {
        parts.push(errors.to_string());
    }
    if parts.is_empty() { value.to_string() } else { parts.join(": ") }
}

fn malformed(method: &Method, url: &Url, message: String) -> PostError {
    PostError::Malformed { request: format!("{method} {}", url.path()), message }
}
