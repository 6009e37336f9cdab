//! The change under review, read from git: the unified diff of `BASE...HEAD`, or of
//! the working tree (staged, unstaged and untracked files) against `HEAD`, parsed
//! into files with their changed line ranges and re-rendered with new-file line
//! numbers on every line, so reviewers can cite lines exactly.

use serde::Serialize;
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Why a change could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ChangeError {
    /// The path is not inside a git repository.
    #[error("{0} is not a git repository (or a directory inside one); give the repository to review")]
    NotARepository(String),
    /// The base is not a commit of the repository (or looks like an option).
    #[error("`{base}` is not a commit in this repository{}; give a branch, tag or commit as --base", .reason)]
    InvalidBase {
        /// The base as given.
        base: String,
        /// Why, with a leading separator, or empty.
        reason: String,
    },
    /// git failed.
    #[error("git {command} failed: {message}")]
    Git {
        /// The git subcommand.
        command: String,
        /// git's error output.
        message: String,
    },
}

/// One file of the change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChangedFile {
    /// Path relative to the repository root (the new path for renames).
    pub path: String,
    /// `added`, `modified`, `deleted` or `renamed`.
    pub status: String,
    /// Ranges of added or changed lines in the new file, inclusive.
    pub changed_lines: Vec<(u64, u64)>,
}

/// A change ready for review.
#[derive(Debug, Clone)]
pub struct Change {
    /// The repository root.
    pub root: PathBuf,
    /// The base ref, when reviewing `BASE...HEAD`.
    pub base: Option<String>,
    /// The files changed.
    pub files: Vec<ChangedFile>,
    /// The diff with new-file line numbers on every line.
    pub annotated: String,
}

impl Change {
    /// The run input of a review.
    pub fn run_input(&self) -> Value {
        json!({
            "repository": self.root.display().to_string(),
            "base": self.base,
            "files": self.files,
            "diff": self.annotated,
        })
    }

    /// Every path in the change.
    pub fn paths(&self) -> Vec<String> {
        self.files.iter().map(|f| f.path.clone()).collect()
    }
}

