//! The built-in read-only tools over a repository: `read_file`, `list_files` and
//! `grep`, and the symbol tools of `symbols.rs` (`find_definition`,
//! `find_references`, `outline`), confined by a [`Sandbox`] and capped per call so
//! one answer cannot flood the model's context. Files are streamed, never read whole: a 200 MB file costs no
//! more memory than the part that is shown.

use async_trait::async_trait;
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use super::sandbox::{Opened, Sandbox};
use super::symbols::{self, SymbolIndex};
use conclave_core::{ToolCall, ToolOutcome, ToolRunner, ToolSpec};

/// Most lines `read_file` returns in one call.
pub const MAX_READ_LINES: usize = 800;
/// Most bytes `read_file` returns in one call.
pub const MAX_READ_BYTES: usize = 64 * 1024;
/// Most bytes of one line shown in one piece; longer lines continue on the next
/// output line with the same number.
pub const MAX_LINE_PIECE: usize = 4096;
/// Most paths `list_files` returns.
pub const MAX_LISTED: usize = 500;
/// Most matches `grep` returns.
pub const MAX_MATCHES: usize = 200;
/// Longest line `grep` shows.
const MAX_MATCH_LINE: usize = 240;
/// Files larger than this are skipped by `grep` (and named as skipped).
const MAX_GREP_FILE: u64 = 2 * 1024 * 1024;
/// How many skipped files `grep` names.
const MAX_SKIPPED_SHOWN: usize = 20;

/// The repository tools.
#[derive(Debug, Clone)]
pub struct RepoTools {
    sandbox: Sandbox,
    symbols: SymbolIndex,
}

impl RepoTools {
    /// Tools over the repository at `root`; `allow` are globs of files they may read
    /// although `.git/` or `.gitignore` would hide them.
    pub fn new(root: &Path, allow: &[String]) -> std::io::Result<RepoTools> {
        let sandbox = Sandbox::new(root, allow)?;
        let symbols = SymbolIndex::new(sandbox.root(), allow);
        Ok(RepoTools { sandbox, symbols })
    }

    /// The tools with the symbol index given (its options, or one shared with
    /// other tools).
    pub fn with_symbols(mut self, symbols: SymbolIndex) -> RepoTools {
        self.symbols = symbols;
        self
    }

    /// The review's symbol index, built on first use and shared by every agent (and
    /// by whatever else of the review needs the head's symbols).
    pub fn symbols(&self) -> &SymbolIndex {
        &self.symbols
    }

    async fn run_symbol_tool(&self, call: &ToolCall) -> Result<String, String> {
        let index = self.symbols.get().await.map_err(|e| format!("the symbol index is not available: {e}"))?;
        let (sandbox, call) = (self.sandbox.clone(), call.clone());
        tokio::task::spawn_blocking(move || symbols::run(&index, &sandbox, &call.name, &call.arguments))
            .await
            .unwrap_or_else(|e| Err(format!("the tool failed: {e}")))
    }

    fn read_file(&self, args: &Value) -> Result<String, String> {
        let requested = args.get("path").and_then(Value::as_str).ok_or("read_file needs `path`")?;
        let file = match self.sandbox.open(requested).map_err(|e| e.0)? {
            (_, Opened::File(file)) => file,
            (_, Opened::Dir) => {
                return Err(format!("`{requested}` is a directory; use list_files to see what it holds"));
            }
        };
        let start = args.get("start_line").and_then(Value::as_u64).unwrap_or(1).max(1);
        let end = args.get("end_line").and_then(Value::as_u64).unwrap_or(u64::MAX);
        let start_byte = args.get("start_byte").and_then(Value::as_u64).unwrap_or(0);
        let mut reader = BufReader::with_capacity(64 * 1024, file);
        if reader.fill_buf().map_err(|e| format!("cannot read `{requested}`: {e}"))?.iter().take(8000).any(|&b| b == 0)
        {
            return Err(format!("`{requested}` is a binary file"));
        }
        for line in 1..start {
            if reader.skip_until(b'\n').map_err(|e| format!("cannot read `{requested}`: {e}"))? == 0 {
                return Err(format!("`{requested}` has {} lines; start_line {start} is past the end", line - 1));
            }
        }
        read_lines(&mut reader, start, end, start_byte).map_err(|e| format!("cannot read `{requested}`: {e}"))
    }

    fn list_files(&self, args: &Value) -> Result<String, String> {
        let pattern = args.get("glob").and_then(Value::as_str).filter(|g| !g.is_empty()).unwrap_or("**/*");
        let glob =
            globset::Glob::new(pattern).map_err(|e| format!("`{pattern}` is not a valid glob: {e}"))?.compile_matcher();
        let visible = self.sandbox.visible_files();
        let found: Vec<&String> = visible.iter().filter(|f| glob.is_match(f)).collect();
        let total = found.len();
        let mut out = found.into_iter().take(MAX_LISTED).map(String::as_str).collect::<Vec<_>>().join("\n");
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
        let mut search = Search { regex, out: String::new(), matches: 0, skipped: Vec::new() };
        for relative in self.sandbox.visible_files() {
            if glob.as_ref().is_some_and(|g| !g.is_match(&relative)) {
                continue;
            }
            if !search.file(&self.sandbox, &relative) {
                break;
            }
        }
        Ok(search.finish(pattern))
    }
}

