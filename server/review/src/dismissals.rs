//! Dismissed findings: a reviewable file in the repository,
//! `.conclave/dismissed.json`, with one entry per fingerprint, its reason and its
//! author. Later reviews keep a dismissed finding out of gates and report it as
//! suppressed, with the reason.
//!
//! The file is configuration: a malformed one is an error that names the file, the
//! JSON path and what to do, and is never skipped. `conclave dismiss` writes it with
//! the entries sorted by fingerprint, so each dismissal is one readable change.
//!
//! Dismissals made by replying on a pull request are kept in the run store instead,
//! under the repository's key (recorded in the run input as [`REPOSITORY_KEY_INPUT`]);
//! a review applies them merged with the file's, the file winning on a conflict, and
//! `conclave dismissals export` writes them into the file ([`merge_into_file`]).

use conclave_core::StoredDismissal;
use conclave_shared::{Dismissal, Finding};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where the file lives, relative to the repository root.
pub const FILE: &str = ".conclave/dismissed.json";

/// The file's format version.
const VERSION: u32 = 1;

/// The key of a review run's input that records the repository's key, under which
/// the run store keeps the dismissals made on its pull requests.
pub const REPOSITORY_KEY_INPUT: &str = "repository_key";

/// The longest repository key taken, in bytes.
const MAX_REPOSITORY_KEY: usize = 255;

/// Checks a repository key as a caller gives it (`--repository-key`, an API
/// review's `repository_key`): GitHub's `owner/name` or GitLab's project path, so
/// 1 to 255 bytes without spaces or control characters. The error says what to give.
pub fn check_repository_key(key: &str) -> Result<(), String> {
    let what = "a repository key is GitHub's `owner/name` or GitLab's project path (such as `group/sub/project`)";
    if key.is_empty() {
        return Err(format!("the repository key is empty: {what}"));
    }
    if key.len() > MAX_REPOSITORY_KEY {
        return Err(format!("the repository key is {} bytes, more than {MAX_REPOSITORY_KEY}: {what}", key.len()));
    }
    if let Some(c) = key.chars().find(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("the repository key holds {}: {what}", c.escape_default()));
    }
    Ok(())
}

/// The dismissals of one repository, by fingerprint.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Dismissals {
    by_fingerprint: BTreeMap<String, Dismissal>,
}

/// Why the dismissals could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum DismissalError {
    /// The file is not valid.
    #[error(
        "{path}: {message}; fix the file (one entry per fingerprint: {{\"fingerprint\", \"reason\", \"author\"}}) or remove it"
    )]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong, and where in the file.
        message: String,
    },
    /// The file could not be read or written.
    #[error("{path}: {message}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        message: String,
    },
    /// A fingerprint given to `conclave dismiss` is not one.
    #[error("`{0}` is not a finding fingerprint: those are 32 lowercase hex digits, as in the JSON and SARIF reports")]
    NotAFingerprint(String),
    /// An empty reason.
    #[error("a dismissal needs a reason: say why the finding does not apply")]
    NoReason,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct DismissalsFile {
    version: u32,
    dismissed: Vec<Entry>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    fingerprint: String,
    reason: String,
    author: String,
}

