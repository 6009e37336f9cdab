//! The built-in read-only tools over a repository: `read_file`, `list_files` and
//! `grep`, confined by a [`Sandbox`] and capped per call so one answer cannot flood
//! the model's context.

use async_trait::async_trait;
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::path::Path;

use super::sandbox::Sandbox;
use conclave_core::{ToolCall, ToolOutcome, ToolRunner, ToolSpec};

/// Most lines `read_file` returns in one call.
pub const MAX_READ_LINES: usize = 800;
/// Most bytes `read_file` returns in one call.
pub const MAX_READ_BYTES: usize = 64 * 1024;
/// Most paths `list_files` returns.
pub const MAX_LISTED: usize = 500;
/// Most matches `grep` returns.
pub const MAX_MATCHES: usize = 200;
/// Longest line `grep` shows.
const MAX_MATCH_LINE: usize = 240;
/// Files larger than this are skipped by `grep`.
const MAX_GREP_FILE: u64 = 2 * 1024 * 1024;

/// The repository tools.
#[derive(Debug, Clone)]
pub struct RepoTools {
    sandbox: Sandbox,
}

impl RepoTools {
    /// Tools over the repository at `root`.
    pub fn new(root: &Path) -> std::io::Result<RepoTools> {
        Ok(RepoTools { sandbox: Sandbox::new(root)? })
    }

    fn read_file(&self, args: &Value) -> Result<String, String> {
        let requested = args.get("path").and_then(Value::as_str).ok_or("read_file needs `path`")?;
        let path = self.sandbox.resolve(requested).map_err(|e| e.0)?;
        if path.is_dir() {
            return Err(format!("`{requested}` is a directory; use list_files to see what it holds"));
        }
        let bytes = std::fs::read(&path).map_err(|e| format!("cannot read `{requested}`: {e}"))?;
        if bytes.iter().take(8000).any(|&b| b == 0) {
            return Err(format!("`{requested}` is a binary file"));
        }
        let text = String::from_utf8_lossy(&bytes);
        let lines: Vec<&str> = text.lines().collect();
        let start = args.get("start_line").and_then(Value::as_u64).unwrap_or(1).max(1) as usize;
        let end = args.get("end_line").and_then(Value::as_u64).map_or(lines.len(), |e| e as usize).min(lines.len());
        if start > lines.len().max(1) {
            return Err(format!("`{requested}` has {} lines; start_line {start} is past the end", lines.len()));
        }
        let mut out = String::new();
        for (shown, (n, line)) in lines.iter().enumerate().take(end).skip(start - 1).enumerate() {
            if shown == MAX_READ_LINES || out.len() + line.len() > MAX_READ_BYTES {
                let _ = write!(
                    out,
                    "[truncated at line {n}: the file has {} lines; ask for a range with start_line and end_line]",
                    lines.len()
                );
                return Ok(out);
            }
            let _ = writeln!(out, "{:>5} | {line}", n + 1);
        }
        Ok(out)
    }

    fn list_files(&self, args: &Value) -> Result<String, String> {
        let pattern = args.get("glob").and_then(Value::as_str).filter(|g| !g.is_empty()).unwrap_or("**/*");
        let glob =
            globset::Glob::new(pattern).map_err(|e| format!("`{pattern}` is not a valid glob: {e}"))?.compile_matcher();
        let mut found = Vec::new();
        for entry in self.walk().flatten() {
            if entry.file_type().is_some_and(|t| t.is_file()) {
                let relative = self.sandbox.relative(entry.path());
                if glob.is_match(&relative) {
                    found.push(relative);
                }
            }
        }
        found.sort();
        let total = found.len();
        let mut out = found.into_iter().take(MAX_LISTED).collect::<Vec<_>>().join("\n");
        if total > MAX_LISTED {
            let _ = write!(out, "\n[{} more not shown; narrow the glob]", total - MAX_LISTED);
        }
        if total == 0 {
            out = format!("no files match `{pattern}`");
        }
        Ok(out)
    }

