//! How an analyzer lane grades what its tool reports: the `severity` map of an
//! `analyzer` block, from the tool's rule ids (exactly, or by prefix) and levels to
//! Conclave's severities, and the map a lane gets when it gives none.
//!
//! A lint is not a blocker unless the conclave says so: Ruff writes every result as a
//! SARIF `error`, so a lane that runs `ruff` without a map of its own is graded by
//! [`SeverityMap::ruff`], never by the SARIF reader's `error` → `blocker`.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::review::Severity;

/// The tool's rule ids and levels mapped to Conclave's severities. A finding takes,
/// in this order: the entry of the longest key in `rules` that matches its rule id,
/// the entry of its level in `levels`, the severity the tool itself stated (a SARIF
/// result's `severity` property), `default`, and last the reader's own table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct SeverityMap {
    /// By rule id: a key matches a rule id equal to it or starting with it, except
    /// that a key ending in a letter does not match where the id goes on with a
    /// letter (`S` matches `S608` but not `SIM118`; `E9` matches `E902`). The
    /// longest matching key wins.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub rules: BTreeMap<String, Severity>,
    /// By the level the tool gave (SARIF: `error`, `warning`, `note`, `none`;
    /// ShellCheck: `error`, `warning`, `info`, `style`; Cargo: `error`, `warning`,
    /// `note`, `help`, `failure-note`; diagnostics: `error`, `warning`, `note`,
    /// `other`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub levels: BTreeMap<String, Severity>,
    /// The severity of a finding that neither `rules` nor `levels` names and whose
    /// tool stated none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "json-schema", schemars(with = "Severity"))]
    pub default: Option<Severity>,
}

/// Ruff's rule prefixes for style and import order, graded `nit` by
/// [`SeverityMap::ruff`].
const RUFF_STYLE_PREFIXES: [&str; 11] = ["ANN", "COM", "CPY", "D", "ERA", "I", "ISC", "N", "Q", "TD", "UP"];

impl SeverityMap {
    /// The map of a lane that runs Ruff and gives none: pyflakes (`F`), I/O errors
    /// (`E9`) and syntax errors (`invalid-syntax`) major, the security rules (`S`,
    /// flake8-bandit) major but for the noisiest (`assert` in code, `S101`, nit; a
    /// request without a timeout, pseudo-random numbers, any subprocess call and a
    /// program named without its path, `S113`, `S311`, `S603`, `S607`, minor), other
    /// pycodestyle rules (`E`, `W`) minor, style and import order nit, anything else
    /// minor. The built-in conclaves' `ruff` lanes write it out in full.
    pub fn ruff() -> SeverityMap {
        let mut rules: BTreeMap<String, Severity> = [
            ("E", Severity::Minor),
            ("E9", Severity::Major),
            ("F", Severity::Major),
            ("invalid-syntax", Severity::Major),
            ("S", Severity::Major),
            ("S101", Severity::Nit),
            ("S113", Severity::Minor),
            ("S311", Severity::Minor),
            ("S603", Severity::Minor),
            ("S607", Severity::Minor),
            ("W", Severity::Minor),
        ]
        .into_iter()
        .map(|(key, severity)| (key.to_string(), severity))
        .collect();
        rules.extend(RUFF_STYLE_PREFIXES.map(|key| (key.to_string(), Severity::Nit)));
        SeverityMap { rules, levels: BTreeMap::new(), default: Some(Severity::Minor) }
    }

    /// The map a lane running `program` gets when its `analyzer` block has none:
    /// [`SeverityMap::ruff`] for Ruff (a path whose file name is `ruff` too), else
    /// none (the reader's own table grades).
    pub fn builtin_for(program: &str) -> Option<SeverityMap> {
        let name = program.rsplit('/').next().unwrap_or(program);
        (name == "ruff").then(SeverityMap::ruff)
    }

    /// What the map says of a finding with rule id `rule` and level `level`, before
    /// the tool's own statement: the longest matching rule key's entry, else the
    /// level's.
    pub fn entry(&self, rule: Option<&str>, level: &str) -> Option<Severity> {
        let by_rule = rule.and_then(|rule| {
            self.rules
                .iter()
                .filter(|(key, _)| rule_matches(key, rule))
                .max_by_key(|(key, _)| key.len())
                .map(|(_, s)| *s)
        });
        by_rule.or_else(|| self.levels.get(level).copied())
    }

