//! Whether requests are laid out for a vendor's prompt cache: the
//! `CONCLAVE_PROMPT_CACHE` setting, which `anthropic.rs` and `openai/` read when they
//! are built; and the one estimate of whether a prefix is long enough to be cached,
//! which decides both where a request's cache marks go and whether sibling agents'
//! first calls are ordered (`Provider::caches_prefix`).

use conclave_core::AgentRequest;

/// A generous estimate of the tokens of `bytes` bytes of prompt (about 4 bytes a
/// token in English and code), for deciding whether a cache mark can pay off.
pub fn estimated_tokens(bytes: usize) -> usize {
    bytes / 4
}

/// The bytes of what a vendor reads before the request's shared prefix: its tools'
/// descriptions and parameters.
pub fn tool_bytes(request: &AgentRequest) -> usize {
    request.tools.iter().map(|t| t.description.len() + t.parameters.to_string().len()).sum()
}

/// Whether a prefix of `bytes` bytes reaches `minimum` tokens, the model's least
/// cacheable length.
pub fn reaches(bytes: usize, minimum: usize) -> bool {
    estimated_tokens(bytes) >= minimum
}

/// Whether `request`'s shared prefix, after its tools, reaches `minimum` tokens.
pub fn shared_prefix_reaches(request: &AgentRequest, minimum: usize) -> bool {
    !request.shared_prefix.is_empty() && reaches(tool_bytes(request) + request.shared_prefix.len(), minimum)
}

/// Whether requests are laid out for a vendor's prompt cache (`CONCLAVE_PROMPT_CACHE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptCache {
    /// `auto` (the default): for the vendors' own APIs, whose caches are known.
    Auto,
    /// `on`: for any server, such as an OpenAI-compatible one that takes
    /// `prompt_cache_key`.
    On,
    /// `off`: never, for comparing what caching saves.
    Off,
}

impl PromptCache {
    /// The setting in `env`; anything but `on` and `off` (and `1`/`0`,
    /// `true`/`false`) is `auto`.
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> PromptCache {
        match env("CONCLAVE_PROMPT_CACHE").map(|v| v.trim().to_ascii_lowercase()).as_deref() {
            Some("on" | "1" | "true") => PromptCache::On,
            Some("off" | "0" | "false") => PromptCache::Off,
            _ => PromptCache::Auto,
        }
    }

    /// Whether a provider whose server is the vendor's own (`vendor_api`) caches.
    pub fn enabled(self, vendor_api: bool) -> bool {
        match self {
            PromptCache::Auto => vendor_api,
            PromptCache::On => true,
            PromptCache::Off => false,
        }
    }
}