    fn grep(&self, args: &Value) -> Result<String, String> {
        let pattern = args.get("pattern").and_then(Value::as_str).ok_or("grep needs `pattern`")?;
        let regex = regex::RegexBuilder::new(pattern)
            .size_limit(1 << 20)
            .build()
            .map_err(|e| format!("`{pattern}` is not a valid regex: {e}"))?;
        let glob = match args.get("glob").and_then(Value::as_str).filter(|g| !g.is_empty()) {
            Some(g) => {
                Some(globset::Glob::new(g).map_err(|e| format!("`{g}` is not a valid glob: {e}"))?.compile_matcher())
            }
            None => None,
        };
        let mut out = String::new();
        let mut matches = 0;
        for entry in self.walk().flatten() {
            if !entry.file_type().is_some_and(|t| t.is_file())
                || entry.metadata().map_or(true, |m| m.len() > MAX_GREP_FILE)
            {
                continue;
            }
            let relative = self.sandbox.relative(entry.path());
            if glob.as_ref().is_some_and(|g| !g.is_match(&relative)) {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(entry.path()) else { continue };
            for (n, line) in text.lines().enumerate() {
                if !regex.is_match(line) {
                    continue;
                }
                if matches == MAX_MATCHES {
                    let _ = write!(out, "[more matches not shown; narrow the pattern or the glob]");
                    return Ok(out);
                }
                let shown: String = line.chars().take(MAX_MATCH_LINE).collect();
                let _ = writeln!(out, "{relative}:{}: {shown}", n + 1);
                matches += 1;
            }
        }
        if matches == 0 {
            out = format!("no matches for `{pattern}`");
        }
        Ok(out)
    }

    /// Files under the root, honouring `.gitignore`, never following symlinks out.
    fn walk(&self) -> ignore::Walk {
        ignore::WalkBuilder::new(self.sandbox.root()).hidden(true).follow_links(false).git_global(false).build()
    }
}

#[async_trait]
impl ToolRunner for RepoTools {
    fn specs(&self, tool_ids: &[String]) -> Result<Vec<ToolSpec>, String> {
        tool_ids.iter().map(|id| spec(id).ok_or_else(|| id.clone())).collect()
    }

    async fn run(&self, call: &ToolCall) -> ToolOutcome {
        let tools = self.clone();
        let call = call.clone();
        let result = tokio::task::spawn_blocking(move || match call.name.as_str() {
            "read_file" => tools.read_file(&call.arguments),
            "list_files" => tools.list_files(&call.arguments),
            "grep" => tools.grep(&call.arguments),
            other => Err(format!("there is no tool `{other}`; the tools are read_file, list_files and grep")),
        })
        .await
        .unwrap_or_else(|e| Err(format!("the tool failed: {e}")));
        match result {
            Ok(text) => ToolOutcome::ok(text),
            Err(message) => ToolOutcome::error(message),
        }
    }
}

/// The spec of a built-in tool. Every property is required (nullable where optional)
/// and objects are closed, so the specs are valid in every provider's strict mode.
pub fn spec(id: &str) -> Option<ToolSpec> {
    let (description, properties, names): (&str, Value, Vec<&str>) = match id {
        "read_file" => (
            "Read a file of the repository, with line numbers. Paths are relative to the repository root. Give start_line and end_line to read part of a long file (null reads from the start or to the end).",
            json!({"path": {"type": "string"}, "start_line": {"type": ["integer", "null"]}, "end_line": {"type": ["integer", "null"]}}),
            vec!["path", "start_line", "end_line"],
        ),
        "list_files" => (
            "List the repository's files (honouring .gitignore) whose paths match a glob such as `src/**/*.rs` (null lists everything).",
            json!({"glob": {"type": ["string", "null"]}}),
            vec!["glob"],
        ),
        "grep" => (
            "Search the repository's files for a regular expression; answers `path:line: text` per match. Limit the files with a glob (null searches everything).",
            json!({"pattern": {"type": "string"}, "glob": {"type": ["string", "null"]}}),
            vec!["pattern", "glob"],
        ),
        _ => return None,
    };
    Some(ToolSpec {
        name: id.to_string(),
        description: description.to_string(),
        parameters: json!({"type": "object", "properties": properties, "required": names, "additionalProperties": false}),
    })
}