impl Dismissals {
    /// The dismissals of the repository at `root`: none when it has no file.
    pub fn load(root: &Path) -> Result<Dismissals, DismissalError> {
        let path = root.join(FILE);
        let io = |message: String| DismissalError::Io { path: path.clone(), message };
        match std::fs::symlink_metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Dismissals::default()),
            Err(e) => return Err(io(e.to_string())),
            Ok(meta) if !meta.is_file() => return Err(io("must be a regular file, not a link or a directory".into())),
            Ok(_) => {}
        }
        let text = std::fs::read_to_string(&path).map_err(|e| io(e.to_string()))?;
        Dismissals::parse(&text).map_err(|message| DismissalError::Malformed { path, message })
    }

    /// Parses the file's text; the error says what is wrong and at which JSON path.
    pub fn parse(text: &str) -> Result<Dismissals, String> {
        let file: DismissalsFile = serde_json::from_str(text).map_err(|e| format!("not a dismissals file: {e}"))?;
        if file.version != VERSION {
            return Err(format!("/version is {}, and this Conclave reads version {VERSION}", file.version));
        }
        let mut by_fingerprint = BTreeMap::new();
        for (i, entry) in file.dismissed.into_iter().enumerate() {
            if !is_fingerprint(&entry.fingerprint) {
                return Err(format!(
                    "/dismissed/{i}/fingerprint `{}` is not 32 lowercase hex digits",
                    entry.fingerprint
                ));
            }
            if entry.reason.trim().is_empty() {
                return Err(format!("/dismissed/{i}/reason is empty: say why the finding does not apply"));
            }
            let dismissal = Dismissal { reason: entry.reason, author: entry.author };
            if by_fingerprint.insert(entry.fingerprint.clone(), dismissal).is_some() {
                return Err(format!("/dismissed/{i}/fingerprint `{}` is dismissed twice", entry.fingerprint));
            }
        }
        Ok(Dismissals { by_fingerprint })
    }

    /// The dismissals kept in the run store, by fingerprint; those that are not a
    /// fingerprint or have no reason are left out.
    pub fn from_stored(stored: &[StoredDismissal]) -> Dismissals {
        let by_fingerprint = stored
            .iter()
            .filter(|d| is_fingerprint(&d.fingerprint) && !d.reason.trim().is_empty())
            .map(|d| (d.fingerprint.clone(), Dismissal { reason: d.reason.clone(), author: d.author.clone() }))
            .collect();
        Dismissals { by_fingerprint }
    }

    /// These dismissals with `other`'s added where these have none of a fingerprint:
    /// on a conflict, these win (the repository's file over the run store's).
    pub fn over(mut self, other: &Dismissals) -> Dismissals {
        for (fingerprint, dismissal) in &other.by_fingerprint {
            self.by_fingerprint.entry(fingerprint.clone()).or_insert_with(|| dismissal.clone());
        }
        self
    }

    /// The dismissals here that `other` lacks, or has with another reason or author.
    pub fn not_in(&self, other: &Dismissals) -> Dismissals {
        let by_fingerprint = self
            .by_fingerprint
            .iter()
            .filter(|(fingerprint, dismissal)| other.by_fingerprint.get(*fingerprint) != Some(*dismissal))
            .map(|(f, d)| (f.clone(), d.clone()))
            .collect();
        Dismissals { by_fingerprint }
    }

    /// The dismissal of `fingerprint`, if any.
    pub fn get(&self, fingerprint: &str) -> Option<&Dismissal> {
        self.by_fingerprint.get(fingerprint)
    }

    /// How many fingerprints are dismissed.
    pub fn len(&self) -> usize {
        self.by_fingerprint.len()
    }

    /// Whether nothing is dismissed.
    pub fn is_empty(&self) -> bool {
        self.by_fingerprint.is_empty()
    }

    /// Marks every fingerprinted finding that is dismissed.
    pub fn apply(&self, findings: &mut [Finding]) {
        for finding in findings {
            let dismissal = finding.fingerprint.as_ref().and_then(|f| self.by_fingerprint.get(f));
            finding.dismissed = dismissal.cloned();
        }
    }

    /// The file's text for these dismissals.
    fn render(&self) -> String {
        let dismissed = self
            .by_fingerprint
            .iter()
            .map(|(f, d)| Entry { fingerprint: f.clone(), reason: d.reason.clone(), author: d.author.clone() })
            .collect();
        let mut text =
            serde_json::to_string_pretty(&DismissalsFile { version: VERSION, dismissed }).unwrap_or_default();
        text.push('\n');
        text
    }
}