/// Shows lines `start..=end` from `reader` (positioned at `start`), skipping the
/// first `start_byte` bytes of the first line, within the output caps. A line longer
/// than [`MAX_LINE_PIECE`] is shown in pieces under the same number.
fn read_lines(reader: &mut impl BufRead, start: u64, end: u64, start_byte: u64) -> std::io::Result<String> {
    let mut out = String::new();
    let mut piece = Vec::with_capacity(MAX_LINE_PIECE);
    let skipped = std::io::copy(&mut reader.by_ref().take(start_byte), &mut std::io::sink())?;
    let (mut n, mut line_bytes, mut shown_lines) = (start, skipped, 0);
    while n <= end {
        piece.clear();
        let read = reader.by_ref().take(MAX_LINE_PIECE as u64).read_until(b'\n', &mut piece)?;
        if read == 0 {
            break;
        }
        let text = String::from_utf8_lossy(&piece);
        let text = text.trim_end_matches(['\n', '\r']);
        if shown_lines == MAX_READ_LINES || out.len() + text.len() > MAX_READ_BYTES {
            let _ = if line_bytes == 0 {
                write!(
                    out,
                    "[stopped before line {n} (at most {MAX_READ_LINES} lines or 64 KiB a call); read on with start_line {n}]"
                )
            } else {
                write!(out, "[line {n} goes on; read on with start_line {n} and start_byte {line_bytes}]")
            };
            return Ok(out);
        }
        let _ = writeln!(out, "{n:>5} | {text}");
        if piece.last() == Some(&b'\n') {
            (n, line_bytes, shown_lines) = (n + 1, 0, shown_lines + 1);
        } else {
            line_bytes += read as u64;
        }
    }
    Ok(out)
}

/// One grep over the visible files.
struct Search {
    regex: regex::Regex,
    out: String,
    matches: usize,
    skipped: Vec<String>,
}

impl Search {
    /// Searches one file; false once the match cap is reached.
    fn file(&mut self, sandbox: &Sandbox, relative: &str) -> bool {
        let Ok(Opened::File(file)) = sandbox.open_listed(relative) else { return true };
        if file.metadata().map_or(true, |m| m.len() > MAX_GREP_FILE) {
            self.skipped.push(format!("{relative} (over {} MB)", MAX_GREP_FILE / (1024 * 1024)));
            return true;
        }
        let mut text = String::new();
        if file.take(MAX_GREP_FILE).read_to_string(&mut text).is_err() {
            self.skipped.push(format!("{relative} (not text)"));
            return true;
        }
        for (n, line) in text.lines().enumerate() {
            if !self.regex.is_match(line) {
                continue;
            }
            if self.matches == MAX_MATCHES {
                let _ = write!(self.out, "[more matches not shown; narrow the pattern or the glob]");
                return false;
            }
            let shown: String = line.chars().take(MAX_MATCH_LINE).collect();
            let _ = writeln!(self.out, "{relative}:{}: {shown}", n + 1);
            self.matches += 1;
        }
        true
    }

    fn finish(mut self, pattern: &str) -> String {
        if self.matches == 0 {
            self.out = format!("no matches for `{pattern}`");
        }
        if !self.skipped.is_empty() {
            let named: Vec<&str> = self.skipped.iter().take(MAX_SKIPPED_SHOWN).map(String::as_str).collect();
            let more = self.skipped.len().saturating_sub(MAX_SKIPPED_SHOWN);
            let _ = write!(
                self.out,
                "\n[skipped {} file(s): {}{}]",
                self.skipped.len(),
                named.join(", "),
                if more > 0 { format!(" and {more} more") } else { String::new() }
            );
        }
        self.out
    }
}

#[async_trait]
impl ToolRunner for RepoTools {
    fn specs(&self, tool_ids: &[String]) -> Result<Vec<ToolSpec>, String> {
        tool_ids.iter().map(|id| spec(id).ok_or_else(|| id.clone())).collect()
    }

    async fn run(&self, call: &ToolCall) -> ToolOutcome {
        if symbols::is_symbol_tool(&call.name) {
            return match self.run_symbol_tool(call).await {
                Ok(text) => ToolOutcome::ok(text),
                Err(message) => ToolOutcome::error(message),
            };
        }
        let tools = self.clone();
        let call = call.clone();
        let result = tokio::task::spawn_blocking(move || match call.name.as_str() {
            "read_file" => tools.read_file(&call.arguments),
            "list_files" => tools.list_files(&call.arguments),
            "grep" => tools.grep(&call.arguments),
            other => Err(format!(
                "there is no tool `{other}`; the tools are read_file, list_files, grep, find_definition, find_references and outline"
            )),
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
            "Read a file of the repository, with line numbers. Paths are relative to the repository root. Give start_line and end_line to read part of a long file (null reads from the start or to the end); a very long line is shown in pieces, and start_byte (null for 0) reads on from a byte of start_line.",
            json!({"path": {"type": "string"}, "start_line": {"type": ["integer", "null"]}, "end_line": {"type": ["integer", "null"]}, "start_byte": {"type": ["integer", "null"]}}),
            vec!["path", "start_line", "end_line", "start_byte"],
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
        _ => return symbols::spec(id),
    };
    Some(ToolSpec {
        name: id.to_string(),
        description: description.to_string(),
        parameters: json!({"type": "object", "properties": properties, "required": names, "additionalProperties": false}),
    })
}
