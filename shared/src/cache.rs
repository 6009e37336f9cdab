//! Cached nodes: the setting agents and commands share, which says whether a node's
//! output is kept for later runs with the same inputs, and for how long.

use serde::{Deserialize, Serialize};

/// Whether a node's output is kept for later runs with the same inputs, and for how
/// long.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum CacheSetting {
    /// `true` keeps it until it is replaced; `false` is the same as leaving it out.
    On(bool),
    /// Keep it this long.
    For {
        /// Seconds an output stays usable after it was stored.
        #[cfg_attr(feature = "json-schema", schemars(range(min = 1)))]
        ttl_secs: u64,
    },
}

impl CacheSetting {
    /// Whether outputs are cached at all.
    pub fn enabled(self) -> bool {
        !matches!(self, CacheSetting::On(false))
    }

    /// How long a cached output stays usable, in seconds; `None` for ever.
    pub fn ttl_secs(self) -> Option<u64> {
        match self {
            CacheSetting::For { ttl_secs } => Some(ttl_secs),
            CacheSetting::On(_) => None,
        }
    }
}
