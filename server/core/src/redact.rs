//! The one redaction point. Every provider is wrapped in a [`RedactingProvider`]
//! when the registry is built, so whatever a provider says (its reply, the pieces it
//! streams, its tool calls, its errors, its configuration messages) passes through a
//! [`Redactor`] before the engine sees it: before it becomes an event, a stored row,
//! a log line, a report or an error message.
//!
//! A secret is recognised raw, JSON-escaped (`\u0073k-...`, wholly or in part),
//! percent-encoded, base64-encoded (either alphabet, padded or not, inside a longer
//! encoded text too) and hex-encoded (`encodings.rs`), and credentials in any URL (`scheme://user:pass@host`) are
//! removed whatever they are (`url_credentials.rs`). Which environment variables hold
//! secrets is for the caller to say: this crate knows no vendor. Streamed text is held back just long enough that a
//! secret split across two pieces is still caught.

mod encodings;
mod registered;
mod url_credentials;

pub use registered::register_secret;
pub use url_credentials::{UrlCredentials, find_url_credentials, mask_url_credentials};

use async_trait::async_trait;
use regex::Regex;
use serde_json::Value;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

use crate::provider::{AgentReply, AgentRequest, Capabilities, Provider, ProviderError, ToolCall};
use crate::sink::StreamSink;

/// What a secret is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Secrets shorter than this are not redacted: they would match ordinary text.
const MIN_SECRET_LEN: usize = 6;

/// Removes secrets from text.
#[derive(Clone, Default)]
pub struct Redactor {
    patterns: Vec<Regex>,
    secrets: Vec<Known>,
    longest: usize,
}

/// One secret as the streamed hold-back looks for its beginning.
#[derive(Clone)]
struct Known {
    /// Its characters, each of which may be raw, JSON-escaped or percent-encoded.
    chars: Vec<char>,
    /// Its encoded forms, matched as they are (see `encodings.rs`).
    forms: Vec<encodings::Form>,
}

/// The redactor of every secret the process knows, once [`install_process_redactor`]
/// set it (before that, one of URL credentials only), and of every secret given to
/// [`register_secret`] since.
pub fn process_redactor() -> Arc<Redactor> {
    let installed = PROCESS.get().cloned();
    let generation = registered::generation();
    if generation == 0 {
        return installed.unwrap_or_default();
    }
    let mut combined = COMBINED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((built, over_installed, redactor)) = combined.as_ref()
        && *built == generation
        && *over_installed == installed.is_some()
    {
        return redactor.clone();
    }
    let (generation, secrets) = registered::registered();
    let over_installed = installed.is_some();
    let redactor = Arc::new(installed.map(|r| (*r).clone()).unwrap_or_default().with_secrets(secrets));
    *combined = Some((generation, over_installed, redactor.clone()));
    redactor
}

/// The installed redactor with the registered secrets: the generation of the
/// registered secrets it was built at, whether the process's redactor was installed
/// then, and the redactor.
static COMBINED: Mutex<Option<(u64, bool, Arc<Redactor>)>> = Mutex::new(None);

/// Sets the process's redactor, which every rendered report and posted body passes
/// last; the first call wins, so a process's secrets are decided once.
pub fn install_process_redactor(redactor: Arc<Redactor>) {
    let _ = PROCESS.set(redactor);
}

static PROCESS: OnceLock<Arc<Redactor>> = OnceLock::new();

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Redactor({} secret(s))", self.patterns.len())
    }
}

impl Redactor {
    /// A redactor for these secrets (and URL credentials, always).
    pub fn new(secrets: impl IntoIterator<Item = String>) -> Redactor {
        Redactor::default().with_secrets(secrets)
    }