    /// The severity of a finding: the map's entry, else what the tool `stated`, else
    /// `default`, else `fallback` (the reader's table).
    pub fn grade(&self, rule: Option<&str>, level: &str, stated: Option<Severity>, fallback: Severity) -> Severity {
        self.entry(rule, level).or(stated).or(self.default).unwrap_or(fallback)
    }
}

/// Whether rules key `key` matches rule id `rule`: equal, or a prefix that does not
/// end inside a run of letters (`S` is Ruff's bandit set, `SIM` another linter).
pub fn rule_matches(key: &str, rule: &str) -> bool {
    let Some(rest) = rule.strip_prefix(key) else { return false };
    if key.is_empty() {
        return false;
    }
    let key_ends_in_letter = key.chars().next_back().is_some_and(|c| c.is_ascii_alphabetic());
    let rest_starts_with_letter = rest.chars().next().is_some_and(|c| c.is_ascii_alphabetic());
    !(key_ends_in_letter && rest_starts_with_letter)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_never_ends_inside_a_run_of_letters() {
        assert!(rule_matches("S", "S608"));
        assert!(!rule_matches("S", "SIM118"), "SIM is flake8-simplify, not bandit");
        assert!(rule_matches("SIM", "SIM118"));
        assert!(rule_matches("E9", "E902"));
        assert!(!rule_matches("E9", "E501"));
        assert!(rule_matches("F401", "F401"));
        assert!(rule_matches("conclave.python", "conclave.python.sql-built-from-strings"));
        assert!(!rule_matches("conclave.py", "conclave.python.sql-built-from-strings"));
        assert!(rule_matches("clippy", "clippy::eq_op"));
        assert!(!rule_matches("", "F401"), "an empty key matches nothing");
    }

    #[test]
    fn ruffs_map_grades_lints_below_blocker_and_the_longest_prefix_wins() {
        let ruff = SeverityMap::ruff();
        let grade = |rule: &str| ruff.grade(Some(rule), "error", None, Severity::Blocker);
        assert_eq!(grade("F401"), Severity::Major, "pyflakes");
        assert_eq!(grade("E902"), Severity::Major, "E9 beats E");
        assert_eq!(grade("E501"), Severity::Minor);
        assert_eq!(grade("W291"), Severity::Minor);
        assert_eq!(grade("I001"), Severity::Nit, "import order");
        assert_eq!(grade("UP035"), Severity::Nit);
        assert_eq!(grade("S602"), Severity::Major, "bandit");
        assert_eq!(grade("S101"), Severity::Nit, "assert, in every test file");
        assert_eq!(grade("SIM118"), Severity::Minor, "not bandit: the default");
        assert_eq!(grade("invalid-syntax"), Severity::Major, "a file Python cannot read");
        assert_eq!(ruff.grade(None, "error", None, Severity::Blocker), Severity::Minor, "no rule id: the default");
        assert!(SeverityMap::builtin_for("/home/u/.cache/conclave/bin/ruff").is_some());
        assert_eq!(SeverityMap::builtin_for("semgrep"), None);
    }

    #[test]
    fn entries_beat_the_tools_statement_which_beats_the_default() {
        let map = SeverityMap {
            rules: [("X1".to_string(), Severity::Nit)].into(),
            levels: [("warning".to_string(), Severity::Minor)].into(),
            default: Some(Severity::Major),
        };
        assert_eq!(map.grade(Some("X100"), "error", Some(Severity::Blocker), Severity::Blocker), Severity::Nit);
        assert_eq!(map.grade(Some("Y"), "warning", Some(Severity::Blocker), Severity::Blocker), Severity::Minor);
        assert_eq!(map.grade(Some("Y"), "error", Some(Severity::Blocker), Severity::Nit), Severity::Blocker);
        assert_eq!(map.grade(Some("Y"), "error", None, Severity::Nit), Severity::Major);
        assert_eq!(SeverityMap::default().grade(None, "error", None, Severity::Nit), Severity::Nit);
    }
}
