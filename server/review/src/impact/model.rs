//! What a review's impact is, as the run input carries it: the functions the change
//! touches with their callers and tests (`impact`, which every reviewer reads), and
//! what was found, given and left out (`_impact`, a record the report reads and no
//! agent sees). Pure data: building it is `build.rs`'s work.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The run input's field the reviewers read.
pub const IMPACT_KEY: &str = "impact";
/// The run input's record of what was found, given and left out (see
/// `conclave_engine::RECORD_PREFIX`: no agent sees it).
pub const IMPACT_RECORD_KEY: &str = "_impact";

/// The change's impact as the reviewers read it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Impact {
    /// The functions and methods the change adds, removes or modifies, the most
    /// changed first.
    pub functions: Vec<ImpactFunction>,
    /// What the caps left out, when they left out anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left_out: Option<LeftOut>,
}

/// How the change touches a function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// New in the head version.
    Added,
    /// In both versions, with changed lines inside it.
    Modified,
    /// Gone from the head version (or renamed): its callers still using its name
    /// are listed.
    Removed,
}

/// One function the change touches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImpactFunction {
    pub name: String,
    /// `function` or `method`.
    pub kind: String,
    /// The type, class, `impl` or module it sits in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// Its file: the head version's, the base version's for a removed function.
    pub file: String,
    /// Its first and last lines (1-based, inclusive) in that version.
    pub lines: [u32; 2],
    pub change: ChangeKind,
    /// How many of its lines the change adds or deletes.
    pub changed_lines: u32,
    /// Its first line.
    pub signature: String,
    /// Whether it is itself a test.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub test: bool,
    /// The places outside tests that call it (or use it), in the head version.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub callers: Vec<Site>,
    /// The places in tests that call or name it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tests: Vec<Site>,
    /// Callers and tests found but not listed, for the caps.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub more: u32,
}

/// A line that calls or names a changed function.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Site {
    pub file: String,
    pub line: u32,
    /// The line's text, trimmed.
    pub text: String,
    /// The function the line sits in.
    #[serde(default, rename = "in", skip_serializing_if = "Option::is_none")]
    pub within: Option<String>,
}

/// What the caps left out of the impact.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeftOut {
    pub functions: u32,
    pub callers: u32,
    pub tests: u32,
}

/// What building the impact found, gave and left out, for the report.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImpactRecord {
    /// Functions, callers and tests found.
    pub found: Counts,
    /// Functions, callers and tests given to the reviewers.
    pub given: Counts,
    /// The caps in force.
    pub max_entries: u32,
    pub max_bytes: u32,
    /// The JSON size of what was given.
    pub bytes: u32,
    /// Changed files of a language the index parses.
    pub files: u32,
    /// Changed files left out, by why: `language` (no grammar), or the parser's
    /// reason (`binary`, `invalid_utf8`, `too_large`, `parse_error`, ...).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub skipped: std::collections::BTreeMap<String, u32>,
    /// Why there is no impact at all, when there is none (turned off, the index
    /// could not be built).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub off: Option<String>,
}

/// Functions, callers and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub functions: u32,
    pub callers: u32,
    pub tests: u32,
}

/// A review's impact and its record, as a change carries them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChangeImpact {
    /// What the reviewers read; `None` when no function was found or impact is off.
    pub impact: Option<Impact>,
    pub record: ImpactRecord,
}

impl ChangeImpact {
    /// Puts the impact (when there is one) and its record into a run input.
    pub fn insert_into(&self, input: &mut Map<String, Value>) {
        if let Some(impact) = &self.impact {
            input.insert(IMPACT_KEY.into(), serde_json::to_value(impact).unwrap_or_default());
        }
        input.insert(IMPACT_RECORD_KEY.into(), serde_json::to_value(&self.record).unwrap_or_default());
    }

    /// The impact a run input carries (`None`: the run was not given one, as reviews
    /// made before impact existed).
    pub fn of_input(input: &Value) -> Option<ChangeImpact> {
        let record = serde_json::from_value(input.get(IMPACT_RECORD_KEY)?.clone()).ok()?;
        let impact = input.get(IMPACT_KEY).and_then(|v| serde_json::from_value(v.clone()).ok());
        Some(ChangeImpact { impact, record })
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}