/// Records that `fingerprint` is dismissed for `reason` by `author` in the file of the
/// repository at `root` (created when missing; an existing entry is replaced).
/// Returns whether an entry was replaced.
pub fn dismiss(root: &Path, fingerprint: &str, reason: &str, author: &str) -> Result<bool, DismissalError> {
    if !is_fingerprint(fingerprint) {
        return Err(DismissalError::NotAFingerprint(fingerprint.to_string()));
    }
    if reason.trim().is_empty() {
        return Err(DismissalError::NoReason);
    }
    let mut dismissals = Dismissals::load(root)?;
    let dismissal = Dismissal { reason: reason.trim().to_string(), author: author.to_string() };
    let replaced = dismissals.by_fingerprint.insert(fingerprint.to_string(), dismissal).is_some();
    let path = root.join(FILE);
    let io = |e: std::io::Error| DismissalError::Io { path: path.clone(), message: e.to_string() };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    std::fs::write(&path, dismissals.render()).map_err(io)?;
    Ok(replaced)
}

/// Adds the `stored` dismissals to the file of the repository at `root` (created
/// when missing), one entry per fingerprint: an entry already in the file stays as
/// it is. Returns how many were added.
pub fn merge_into_file(root: &Path, stored: &[StoredDismissal]) -> Result<usize, DismissalError> {
    let file = Dismissals::load(root)?;
    let before = file.len();
    let merged = file.over(&Dismissals::from_stored(stored));
    let added = merged.len() - before;
    let path = root.join(FILE);
    let io = |e: std::io::Error| DismissalError::Io { path: path.clone(), message: e.to_string() };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    std::fs::write(&path, merged.render()).map_err(io)?;
    Ok(added)
}

