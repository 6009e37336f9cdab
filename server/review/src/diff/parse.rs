//! Reading `git diff --patch-with-raw -z` output: the raw records give each file's
//! exact path and status (NUL-separated, so spaces, tabs, quotes and non-ASCII come
//! through untouched); the patch that follows is split into one section per file and
//! each section's hunks are parsed by `diffy`, which counts hunk lines, so a body
//! line that starts with `--- ` or `+++ ` stays a body line.

use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// One file of the change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangedFile {
    /// Path relative to the repository root (the new path for renames).
    pub path: String,
    /// `added`, `modified`, `deleted` or `renamed`.
    pub status: String,
    /// Ranges of added or changed lines in the new file, inclusive.
    pub changed_lines: Vec<(u64, u64)>,
}

/// One file of a parsed diff, with its text re-rendered with new-file line numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedFile {
    /// Path, status and changed ranges.
    pub file: ChangedFile,
    /// The file's part of the diff, every line numbered in the new file.
    pub annotated: String,
}

/// Why git's output could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("git printed a diff Conclave cannot read ({0}); please report it with the change that caused it")]
pub struct ParseError(pub String);

/// One raw record: status letter and the path the change leaves.
struct Raw {
    status: char,
    path: String,
}

/// Parses `git diff --patch-with-raw -z` output.
pub fn parse_patch_with_raw(output: &[u8]) -> Result<Vec<ParsedFile>, ParseError> {
    let (records, patch) = split_raw(output)?;
    let sections = sections(&String::from_utf8_lossy(patch));
    let mut sections = sections.into_iter();
    let mut files = Vec::with_capacity(records.len());
    for record in records {
        let mut section = sections.next().ok_or_else(|| ParseError("fewer file diffs than changed files".into()))?;
        if record.status == 'T' {
            // A type change (file to symlink) is printed as a deletion and an addition.
            section = sections.next().ok_or_else(|| ParseError("a type change without its addition".into()))?;
        }
        files.push(parse_file(record.path, status_name(record.status), &section)?);
    }
    Ok(files)
}

/// Parses the patch of one file whose path and status are known (an untracked file
/// diffed against `/dev/null`).
pub fn parse_single(path: String, status: &str, patch: &[u8]) -> Result<ParsedFile, ParseError> {
    let text = String::from_utf8_lossy(patch);
    let section = sections(&text).into_iter().next().unwrap_or_default();
    parse_file(path, status, &section)
}

/// The raw records, and the patch after them.
fn split_raw(output: &[u8]) -> Result<(Vec<Raw>, &[u8]), ParseError> {
    let mut records = Vec::new();
    let mut rest = output;
    while rest.first() == Some(&b':') {
        let (meta, after) = take_field(rest)?;
        let status = meta.split(' ').nth(4).and_then(|s| s.chars().next()).unwrap_or('M');
        let (first, after) = take_field(after)?;
        let (path, after) = if matches!(status, 'R' | 'C') { take_field(after)? } else { (first, after) };
        records.push(Raw { status, path });
        rest = after;
    }
    // The raw part ends with an empty field before the patch.
    Ok((records, rest.strip_prefix(b"\0").unwrap_or(rest)))
}

fn take_field(input: &[u8]) -> Result<(String, &[u8]), ParseError> {
    let end = input.iter().position(|&b| b == 0).ok_or_else(|| ParseError("a raw record is unterminated".into()))?;
    Ok((String::from_utf8_lossy(&input[..end]).into_owned(), &input[end + 1..]))
}

fn status_name(status: char) -> &'static str {
    match status {
        'A' => "added",
        'D' => "deleted",
        'R' => "renamed",
        'C' => "copied",
        _ => "modified",
    }
}

/// The patch split at each `diff --git ` header. Body lines always start with ` `,
/// `+`, `-` or `\`, so a line starting with `diff ` can only be a header.
fn sections(patch: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in patch.split_inclusive('\n') {
        if line.starts_with("diff --git ") || line.starts_with("diff --cc ") || out.is_empty() {
            out.push(String::new());
        }
        if let Some(current) = out.last_mut() {
            current.push_str(line);
        }
    }
    out.retain(|s| !s.trim().is_empty());
    out
}

fn parse_file(path: String, status: &str, section: &str) -> Result<ParsedFile, ParseError> {
    let mut annotated = String::new();
    let binary = section.lines().any(|l| l.starts_with("Binary files ") || l == "GIT binary patch");
    let _ = writeln!(annotated, "--- {path} ({status}{})", if binary { ", binary" } else { "" });
    let mut file = ChangedFile { path, status: status.to_string(), changed_lines: Vec::new() };
    let Some(start) = hunks_start(section) else { return Ok(ParsedFile { file, annotated }) };
    let patch = diffy::Patch::from_str(&section[start..])
        .map_err(|e| ParseError(format!("the diff of `{}`: {e}", file.path)))?;
    for hunk in patch.hunks() {
        annotate_hunk(hunk, &mut file, &mut annotated);
    }
    Ok(ParsedFile { file, annotated })
}

