//! Code-review findings and what the engine concludes when it compares sibling
//! reviewers: contradictions, disagreements, agreements, near-duplicates, and a
//! Writer's miscounted totals.

use serde::{Deserialize, Serialize};

/// Which side of a change configures its review (the conclave, its schemas, the
/// rules files and the dismissals). A change under review is untrusted: by default a
/// review with a base reads its configuration from the base side, and the change's
/// own edits to it are reported, not applied. `head` is the caller's explicit choice
/// for a change it trusts (a maintainer's own branch).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Trust {
    /// The base side (the merge base of base and head): the default.
    #[default]
    Base,
    /// The head side: the change configures its own review.
    Head,
}

/// How serious a finding is, most serious first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Must not merge.
    Blocker,
    /// Should be fixed before merging.
    Major,
    /// Worth fixing.
    Minor,
    /// A matter of taste.
    Nit,
}

impl Severity {
    /// All severities, most serious first.
    pub const ALL: [Severity; 4] = [Severity::Blocker, Severity::Major, Severity::Minor, Severity::Nit];

    /// 3 for a blocker down to 0 for a nit.
    pub fn level(self) -> u8 {
        match self {
            Severity::Blocker => 3,
            Severity::Major => 2,
            Severity::Minor => 1,
            Severity::Nit => 0,
        }
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Blocker => "blocker",
            Severity::Major => "major",
            Severity::Minor => "minor",
            Severity::Nit => "nit",
        }
    }

    /// Parses a wire name (case-insensitive).
    pub fn parse(s: &str) -> Option<Severity> {
        Severity::ALL.into_iter().find(|v| v.as_str().eq_ignore_ascii_case(s.trim()))
    }
}

/// Whether a finding says something is wrong or that it was checked and is right.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Stance {
    /// Something is wrong here.
    Concern,
    /// This was checked and is right.
    Approval,
}

/// Where a finding's quoted evidence was found in the file under review. Conclave
/// decides it after the agent answers; no model is asked for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Anchor {
    /// The quote is at the cited line.
    Anchored,
    /// The quote is a few lines away; the finding's line was moved there.
    Relocated,
    /// The quote is nowhere in the file (or not in one place only): the finding may
    /// cite code that does not exist.
    Unanchored,
    /// The finding has no quote to check.
    Unquoted,
    /// The file could not be read (deleted, outside the repository, not text).
    Unchecked,
}

impl Anchor {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Anchor::Anchored => "anchored",
            Anchor::Relocated => "relocated",
            Anchor::Unanchored => "unanchored",
            Anchor::Unquoted => "unquoted",
            Anchor::Unchecked => "unchecked",
        }
    }
}

/// How a finding compares with the baseline review it was compared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum BaselineState {
    /// Not in the baseline.
    New,
    /// In the baseline, as it is now.
    Unchanged,
    /// In the baseline with another severity or stance.
    Updated,
    /// In the baseline and gone now: fixed (or no longer raised).
    Absent,
}

impl BaselineState {
    /// The wire name, also SARIF's `baselineState`.
    pub fn as_str(self) -> &'static str {
        match self {
            BaselineState::New => "new",
            BaselineState::Unchanged => "unchanged",
            BaselineState::Updated => "updated",
            BaselineState::Absent => "absent",
        }
    }
}

/// How many of an agent's samples raised a finding (`--samples K`): `raised` of
/// `samples`, its stability.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Stability {
    /// Samples that raised it (or the same code, or a near-duplicate of it).
    pub raised: u32,
    /// Samples that answered.
    pub samples: u32,
}

impl Stability {
    /// `raised / samples`, between 0 and 1.
    pub fn rate(self) -> f64 {
        if self.samples == 0 { 0.0 } else { f64::from(self.raised) / f64::from(self.samples) }
    }
}

impl std::fmt::Display for Stability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.raised, self.samples)
    }
}

/// Why a finding was dismissed, from the repository's `.conclave/dismissed.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Dismissal {
    /// Why the finding does not apply.
    pub reason: String,
    /// Who dismissed it.
    pub author: String,
}