fn git(root: &Path, args: &[&str]) -> Result<String, ChangeError> {
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .env("GIT_PAGER", "cat")
        .env("LC_ALL", "C")
        .output()
        .map_err(|e| ChangeError::Git { command: args.join(" "), message: format!("cannot run git: {e}") })?;
    // `git diff --no-index` exits 1 when the files differ, which is the point.
    let differs = args.contains(&"--no-index") && out.status.code() == Some(1);
    if !out.status.success() && !differs {
        return Err(ChangeError::Git {
            command: args.join(" "),
            message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Reads the change in `repo`: `base...HEAD` when `base` is given, otherwise the
/// working tree against `HEAD`. `None` when there is nothing to review.
pub fn collect_change(repo: &Path, base: Option<&str>) -> Result<Option<Change>, ChangeError> {
    let root = git(repo, &["rev-parse", "--show-toplevel"])
        .map_err(|_| ChangeError::NotARepository(repo.display().to_string()))?
        .trim()
        .to_string();
    let root = PathBuf::from(root);
    let diff_args = ["diff", "--no-color", "--no-ext-diff", "--find-renames", "-U3"];
    let mut diff = match base {
        Some(base) => {
            let range = format!("{}...HEAD", verify_base(&root, base)?);
            git(&root, &[&diff_args[..], &[range.as_str(), "--"]].concat())?
        }
        None => {
            let has_head = git(&root, &["rev-parse", "--verify", "--quiet", "HEAD"]).is_ok();
            let against = if has_head { "HEAD" } else { "4b825dc642cb6eb9a060e54bf8d69288fbee4904" };
            git(&root, &[&diff_args[..], &[against, "--"]].concat())?
        }
    };
    if base.is_none() {
        for file in
            git(&root, &["ls-files", "--others", "--exclude-standard", "-z"])?.split('\0').filter(|f| !f.is_empty())
        {
            diff.push_str(&git(&root, &["diff", "--no-color", "--no-index", "--", "/dev/null", file])?);
        }
    }
    let files = parse_diff(&diff);
    if files.is_empty() {
        return Ok(None);
    }
    let annotated = files.iter().map(|f| f.annotated.as_str()).collect::<Vec<_>>().join("\n");
    Ok(Some(Change {
        root,
        base: base.map(str::to_string),
        files: files.into_iter().map(|f| f.file).collect(),
        annotated,
    }))
}

/// The commit `base` names, as a full hash. Anything that starts with `-` is refused
/// before git sees it, and git is told where its options end, so a base can never
/// become an option (`--output=...`).
fn verify_base(root: &Path, base: &str) -> Result<String, ChangeError> {
    let invalid = |reason: &str| ChangeError::InvalidBase { base: base.to_string(), reason: reason.to_string() };
    if base.starts_with('-') {
        return Err(invalid(" (it starts with `-`, like an option)"));
    }
    if base.is_empty() || base.contains(['\0', '\n']) {
        return Err(invalid(""));
    }
    let commit = format!("{base}^{{commit}}");
    let hash =
        git(root, &["rev-parse", "--verify", "--quiet", "--end-of-options", &commit]).map_err(|_| invalid(""))?;
    let hash = hash.trim();
    if hash.len() < 40 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(invalid(""));
    }
    Ok(hash.to_string())
}

/// A parsed file with its annotated text.
struct ParsedFile {
    file: ChangedFile,
    annotated: String,
}

/// Parses a unified diff (as `git diff` prints it).
fn parse_diff(diff: &str) -> Vec<ParsedFile> {
    let mut files: Vec<ParsedFile> = Vec::new();
    let mut new_line = 0u64;
    for line in diff.lines() {
        if let Some(rest) = line.strip_prefix("diff --git ") {
            let path = rest.rsplit_once(" b/").map_or(rest, |(_, b)| b).to_string();
            files.push(ParsedFile {
                file: ChangedFile { path, status: "modified".into(), changed_lines: Vec::new() },
                annotated: String::new(),
            });
            continue;
        }
        let Some(current) = files.last_mut() else { continue };
        let file = &mut current.file;
        if line.starts_with("new file mode") {
            file.status = "added".into();
        } else if line.starts_with("deleted file mode") {
            file.status = "deleted".into();
        } else if line.starts_with("rename from ") {
            file.status = "renamed".into();
        } else if let Some(to) = line.strip_prefix("rename to ") {
            file.path = to.to_string();
        } else if let Some(to) = line.strip_prefix("+++ ") {
            if to != "/dev/null" {
                file.path = to.strip_prefix("b/").unwrap_or(to).to_string();
            }
            let _ = writeln!(current.annotated, "--- {} ({})", current.file.path, current.file.status);
        } else if line.starts_with("--- ") || line.starts_with("index ") || line.starts_with("similarity index") {
        } else if line.starts_with("Binary files ") {
            let _ = writeln!(current.annotated, "--- {} ({}, binary)", current.file.path, current.file.status);
        } else if let Some(header) = line.strip_prefix("@@ ") {
            new_line = header
                .split_whitespace()
                .find_map(|p| p.strip_prefix('+'))
                .and_then(|p| p.split(',').next()?.parse().ok())
                .unwrap_or(1);
            let _ = writeln!(current.annotated, "@@ {header}");
        } else if let Some(text) = line.strip_prefix('+') {
            let _ = writeln!(current.annotated, "+{new_line:>5} | {text}");
            match file.changed_lines.last_mut() {
                Some((_, end)) if *end + 1 == new_line => *end = new_line,
                _ => file.changed_lines.push((new_line, new_line)),
            }
            new_line += 1;
        } else if let Some(text) = line.strip_prefix('-') {
            let _ = writeln!(current.annotated, "-      | {text}");
        } else if let Some(text) = line.strip_prefix(' ') {
            let _ = writeln!(current.annotated, " {new_line:>5} | {text}");
            new_line += 1;
        }
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIFF: &str = "diff --git a/src/upload.rs b/src/upload.rs
index 1111111..2222222 100644
--- a/src/upload.rs
+++ b/src/upload.rs
@@ -10,4 +10,6 @@ fn save(root: &Path, name: &str) {
     let dir = root.join(\"uploads\");
-    let path = dir.join(sanitize(name));
+    let path = dir.join(name);
+    // no checks
     std::fs::write(path, data)?;
     Ok(())
@@ -40,2 +42,3 @@ fn other() {
     a();
+    b();
     c();
diff --git a/README.md b/README.md
deleted file mode 100644
--- a/README.md
+++ /dev/null
@@ -1 +0,0 @@
-# old
diff --git a/new.rs b/new.rs
new file mode 100644
--- /dev/null
+++ b/new.rs
@@ -0,0 +1,2 @@
+fn new() {}
+
";

    #[test]
    fn diffs_are_parsed_into_files_ranges_and_numbered_lines() {
        let files = parse_diff(DIFF);
        type Summary<'a> = (&'a str, &'a str, &'a [(u64, u64)]);
        let summary: Vec<Summary> = files
            .iter()
            .map(|f| (f.file.path.as_str(), f.file.status.as_str(), f.file.changed_lines.as_slice()))
            .collect();
        assert_eq!(
            summary,
            vec![
                ("src/upload.rs", "modified", &[(11, 12), (43, 43)][..]),
                ("README.md", "deleted", &[][..]),
                ("new.rs", "added", &[(1, 2)][..]),
            ]
        );
        assert_eq!(
            files[0].annotated,
            "--- src/upload.rs (modified)\n@@ -10,4 +10,6 @@ fn save(root: &Path, name: &str) {\n    10 |     let dir = root.join(\"uploads\");\n-      |     let path = dir.join(sanitize(name));\n+   11 |     let path = dir.join(name);\n+   12 |     // no checks\n    13 |     std::fs::write(path, data)?;\n    14 |     Ok(())\n@@ -40,2 +42,3 @@ fn other() {\n    42 |     a();\n+   43 |     b();\n    44 |     c();\n"
        );
    }
}
