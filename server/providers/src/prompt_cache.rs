//! Whether requests are laid out for a vendor's prompt cache: the
//! `CONCLAVE_PROMPT_CACHE` setting, which `anthropic.rs` and `openai/` read when they
//! are built.

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
