//! Where a review's configuration was read from, as its run input records it
//! ([`CONFIGURATION_INPUT`]): the side, the commit, and the configuration files the
//! change edits.

use conclave_shared::Trust;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The run input's key recording where the configuration was read from.
/// A record of the run (its name begins with the engine's `RECORD_PREFIX`): no
/// agent sees it, so a review's prompts do not change with where its configuration
/// came from.
pub const CONFIGURATION_INPUT: &str = "_configuration";

/// Where a review's configuration was read from, and which configuration files the
/// change edits; recorded in the run input for the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigurationSource {
    /// `base`: the base side's files were used and the change's edits not applied;
    /// `head`: the caller trusted the change, which configured its own review.
    pub read_from: Trust,
    /// The commit the configuration was read from (the merge base), for `base`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// The configuration files the change adds, edits or deletes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub edited: Vec<EditedFile>,
}

/// A configuration file the change adds, edits or deletes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EditedFile {
    /// Its path in the repository.
    pub path: String,
    /// What it configures.
    pub kind: ConfigKind,
    /// `added`, `modified`, `deleted` or `renamed`.
    pub status: String,
    /// For a conclave file: the command nodes the change adds or changes (they would
    /// run programs in later reviews).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<String>,
    /// The first changed line in the new version (0 when the file is deleted).
    #[serde(default)]
    pub line: u64,
}

/// What a configuration file configures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConfigKind {
    /// A conclave file: the review's graph, prompts and commands.
    Conclave,
    /// An output schema.
    Schema,
    /// A rules file for the reviewers.
    Rules,
    /// The repository's dismissals.
    Dismissals,
    /// Anything else under `.conclave/`.
    Settings,
}

impl ConfigKind {
    /// In words, for reports.
    pub fn describe(self) -> &'static str {
        match self {
            ConfigKind::Conclave => "a review conclave",
            ConfigKind::Schema => "an output schema",
            ConfigKind::Rules => "a rules file for the reviewers",
            ConfigKind::Dismissals => "the repository's dismissals",
            ConfigKind::Settings => "Conclave's settings",
        }
    }
}

impl ConfigurationSource {
    /// The source a run input records; `None` for a review of the working tree.
    pub fn of_input(input: &Value) -> Option<ConfigurationSource> {
        serde_json::from_value(input.get(CONFIGURATION_INPUT)?.clone()).ok()
    }

    /// Whether the base side configured the review.
    pub fn from_base(&self) -> bool {
        self.read_from == Trust::Base
    }

    /// Whether a report has something to say about it: the head configured the
    /// review, or the change edits its configuration.
    pub fn notable(&self) -> bool {
        !self.from_base() || !self.edited.is_empty()
    }

    /// One paragraph for a posted summary: which configuration files the change
    /// edits and which side's were used; `None` when there is nothing to say (the
    /// base configured the review and the change edits none of it).
    pub fn summary(&self) -> Option<String> {
        let files: Vec<String> = self.edited.iter().map(|e| crate::inert::code_span(&e.path)).collect();
        match (self.from_base(), files.is_empty()) {
            (true, true) => None,
            (true, false) => Some(format!(
                "This change edits the review's configuration ({}): the base's version of each was used, and each \
                 edit is raised for a person to look at.",
                files.join(", ")
            )),
            (false, true) => Some("The change configured its own review: its head was trusted.".to_string()),
            (false, false) => Some(format!(
                "The change configured its own review: its head was trusted, and its edits to the review's \
                 configuration ({}) were applied.",
                files.join(", ")
            )),
        }
    }
}

/// The first 12 characters of a commit hash.
pub fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}