    /// This redactor with more secrets (those already known, or too short, are left out).
    pub fn with_secrets(mut self, secrets: impl IntoIterator<Item = String>) -> Redactor {
        for secret in secrets.into_iter().filter(|s| s.chars().count() >= MIN_SECRET_LEN) {
            let chars: Vec<char> = secret.chars().collect();
            if self.secrets.iter().any(|known| known.chars == chars) {
                continue;
            }
            let forms = encodings::encoded_forms(&secret);
            if let Ok(pattern) = Regex::new(&pattern_of(&secret, &forms)) {
                // The longest form a secret can take: every character escaped as
                // `\uXXXX`, or hex of a text of multi-byte characters.
                let widest = forms.iter().map(|f| f.text.len()).max().unwrap_or(0);
                self.longest = self.longest.max(chars.len() * 6).max(widest);
                self.patterns.push(pattern);
                self.secrets.push(Known { chars, forms });
            }
        }
        self
    }

    /// A redactor for the secrets in the environment that the caller names: the
    /// values of `secret_variables` (keys and tokens), and the credentials of the URLs
    /// in `url_variables` (a provider's base URL).
    pub fn from_env(
        env: &dyn Fn(&str) -> Option<String>,
        secret_variables: &[&str],
        url_variables: &[&str],
    ) -> Redactor {
        let mut secrets: Vec<String> = secret_variables.iter().filter_map(|name| env(name)).collect();
        for url in url_variables.iter().filter_map(|name| env(name)) {
            secrets.extend(find_url_credentials(&url).into_iter().flat_map(|found| found.secrets));
        }
        Redactor::new(secrets)
    }

    /// `text` with every secret and every URL credential replaced.
    pub fn redact(&self, text: &str) -> String {
        let mut out = mask_url_credentials(text, REDACTED).into_owned();
        for pattern in &self.patterns {
            if pattern.is_match(&out) {
                out = pattern.replace_all(&out, REDACTED).into_owned();
            }
        }
        out
    }

