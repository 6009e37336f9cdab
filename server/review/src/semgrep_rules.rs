//! Conclave's own Semgrep rules (`analyzers/semgrep/conclave/*.yaml`, tested by
//! `scripts/test-semgrep-rules.sh`), compiled into the binary so that a review of
//! any repository, on any machine, has them without the network: [`install`] writes
//! them once into a directory of the tool directory named by their hash, where the
//! `semgrep` lane's `{semgrep-rules}` points and its sandbox may read.

use sha2::{Digest, Sha256};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The rule files, by name, as compiled in.
pub const RULE_FILES: [(&str, &str); 4] = [
    ("go.yaml", include_str!("../../../analyzers/semgrep/conclave/go.yaml")),
    ("javascript.yaml", include_str!("../../../analyzers/semgrep/conclave/javascript.yaml")),
    ("python.yaml", include_str!("../../../analyzers/semgrep/conclave/python.yaml")),
    ("rust.yaml", include_str!("../../../analyzers/semgrep/conclave/rust.yaml")),
];

/// Why the rules could not be put in place.
#[derive(Debug, thiserror::Error)]
pub enum RulesError {
    /// Writing them failed.
    #[error("could not write Conclave's Semgrep rules to {dir}: {error}")]
    Write {
        /// Where.
        dir: String,
        /// Why.
        error: std::io::Error,
    },
    /// The directory named by their hash holds something else.
    #[error("{dir} holds other files than Conclave's Semgrep rules; remove it and Conclave writes them again")]
    Altered {
        /// Where.
        dir: String,
    },
}

/// The directory under `tools` that holds this binary's rules:
/// `semgrep-rules/<the first 16 hex digits of their SHA-256>`.
pub fn rules_dir(tools: &Path) -> PathBuf {
    let mut hasher = Sha256::new();
    for (name, text) in RULE_FILES {
        hasher.update(name.as_bytes());
        hasher.update([0]);
        hasher.update(text.as_bytes());
        hasher.update([0]);
    }
    let hex: String = hasher.finalize().iter().take(8).map(|b| format!("{b:02x}")).collect();
    tools.join("semgrep-rules").join(hex)
}

/// Puts the rules in [`rules_dir`] unless they are there already, and returns that
/// directory. A directory of another process that won the race is used once its
/// files are checked; one whose files differ is refused, never trusted. Blocking.
pub fn install(tools: &Path) -> Result<PathBuf, RulesError> {
    let dir = rules_dir(tools);
    let shown = dir.display().to_string();
    if dir.exists() {
        return holds_the_rules(&dir).then_some(dir).ok_or(RulesError::Altered { dir: shown });
    }
    let write = |error| RulesError::Write { dir: shown.clone(), error };
    let parent = dir.parent().unwrap_or(tools);
    std::fs::create_dir_all(parent).map_err(write)?;
    let staging = tempfile::Builder::new().prefix(".staging-").tempdir_in(parent).map_err(write)?;
    for (name, text) in RULE_FILES {
        std::fs::write(staging.path().join(name), text).map_err(write)?;
    }
    // A temporary directory is private; the rules are not, and a lane reads them.
    std::fs::set_permissions(staging.path(), std::fs::Permissions::from_mode(0o755)).map_err(write)?;
    // Renaming is atomic: a reader sees no directory or a whole one. Another process
    // may have renamed its own first; then its copy is checked like any other.
    if let Err(error) = std::fs::rename(staging.path(), &dir) {
        if !dir.exists() {
            return Err(write(error));
        }
        return holds_the_rules(&dir).then_some(dir).ok_or(RulesError::Altered { dir: shown });
    }
    Ok(dir)
}

/// Whether `dir` holds exactly the compiled-in rule files.
fn holds_the_rules(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else { return false };
    let count = entries.count();
    count == RULE_FILES.len()
        && RULE_FILES.iter().all(|(name, text)| std::fs::read(dir.join(name)).is_ok_and(|b| b == text.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rules_are_written_once_and_an_altered_copy_is_refused() {
        let tools = tempfile::tempdir().expect("a temporary directory");
        let dir = install(tools.path()).expect("written");
        assert_eq!(dir, rules_dir(tools.path()));
        for (name, text) in RULE_FILES {
            assert_eq!(std::fs::read_to_string(dir.join(name)).ok().as_deref(), Some(text), "{name}");
        }
        assert_eq!(install(tools.path()).expect("there already"), dir, "a second review uses the same directory");
        std::fs::write(dir.join("python.yaml"), "rules: []\n").expect("altered");
        let refused = install(tools.path()).expect_err("an altered copy");
        assert!(refused.to_string().ends_with("remove it and Conclave writes them again"), "{refused}");
        let leftovers: Vec<_> = std::fs::read_dir(dir.parent().expect("parent"))
            .expect("listed")
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(".staging-"))
            .collect();
        assert!(leftovers.is_empty(), "no staging directory is left behind");
    }
}