/// Whether `text` is a finding's fingerprint: 32 lowercase hex digits.
pub fn is_fingerprint(text: &str) -> bool {
    text.len() == 32 && text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    const FP: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn repository_keys_are_forge_paths() {
        for good in ["acme/uploads", "group/sub/project", "a"] {
            assert_eq!(check_repository_key(good), Ok(()), "{good}");
        }
        let said = |key: &str| check_repository_key(key).expect_err(key);
        assert!(said("").starts_with("the repository key is empty: a repository key is GitHub's"));
        assert!(said("acme/up loads").starts_with("the repository key holds  :"), "{}", said("acme/up loads"));
        assert!(said("acme/\nx").contains("\\n"), "{}", said("acme/\nx"));
        assert!(said(&"a".repeat(256)).starts_with("the repository key is 256 bytes, more than 255"));
    }

    #[test]
    fn dismissing_writes_a_sorted_readable_file_and_replaces_an_entry() {
        let dir = tempfile::tempdir().expect("tempdir");
        let other = "ffffffffffffffffffffffffffffffff";
        assert!(!dismiss(dir.path(), other, "generated code", "Ann <ann@example.com>").expect("dismiss"));
        assert!(!dismiss(dir.path(), FP, "checked by hand", "Bo").expect("dismiss"));
        assert!(dismiss(dir.path(), FP, " the caller validates the name ", "Bo").expect("dismiss"));
        let text = std::fs::read_to_string(dir.path().join(FILE)).expect("written");
        let value: serde_json::Value = serde_json::from_str(&text).expect("json");
        assert_eq!(
            value,
            serde_json::json!({"version": 1, "dismissed": [
                {"fingerprint": FP, "reason": "the caller validates the name", "author": "Bo"},
                {"fingerprint": other, "reason": "generated code", "author": "Ann <ann@example.com>"}
            ]})
        );
        let mut findings = vec![
            Finding { fingerprint: Some(FP.into()), ..Finding::default() },
            Finding { fingerprint: Some("1".repeat(32)), ..Finding::default() },
        ];
        Dismissals::load(dir.path()).expect("load").apply(&mut findings);
        assert_eq!(findings[0].dismissed.as_ref().map(|d| d.reason.as_str()), Some("the caller validates the name"));
        assert_eq!(findings[1].dismissed, None);
    }

    #[test]
    fn stored_dismissals_merge_under_the_file_and_export_into_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let other = "ffffffffffffffffffffffffffffffff";
        dismiss(dir.path(), FP, "the file's reason", "Ann").expect("dismiss");
        let stored = |fingerprint: &str, reason: &str| StoredDismissal {
            repository: "acme/app".into(),
            fingerprint: fingerprint.into(),
            reason: reason.into(),
            author: "@bo".into(),
            created_at_ms: 1,
            source: "github acme/app#7 comment 1".into(),
        };
        let stored = [stored(FP, "the store's reason"), stored(other, "generated code"), stored("x", "not one")];
        let merged = Dismissals::load(dir.path()).expect("load").over(&Dismissals::from_stored(&stored));
        let mut findings: Vec<Finding> =
            [FP, other].iter().map(|f| Finding { fingerprint: Some(f.to_string()), ..Finding::default() }).collect();
        merged.apply(&mut findings);
        let reasons: Vec<Option<&str>> =
            findings.iter().map(|f| f.dismissed.as_ref().map(|d| d.reason.as_str())).collect();
        assert_eq!(reasons, [Some("the file's reason"), Some("generated code")], "the file wins on a conflict");

        assert_eq!(merge_into_file(dir.path(), &stored).expect("export"), 1, "only the new fingerprint is added");
        assert_eq!(merge_into_file(dir.path(), &stored).expect("export"), 0, "exporting again adds nothing");
        let text = std::fs::read_to_string(dir.path().join(FILE)).expect("written");
        let value: serde_json::Value = serde_json::from_str(&text).expect("json");
        assert_eq!(
            value,
            serde_json::json!({"version": 1, "dismissed": [
                {"fingerprint": FP, "reason": "the file's reason", "author": "Ann"},
                {"fingerprint": other, "reason": "generated code", "author": "@bo"}
            ]})
        );
    }

    #[test]
    fn bad_input_is_refused_with_where_and_why() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(matches!(dismiss(dir.path(), "abc", "r", "a"), Err(DismissalError::NotAFingerprint(_))));
        assert!(matches!(dismiss(dir.path(), FP, "  ", "a"), Err(DismissalError::NoReason)));
        let cases = [
            ("{", "not a dismissals file"),
            (r#"{"version": 2, "dismissed": []}"#, "/version is 2"),
            (
                r#"{"version": 1, "dismissed": [{"fingerprint": "x", "reason": "r", "author": "a"}]}"#,
                "/dismissed/0/fingerprint `x`",
            ),
            (
                r#"{"version": 1, "dismissed": [{"fingerprint": "0123456789abcdef0123456789abcdef", "reason": "", "author": "a"}]}"#,
                "/dismissed/0/reason is empty",
            ),
            (r#"{"version": 1, "dismissed": [], "extra": true}"#, "unknown field `extra`"),
        ];
        for (text, expected) in cases {
            let error = Dismissals::parse(text).expect_err(text);
            assert!(error.contains(expected), "{text}: {error}");
        }
        let twice = format!(
            r#"{{"version": 1, "dismissed": [{{"fingerprint": "{FP}", "reason": "r", "author": "a"}}, {{"fingerprint": "{FP}", "reason": "s", "author": "b"}}]}}"#
        );
        assert!(Dismissals::parse(&twice).expect_err("twice").contains("/dismissed/1/fingerprint"));
        std::fs::create_dir_all(dir.path().join(".conclave")).expect("mkdir");
        std::fs::write(dir.path().join(FILE), "{").expect("write");
        let error = Dismissals::load(dir.path()).expect_err("malformed").to_string();
        assert!(error.contains("dismissed.json: not a dismissals file") && error.contains("or remove it"), "{error}");
        assert!(
            matches!(dismiss(dir.path(), FP, "r", "a"), Err(DismissalError::Malformed { .. })),
            "never overwritten"
        );
    }
}
