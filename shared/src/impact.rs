//! `settings.impact`: whether a review's run input carries the change's impact (the
//! callers and tests of each function the change touches) and how much of it.

use serde::{Deserialize, Serialize};

/// The most callers and tests listed in a review's impact unless the conclave says.
pub const DEFAULT_IMPACT_ENTRIES: u32 = 40;
/// The most bytes of JSON a review's impact takes unless the conclave says.
pub const DEFAULT_IMPACT_BYTES: u32 = 8 * 1024;

/// How a review gives its reviewers the change's impact. Every field is optional;
/// an absent one has its default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ImpactSettings {
    /// Give the reviewers the impact (default true); `false` leaves it out and the
    /// repository is not indexed for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// The most callers and tests listed, all functions together (default 40); the
    /// callers of the most-changed functions come first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "json-schema", schemars(range(min = 0)))]
    #[cfg_attr(feature = "openapi", schema(minimum = 0))]
    pub max_entries: Option<u32>,
    /// The most bytes the impact takes in the run input, as JSON (default 8192).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "json-schema", schemars(range(min = 0)))]
    #[cfg_attr(feature = "openapi", schema(minimum = 0))]
    pub max_bytes: Option<u32>,
}

impl ImpactSettings {
    /// Whether the review gives the impact.
    pub fn is_enabled(&self) -> bool {
        self.enabled != Some(false)
    }

    /// The cap on callers and tests listed.
    pub fn entries(&self) -> usize {
        self.max_entries.unwrap_or(DEFAULT_IMPACT_ENTRIES) as usize
    }

    /// The cap on the impact's JSON, in bytes.
    pub fn bytes(&self) -> usize {
        self.max_bytes.unwrap_or(DEFAULT_IMPACT_BYTES) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_fields_take_the_defaults_and_unknown_ones_are_refused() {
        let settings: ImpactSettings = serde_json::from_str("{}").expect("empty");
        assert!(settings.is_enabled());
        assert_eq!((settings.entries(), settings.bytes()), (40, 8192));
        let off: ImpactSettings = serde_json::from_str(r#"{"enabled": false}"#).expect("off");
        assert!(!off.is_enabled());
        let small: ImpactSettings = serde_json::from_str(r#"{"max_entries": 5, "max_bytes": 1000}"#).expect("caps");
        assert_eq!((small.entries(), small.bytes()), (5, 1000));
        let error = serde_json::from_str::<ImpactSettings>(r#"{"max_callers": 5}"#).expect_err("unknown field");
        assert!(error.to_string().contains("unknown field `max_callers`"), "{error}");
    }
}
