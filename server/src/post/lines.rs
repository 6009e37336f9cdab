//! The lines of a pull request a comment may sit on: those of the hunks the forge
//! shows (added and unchanged context lines of the new version), read from each
//! file's patch with `diffy`.

use std::collections::BTreeMap;

/// The commentable lines of a pull request, by file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Diff {
    files: BTreeMap<String, File>,
}

#[derive(Debug, Clone, PartialEq)]
struct File {
    old_path: String,
    /// New line → the old line when it is unchanged context, `None` when added.
    lines: BTreeMap<u64, Option<u64>>,
}

/// A patch the forge sent that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the forge's patch of `{path}` cannot be read ({message})")]
pub struct PatchError {
    /// The file.
    pub path: String,
    /// What was wrong.
    pub message: String,
}

impl Diff {
    /// The diff of a forge's list of files, reading each file's new path, old path
    /// and patch from the fields `keys` names (a file without a new path is skipped).
    pub fn from_files(files: &[serde_json::Value], keys: [&str; 3]) -> Result<Diff, PatchError> {
        let [path_key, old_key, patch_key] = keys;
        let text = |file: &serde_json::Value, key: &str| file.get(key).and_then(|v| v.as_str()).map(str::to_string);
        let mut diff = Diff::default();
        for file in files {
            let Some(path) = text(file, path_key) else { continue };
            let old = text(file, old_key).unwrap_or_else(|| path.clone());
            diff.add_patch(&path, &old, &text(file, patch_key).unwrap_or_default())?;
        }
        Ok(diff)
    }

    /// Adds a file's patch (hunks only, as the forges send them: from the first `@@`).
    /// An empty patch (binary, or too large for the forge to show) adds no lines.
    pub fn add_patch(&mut self, path: &str, old_path: &str, patch: &str) -> Result<(), PatchError> {
        let mut lines = BTreeMap::new();
        if let Some(start) = patch.find("@@") {
            let mut text = patch[start..].to_string();
            if !text.ends_with('\n') {
                text.push('\n');
            }
            let parsed = diffy::Patch::from_str(&text)
                .map_err(|e| PatchError { path: path.to_string(), message: e.to_string() })?;
            for hunk in parsed.hunks() {
                let (mut old, mut new) = (hunk.old_range().start() as u64, hunk.new_range().start() as u64);
                for line in hunk.lines() {
                    match line {
                        diffy::Line::Insert(_) => {
                            lines.insert(new, None);
                            new += 1;
                        }
                        diffy::Line::Delete(_) => old += 1,
                        diffy::Line::Context(_) => {
                            lines.insert(new, Some(old));
                            (old, new) = (old + 1, new + 1);
                        }
                    }
                }
            }
        }
        self.files.insert(path.to_string(), File { old_path: old_path.to_string(), lines });
        Ok(())
    }

    /// Where a comment on `line` of `path` goes: the file's old path and, for an
    /// unchanged line, its old line; `None` when the line is not in the diff.
    pub fn place(&self, path: &str, line: u64) -> Option<(&str, Option<u64>)> {
        let file = self.files.get(path)?;
        let old_line = file.lines.get(&line)?;
        Some((file.old_path.as_str(), *old_line))
    }
}