    /// Redacts every string in a JSON value, keys included.
    pub fn redact_value(&self, value: &mut Value) {
        match value {
            Value::String(s) => *s = self.redact(s),
            Value::Array(items) => items.iter_mut().for_each(|v| self.redact_value(v)),
            Value::Object(map) => {
                let entries = std::mem::take(map);
                for (key, mut v) in entries {
                    self.redact_value(&mut v);
                    map.insert(self.redact(&key), v);
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    /// The error with every message in it redacted.
    pub fn redact_error(&self, error: ProviderError) -> ProviderError {
        let r = |s: String| self.redact(&s);
        match error {
            ProviderError::Config { provider, message } => ProviderError::Config { provider, message: r(message) },
            ProviderError::Server { status, message } => ProviderError::Server { status, message: r(message) },
            ProviderError::Auth(m) => ProviderError::Auth(r(m)),
            ProviderError::BadRequest(m) => ProviderError::BadRequest(r(m)),
            ProviderError::Transport(m) => ProviderError::Transport(r(m)),
            ProviderError::Refusal(m) => ProviderError::Refusal(r(m)),
            ProviderError::Truncated(m) => ProviderError::Truncated(r(m)),
            ProviderError::Malformed(m) => ProviderError::Malformed(r(m)),
            ProviderError::SchemaExhausted(m) => ProviderError::SchemaExhausted(r(m)),
            ProviderError::RateLimited { retry_after } => ProviderError::RateLimited { retry_after },
            ProviderError::NotRecorded { node, hash, dir } => ProviderError::NotRecorded { node, hash, dir: r(dir) },
            ProviderError::Recording { path, message } => {
                ProviderError::Recording { path: r(path), message: r(message) }
            }
            ProviderError::DialectRejected { dialect, status, message } => {
                ProviderError::DialectRejected { dialect, status, message: r(message) }
            }
        }
    }

    /// Where the end of `text` could be the beginning of a secret still arriving, in
    /// any disguise; `None` when it cannot.
    fn partial_start(&self, text: &str) -> Option<usize> {
        let mut from = text.len().saturating_sub(self.longest);
        while !text.is_char_boundary(from) {
            from -= 1;
        }
        text[from..].char_indices().map(|(i, _)| from + i).find(|&start| {
            let tail = &text[start..];
            self.secrets.iter().any(|s| begins(tail, &s.chars) || s.forms.iter().any(|f| f.begins_with(tail)))
        })
    }

    fn redact_reply(&self, mut reply: AgentReply) -> AgentReply {
        reply.text = self.redact(&reply.text);
        if let Some(json) = reply.json.as_mut() {
            self.redact_value(json);
        }
        for call in &mut reply.tool_calls {
            self.redact_call(call);
        }
        reply
    }

    fn redact_call(&self, call: &mut ToolCall) {
        call.name = self.redact(&call.name);
        self.redact_value(&mut call.arguments);
    }
}

/// A regular expression matching `secret` in every disguise: raw, JSON-escaped or
/// percent-encoded character by character, or in one of its encoded `forms`.
fn pattern_of(secret: &str, forms: &[encodings::Form]) -> String {
    let mut pattern = disguises(secret);
    for form in forms {
        let literal = regex::escape(&form.text);
        pattern.push('|');
        pattern.push_str(&if form.any_case { format!("(?i:{literal})") } else { literal });
    }
    pattern
}

/// A regular expression matching `secret` raw, JSON-escaped or percent-encoded, each
/// character in any of its forms.
fn disguises(secret: &str) -> String {
    secret
        .chars()
        .map(|c| {
            let literal = regex::escape(&c.to_string());
            if c.is_ascii() {
                let code = c as u32;
                format!(r"(?:{literal}|\\u(?i:{code:04x})|%(?i:{code:02x}))")
            } else {
                literal
            }
        })
        .collect()
}

/// Whether all of `tail` reads as the beginning of `secret` (each character raw,
/// `\uXXXX` or `%XX`, the last escape possibly cut short) without completing it.
fn begins(tail: &str, secret: &[char]) -> bool {
    let mut rest = tail;
    for &expected in secret {
        if rest.is_empty() {
            return true;
        }
        let (code, width) = if let Some(hex) = rest.strip_prefix("\\u") {
            (hex.get(..4).and_then(|h| u32::from_str_radix(h, 16).ok()), 6)
        } else if let Some(hex) = rest.strip_prefix('%') {
            (hex.get(..2).and_then(|h| u32::from_str_radix(h, 16).ok()), 3)
        } else {
            let c = rest.chars().next().unwrap_or_default();
            (Some(c as u32), c.len_utf8())
        };
        match code {
            Some(code) if code == expected as u32 => rest = &rest[width.min(rest.len())..],
            // An escape cut off at the end of the text may still complete the secret.
            None if rest.len() < width && rest.starts_with(['\\', '%']) => return true,
            _ => return false,
        }
    }
    false
}

/// A provider whose every output passes through a [`Redactor`].
#[derive(Debug)]
pub struct RedactingProvider {
    inner: Arc<dyn Provider>,
    redactor: Arc<Redactor>,
}

impl RedactingProvider {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn Provider>, redactor: Arc<Redactor>) -> RedactingProvider {
        RedactingProvider { inner, redactor }
    }
}

#[async_trait]
impl Provider for RedactingProvider {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    fn check_config(&self) -> Result<(), ProviderError> {
        self.inner.check_config().map_err(|e| self.redactor.redact_error(e))
    }

    fn check_model(&self, model: &str) -> Result<(), ProviderError> {
        self.inner.check_model(model).map_err(|e| self.redactor.redact_error(e))
    }

    fn default_model(&self) -> &str {
        self.inner.default_model()
    }

    fn dialects(&self) -> Option<crate::provider::EndpointDialects> {
        self.inner.dialects()
    }

    fn enforces_schema_itself(&self) -> bool {
        self.inner.enforces_schema_itself()
    }

    fn caches_prompts(&self) -> bool {
        self.inner.caches_prompts()
    }

    fn count_prompt_tokens(&self, request: &AgentRequest) -> Option<Result<usize, ProviderError>> {
        self.inner.count_prompt_tokens(request).map(|counted| counted.map_err(|e| self.redactor.redact_error(e)))
    }

    fn caches_prefix(&self, request: &AgentRequest) -> bool {
        self.inner.caches_prefix(request)
    }

    async fn call(&self, request: &AgentRequest, stream: &dyn StreamSink) -> Result<AgentReply, ProviderError> {
        let sink = RedactingSink { inner: stream, redactor: &self.redactor, pending: Mutex::default() };
        let result = self.inner.call(request, &sink).await;
        sink.flush().await;
        result.map(|reply| self.redactor.redact_reply(reply)).map_err(|e| self.redactor.redact_error(e))
    }
}

/// Streams redacted text, holding back a tail as long as the longest secret could be,
/// so a secret split across pieces is redacted whole.
struct RedactingSink<'a> {
    inner: &'a dyn StreamSink,
    redactor: &'a Redactor,
    pending: Mutex<String>,
}

impl RedactingSink<'_> {
    async fn flush(&self) {
        let rest = std::mem::take(&mut *self.pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
        if !rest.is_empty() {
            self.inner.text(&self.redactor.redact(&rest)).await;
        }
    }
}

#[async_trait]
impl StreamSink for RedactingSink<'_> {
    fn began(&self) {
        self.inner.began();
    }

    async fn text(&self, text: &str) {
        let ready = {
            let mut pending = self.pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            pending.push_str(text);
            let redacted = self.redactor.redact(&pending);
            // Keep back only what could still be the start of a secret.
            let cut = self.redactor.partial_start(&redacted).unwrap_or(redacted.len());
            *pending = redacted[cut..].to_string();
            redacted[..cut].to_string()
        };
        if !ready.is_empty() {
            self.inner.text(&ready).await;
        }
    }

    async fn tool_call(&self, tool: &str, mut arguments: Value) {
        self.redactor.redact_value(&mut arguments);
        self.inner.tool_call(&self.redactor.redact(tool), arguments).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "sk-live-0123456789abcdef";

    #[test]
    fn a_secret_is_caught_in_every_disguise() {
        let r = Redactor::new([KEY.to_string()]);
        let escaped: String = KEY.chars().map(|c| format!("\\u{:04x}", c as u32)).collect();
        let half: String = KEY
            .chars()
            .enumerate()
            .map(|(i, c)| if i % 2 == 0 { format!("\\u{:04X}", c as u32) } else { c.to_string() })
            .collect();
        let percent: String = KEY.chars().map(|c| format!("%{:02X}", c as u32)).collect();
        for text in [KEY.to_string(), escaped, half, percent, format!("{{\"key\":\"{KEY}\"}}")] {
            let out = r.redact(&format!("before {text} after"));
            assert!(out.contains(REDACTED) && !out.contains("0123456789"), "{text} -> {out}");
        }
        assert_eq!(r.redact("sk-live is a prefix, not the key"), "sk-live is a prefix, not the key");
    }

    #[test]
    fn url_credentials_are_removed_whatever_they_are() {
        let r = Redactor::from_env(
            &|name| (name == "SERVER_URL").then(|| "http://admin:hunter22pw@10.0.0.5:11434".into()),
            &[],
            &["SERVER_URL"],
        );
        let out = r.redact("could not reach http://admin:hunter22pw@10.0.0.5:11434/api/chat (password hunter22pw)");
        assert_eq!(out, "could not reach http://[redacted]@10.0.0.5:11434/api/chat (password [redacted])");
        assert_eq!(Redactor::default().redact("see https://u:p@example.com/x"), "see https://[redacted]@example.com/x");
    }

    #[test]
    fn only_a_tail_that_could_begin_a_secret_is_held_back() {
        let r = Redactor::new([KEY.to_string()]);
        assert_eq!(r.partial_start("no secret here"), None);
        assert_eq!(r.partial_start("the key is sk-li"), Some(11));
        assert_eq!(r.partial_start("escaped \\u0073\\u006"), Some(8));
        assert_eq!(r.partial_start("percent %73%6"), Some(8));
        assert_eq!(r.partial_start("ends with s"), Some(10));
        assert_eq!(r.partial_start("sk-lime"), None, "diverges from the key");
    }

    #[test]
    fn a_secret_is_caught_base64_and_hex_encoded_at_every_alignment() {
        use base64::Engine as _;
        use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
        // `>>?` makes the two alphabets differ (`/` against `_`).
        let key = format!("{KEY}>>?");
        let r = Redactor::new([key.clone()]);
        for before in ["", "a", "ab", "Authorization: Bearer "] {
            for after in ["", "\n", "xy"] {
                let plain = format!("{before}{key}{after}");
                for engine in [&STANDARD, &URL_SAFE, &STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
                    let encoded = engine.encode(plain.as_bytes());
                    let out = r.redact(&format!("token: {encoded} end"));
                    assert!(out.contains(REDACTED), "{plain:?} as {encoded} -> {out}");
                    let whole = engine.encode(key.as_bytes());
                    assert!(!out.contains(&whole[2..whole.len() - 3]), "{out}");
                }
            }
        }
        for hex in [hex::encode(&key), hex::encode_upper(&key), format!("00{}ff", hex::encode(&key))] {
            let out = r.redact(&format!("dump {hex}"));
            assert!(out.contains(REDACTED) && !out.contains(&hex::encode(KEY)[4..20]), "{hex} -> {out}");
        }
        let percent: String = key.bytes().map(|b| format!("%{b:02x}")).collect();
        assert_eq!(r.redact(&format!("q={percent}&x=1")), format!("q={REDACTED}&x=1"));
        assert_eq!(
            r.redact("plain words, c2stbGl2 short base64, 736b2d short hex"),
            "plain words, c2stbGl2 short base64, 736b2d short hex"
        );
    }

    #[test]
    fn a_secret_split_across_streamed_pieces_is_redacted_in_every_encoding() {
        use base64::Engine as _;
        let r = Redactor::new([KEY.to_string()]);
        let b64 = base64::engine::general_purpose::STANDARD.encode(format!("x{KEY}"));
        for form in [KEY.to_string(), b64, hex::encode(KEY), hex::encode_upper(KEY)] {
            let text = format!("the value is {form} and that is all");
            for cut in [13, 15, 20, 13 + form.len() - 1] {
                let (streamed, shown) = stream(&r, &[&text[..cut], &text[cut..]]);
                assert!(!shown.iter().any(|piece| piece.contains(&form[4..16])), "{form} cut at {cut}: {shown:?}");
                assert!(streamed.contains(REDACTED) && streamed.ends_with("and that is all"), "{streamed}");
            }
        }
        assert_eq!(r.partial_start("base64 c2stbGl2ZS0wMT"), Some(7), "the start of the key's base64 is held");
        assert_eq!(r.partial_start("hex 736B2D6C"), Some(4), "and of its hex, in either case");
    }

    /// The text a redacting sink passes on when `pieces` are streamed into it, whole
    /// and piece by piece.
    fn stream(redactor: &Redactor, pieces: &[&str]) -> (String, Vec<String>) {
        #[derive(Default)]
        struct Collect(Mutex<Vec<String>>);
        #[async_trait]
        impl StreamSink for Collect {
            async fn text(&self, text: &str) {
                self.0.lock().expect("lock").push(text.to_string());
            }
            async fn tool_call(&self, _: &str, _: Value) {}
        }
        let inner = Collect::default();
        let sink = RedactingSink { inner: &inner, redactor, pending: Mutex::default() };
        let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
        runtime.block_on(async {
            for piece in pieces {
                sink.text(piece).await;
            }
            sink.flush().await;
        });
        let shown = inner.0.into_inner().expect("lock");
        (shown.concat(), shown)
    }

    #[test]
    fn json_values_are_redacted_throughout() {
        let r = Redactor::new([KEY.to_string()]);
        let mut value = serde_json::json!({"a": [KEY, {"b": format!("x{KEY}y")}], KEY: 1});
        r.redact_value(&mut value);
        assert!(!value.to_string().contains(KEY), "{value}");
    }
}