/// One finding as an agent reported it, with the path normalized. What Conclave adds
/// to it (quote checks, dismissal, baseline) is not read by the editor's wasm build,
/// which shows none of it yet: skipping it there keeps the editor within its size
/// budget. The fingerprint is read everywhere: it is the finding's identity.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Finding {
    /// The agent (node id) whose output held it.
    pub agent: String,
    /// The lane named in the finding (`raisedBy`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raised_by: Option<String>,
    /// Repository-relative path, normalized.
    pub file: String,
    /// Line in the new version of the file.
    pub line: u64,
    /// Severity, if given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity: Option<Severity>,
    /// Stance, if given (absent means a concern).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stance: Option<Stance>,
    /// What the agent said.
    pub description: String,
    /// A short quote of the code the finding is about, as the agent wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", serde(skip))]
    pub evidence: Option<String>,
    /// Where the quote was found (computed by Conclave).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", serde(skip))]
    pub anchor: Option<Anchor>,
    /// The line the agent cited, when the finding was relocated to its quote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", serde(skip))]
    pub cited_line: Option<u64>,
    /// A fingerprint of the code the finding points at (its file, lane and the
    /// normalized text of its line and neighbours), not of its line number, so it
    /// stays the same when lines above it are added or removed (computed by Conclave).
    /// The editor reads it too: it is what tells two runs' findings apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    /// The dismissal of this finding's fingerprint, when the repository has one: it
    /// is then reported as suppressed and fails no gate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", serde(skip))]
    pub dismissed: Option<Dismissal>,
    /// How it compares with the baseline, when the review had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", serde(skip))]
    pub baseline: Option<BaselineState>,
    /// How many distinct reviewers raised it or a near-duplicate of it (computed by
    /// Conclave from the reviewers' own outputs): agreement as confidence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", serde(skip))]
    pub support: Option<u32>,
    /// With `--samples K`: how many of its agent's samples raised it (computed by
    /// Conclave when it merged the samples).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", serde(skip))]
    pub stability: Option<Stability>,
}

impl Finding {
    /// The stance, with an absent one read as a concern.
    pub fn effective_stance(&self) -> Stance {
        self.stance.unwrap_or(Stance::Concern)
    }

    /// The subject of the finding: the lane that raised it, else its agent.
    pub fn subject(&self) -> &str {
        self.raised_by.as_deref().unwrap_or(&self.agent)
    }

    /// What makes two findings the same finding, in two runs or against a baseline:
    /// the fingerprint, which names the code and not the line, so a finding whose
    /// lines moved is still the same. A finding without one (from a report written
    /// before fingerprints) is known by its place: file, line and subject.
    pub fn identity(&self) -> FindingIdentity<'_> {
        match &self.fingerprint {
            Some(fingerprint) => FindingIdentity::Fingerprint(fingerprint),
            None => FindingIdentity::Place { file: &self.file, line: self.line, subject: self.subject() },
        }
    }
}

/// What a finding is known by (see [`Finding::identity`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FindingIdentity<'a> {
    /// Its fingerprint.
    Fingerprint(&'a str),
    /// Its place, for a finding without a fingerprint.
    Place {
        /// The file.
        file: &'a str,
        /// The line.
        line: u64,
        /// The lane that raised it, else its agent.
        subject: &'a str,
    },
}

/// Findings of different agents that the engine grouped together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FindingGroup {
    /// The file.
    pub file: String,
    /// First line covered.
    pub line: u64,
    /// Last line covered (equal to `line` for an exact bucket).
    pub end_line: u64,
    /// Why the group was formed: `same_line` or `near_duplicate`.
    pub basis: String,
    /// One sentence on what the group means.
    pub summary: String,
    /// The findings, in agent order.
    pub findings: Vec<Finding>,
}

/// What comparing sibling reviewers found.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FindingsCheck {
    /// The sibling agents compared.
    pub agents: Vec<String>,
    /// Opposite stances, or severities two or more levels apart, at the same place.
    pub contradictions: Vec<FindingGroup>,
    /// Severities one level apart at the same place.
    pub disagreements: Vec<FindingGroup>,
    /// The same severity from different agents at the same place (corroboration).
    pub agreements: Vec<FindingGroup>,
    /// Similar findings within a few lines of each other, merged with all their raisers.
    pub duplicates: Vec<FindingGroup>,
}

/// A Writer's count for one severity that disagrees with its own findings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CountMismatch {
    /// The severity.
    pub severity: Severity,
    /// What the agent's `counts` claimed.
    pub claimed: u64,
    /// How many findings of that severity it listed.
    pub actual: u64,
}