/// Where the first hunk header starts; the file headers before it are not needed
/// (the path comes from the raw record).
fn hunks_start(section: &str) -> Option<usize> {
    let mut offset = 0;
    for line in section.split_inclusive('\n') {
        if line.starts_with("@@ ") {
            return Some(offset);
        }
        offset += line.len();
    }
    None
}

fn annotate_hunk(hunk: &diffy::Hunk<'_, str>, file: &mut ChangedFile, out: &mut String) {
    let (old, new) = (hunk.old_range(), hunk.new_range());
    let context = hunk.function_context().map(|c| format!(" {}", c.trim_end())).unwrap_or_default();
    let _ = writeln!(out, "@@ -{},{} +{},{} @@{context}", old.start(), old.len(), new.start(), new.len());
    let mut new_line = new.start() as u64;
    for line in hunk.lines() {
        match line {
            diffy::Line::Insert(text) => {
                let _ = writeln!(out, "+{new_line:>5} | {}", text.trim_end_matches(['\n', '\r']));
                match file.changed_lines.last_mut() {
                    Some((_, end)) if *end + 1 == new_line => *end = new_line,
                    _ => file.changed_lines.push((new_line, new_line)),
                }
                new_line += 1;
            }
            diffy::Line::Delete(text) => {
                let _ = writeln!(out, "-      | {}", text.trim_end_matches(['\n', '\r']));
            }
            diffy::Line::Context(text) => {
                let _ = writeln!(out, " {new_line:>5} | {}", text.trim_end_matches(['\n', '\r']));
                new_line += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A raw part and patch as `git diff --patch-with-raw -z` prints them.
    fn output(raw: &[(&str, &[&str])], patch: &str) -> Vec<u8> {
        let mut out = Vec::new();
        for (meta, paths) in raw {
            out.extend_from_slice(format!(":100644 100644 1111111 2222222 {meta}\0").as_bytes());
            for path in *paths {
                out.extend_from_slice(path.as_bytes());
                out.push(0);
            }
        }
        out.push(0);
        out.extend_from_slice(patch.as_bytes());
        out
    }

    const PATCH: &str = "diff --git a/src/upload.rs b/src/upload.rs
index 1111111..2222222 100644
--- a/src/upload.rs
+++ b/src/upload.rs
@@ -10,4 +10,5 @@ fn save(root: &Path, name: &str) {
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
diff --git a/docs/User Guide.md b/docs/User Guide.md
new file mode 100644
--- /dev/null
+++ b/docs/User Guide.md\t
@@ -0,0 +1,3 @@
+--- not a header
++++ nor this
+fin
";

    #[test]
    fn files_ranges_and_numbered_lines_come_out_exact() {
        let raw: &[(&str, &[&str])] =
            &[("M", &["src/upload.rs"]), ("D", &["README.md"]), ("A", &["docs/User Guide.md"])];
        let files = parse_patch_with_raw(&output(raw, PATCH)).expect("parses");
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
                ("docs/User Guide.md", "added", &[(1, 3)][..]),
            ]
        );
        assert_eq!(
            files[0].annotated,
            "--- src/upload.rs (modified)\n@@ -10,4 +10,5 @@ fn save(root: &Path, name: &str) {\n    10 |     let dir = root.join(\"uploads\");\n-      |     let path = dir.join(sanitize(name));\n+   11 |     let path = dir.join(name);\n+   12 |     // no checks\n    13 |     std::fs::write(path, data)?;\n    14 |     Ok(())\n@@ -40,2 +42,3 @@ fn other() {\n    42 |     a();\n+   43 |     b();\n    44 |     c();\n"
        );
        assert!(
            files[2].annotated.contains("+    1 | --- not a header\n+    2 | +++ nor this\n"),
            "{}",
            files[2].annotated
        );
    }

    #[test]
    fn renames_take_the_new_path_and_quoted_names_are_never_parsed() {
        let patch = "diff --git \"a/\\303\\274.txt\" \"b/\\303\\274n.txt\"\nsimilarity index 90%\nrename from \"\\303\\274.txt\"\nrename to \"\\303\\274n.txt\"\n";
        let files = parse_patch_with_raw(&output(&[("R090", &["ü.txt", "ün.txt"])], patch)).expect("parses");
        assert_eq!(files[0].file.path, "ün.txt");
        assert_eq!(files[0].file.status, "renamed");
        assert_eq!(files[0].annotated, "--- ün.txt (renamed)\n");
    }

    #[test]
    fn a_hunk_that_does_not_add_up_is_an_error_not_a_guess() {
        let patch = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-a\n";
        let err = parse_patch_with_raw(&output(&[("M", &["x"])], patch)).expect_err("short hunk");
        assert!(err.to_string().contains("the diff of `x`"), "{err}");
    }
}
