//! Repository rules: the instructions a repository keeps for its reviewers
//! (`AGENTS.md`, `CLAUDE.md` and `REVIEW.md`, and `.conclave/rules/*.md` with an
//! optional `paths:` front matter), read once through the tools' sandbox and put
//! into the run input, as one text block, for the changed paths they apply to.
//!
//! Reading ([`RepositoryRules::read`]) does the I/O; choosing which files apply to a
//! set of paths ([`RepositoryRules::select`], [`RepositoryRules::render_for`]) is a
//! pure function of the files found and the paths, so a part of a large change can
//! be given only the rules of its own files ([`insert_rules`]).
//!
//! Decisions, and why:
//! - The instruction files are read at the root, in every changed file's directory,
//!   and in the directories between (as the tools that read these files do: a file
//!   in `src/` speaks for `src/db/` too). A file applies to the changed paths under
//!   its directory.
//! - A rules file of the repository that cannot be used (a symlink, a special or
//!   ignored file, a malformed front matter) is skipped with a note the report
//!   shows, and the review goes on: the files come with the reviewed change, and a
//!   typo in guidance must not stop a CI review. A file given on the command line is
//!   the user's own: a problem with it is an error ([`RulesError`]).
//! - The front matter is parsed strictly, in the two list forms only
//!   (`paths: ["db/**", "*.sql"]`, or `paths:` then `- item` lines); any other key is
//!   malformed. Globs follow `.gitignore`'s habits through `globset`: `*` stays
//!   within a directory, `**` crosses them, and a glob without `/` matches the file
//!   name at any depth.

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::tools::sandbox::{Opened, Sandbox};

/// The instruction files read at the root and in the changed files' directories, in
/// the order they are given within one directory.
pub const INSTRUCTION_FILES: [&str; 3] = ["AGENTS.md", "CLAUDE.md", "REVIEW.md"];
/// The directory of rules files with optional `paths:` front matter.
pub const RULES_DIR: &str = ".conclave/rules";
/// The most of one rules file reviewers receive, in bytes; longer files are cut at a
/// line boundary, saying so.
pub const FILE_CAP: usize = 16 * 1024;
/// The most of all rules files together, in bytes; the files beyond it are left out,
/// and the report says which.
pub const TOTAL_CAP: usize = 64 * 1024;
/// How much of a file is read: a byte more than the cap, so a file of exactly the
/// cap is read whole.
const READ_CAP: u64 = FILE_CAP as u64 + 1;
/// The run input's key for the rules text.
pub const RULES_KEY: &str = "rules";
/// The run input's key for which rules files were applied and which were not read.
pub const RULES_FILES_KEY: &str = "rules_files";

/// A rules file given with the request: where to read it, and how to name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GivenRules {
    /// Where it is read (for a file of the repository under review, the base side's
    /// copy when the base configures the review).
    pub path: PathBuf,
    /// Its name in messages and the report: the path as given.
    pub shown: String,
}

impl GivenRules {
    /// A file read where it is, named by its path.
    pub fn as_is(path: &Path) -> GivenRules {
        GivenRules { path: path.to_path_buf(), shown: path.display().to_string() }
    }
}

/// The rules files found for a change: every candidate, before selection.
#[derive(Debug, Clone, Default)]
pub struct RepositoryRules {
    files: Vec<RulesFile>,
    refused: Vec<RefusedRules>,
}

/// One rules file, read and capped.
#[derive(Debug, Clone)]
struct RulesFile {
    /// Relative to the repository root, or as given on the command line.
    path: String,
    /// Which changed paths it applies to.
    scope: Applies,
    /// Its text, front matter removed, capped.
    text: String,
    /// Its size on disk.
    bytes: u64,
    /// Whether `text` is cut short.
    truncated: bool,
    /// Whether it was given on the command line rather than found in the repository.
    given: bool,
}

#[derive(Debug, Clone)]
enum Applies {
    /// Every change.
    Always,
    /// The changed paths under this directory (relative to the root, without `/`).
    Under(String),
    /// The changed paths one of these globs matches (as written, and compiled).
    Globs(Vec<(String, GlobSet)>),
}

/// A rules file given to the reviewers, as the report lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppliedRules {
    /// Relative to the repository root, or as given on the command line.
    pub path: String,
    /// Its size on disk.
    pub bytes: u64,
    /// Whether only its first lines were given (it is over [`FILE_CAP`]).
    pub truncated: bool,
    /// The globs of its front matter that matched a changed path (none: it has none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub globs: Vec<String>,
    /// Given on the command line rather than found in the repository.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub given: bool,
    /// One of the changed paths: the change under review edits the rules it is
    /// reviewed under, which whoever reads the report should know.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub changed: bool,
}

/// A rules file that was not given to the reviewers, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefusedRules {
    /// Relative to the repository root.
    pub path: String,
    /// Why it was not read or not given.
    pub why: String,
}

/// Which rules files a review applied and which it did not read, as the run input
/// records them for the report.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RulesRead {
    /// The files given to the reviewers, in the order they read them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub applied: Vec<AppliedRules>,
    /// The files refused or left out, with why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<RefusedRules>,
}

/// The rules for a set of changed paths: the text reviewers read, and what it holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// The text block, `None` when no rules file applies.
    pub text: Option<String>,
    /// What was applied and what was not.
    pub read: RulesRead,
}

/// A rules file given on the command line that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum RulesError {
    /// It could not be read.
    #[error("cannot read the rules file {path}: {message}; give a readable Markdown file")]
    Unreadable {
        /// The path as given.
        path: String,
        /// What failed.
        message: String,
    },
    /// Its front matter is malformed.
    #[error("the rules file {path} has a malformed front matter at line {line}: {message}")]
    FrontMatter {
        /// The path as given.
        path: String,
        /// The line, from 1.
        line: usize,
        /// What is wrong and what to write instead.
        message: String,
    },
}

impl RepositoryRules {
    /// Reads the rules files for a change of `changed` paths in the repository at
    /// `sandbox`'s root (none without a sandbox: the repository's rules are off),
    /// then the files `given` (read as they are, after them). Reads the file system:
    /// call it on a blocking thread.
    pub fn read(
        sandbox: Option<&Sandbox>,
        changed: &[String],
        given: &[GivenRules],
    ) -> Result<RepositoryRules, RulesError> {
        let mut rules = RepositoryRules::default();
        if let Some(sandbox) = sandbox {
            rules.read_repository(sandbox, changed);
        }
        for path in given {
            rules.files.push(read_given(&path.path, &path.shown)?);
        }
        Ok(rules)
    }

    /// The repository's rules files for `changed`, in the order they apply.
    fn read_repository(&mut self, sandbox: &Sandbox, changed: &[String]) {
        for dir in directories(changed) {
            for name in INSTRUCTION_FILES {
                let path = if dir.is_empty() { name.to_string() } else { format!("{dir}/{name}") };
                let scope = if dir.is_empty() { Applies::Always } else { Applies::Under(dir.clone()) };
                self.read_repository_file(sandbox, &path, Some(scope));
            }
        }
        for name in rules_dir_names(sandbox, &mut self.refused) {
            self.read_repository_file(sandbox, &format!("{RULES_DIR}/{name}"), None);
        }
    }

    /// Reads one file of the repository; `scope` is where it applies, else its front
    /// matter says. What cannot be used is noted and skipped.
    fn read_repository_file(&mut self, sandbox: &Sandbox, path: &str, scope: Option<Applies>) {
        let refuse = |why: String| RefusedRules { path: path.to_string(), why };
        let file = match sandbox.open_unlinked(path) {
            Ok(None) => return,
            Ok(Some(Opened::File(file))) => file,
            Ok(Some(Opened::Dir)) => {
                if scope.is_none() {
                    self.refused.push(refuse(format!("`{path}` is a directory, not a Markdown file")));
                }
                return;
            }
            Err(refused) => return self.refused.push(refuse(refused.0)),
        };
        let (text, bytes) = match read_capped(file) {
            Ok(read) => read,
            Err(e) => return self.refused.push(refuse(format!("`{path}` cannot be read: {e}"))),
        };
        let (scope, body) = match scope {
            Some(scope) => (scope, text.as_str()),
            None => match front_matter(&text) {
                Ok((globs, body)) => (globs, body),
                Err((line, message)) => {
                    return self.refused.push(refuse(format!(
                        "`{path}` has a malformed front matter at line {line}: {message}; the file was skipped"
                    )));
                }
            },
        };
        let (text, truncated) = cap(body, bytes > READ_CAP);
        self.files.push(RulesFile { path: path.to_string(), scope, text, bytes, truncated, given: false });
    }

    /// Whether nothing was found and nothing refused.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty() && self.refused.is_empty()
    }

    /// The rules for `paths` (changed paths relative to the root): the files that
    /// apply to at least one of them, root first, then deeper directories, then
    /// `.conclave/rules/` by name, then the given files; all capped at [`TOTAL_CAP`].
    /// Pure: the same files and paths give the same text.
    pub fn select(&self, paths: &[String]) -> Selection {
        let mut read = RulesRead { applied: Vec::new(), refused: self.refused.clone() };
        let mut sections = Vec::new();
        let mut total = 0;
        for file in &self.files {
            let Some(globs) = file.scope.matching(paths) else { continue };
            let section = file.section(&globs);
            if total + section.len() > TOTAL_CAP {
                read.refused.push(RefusedRules {
                    path: file.path.clone(),
                    why: format!(
                        "left out: the rules given to reviewers are capped at {TOTAL_CAP} bytes in all, and the files \
                         before it took {total}"
                    ),
                });
                continue;
            }
            total += section.len();
            sections.push(section);
            read.applied.push(AppliedRules {
                path: file.path.clone(),
                bytes: file.bytes,
                truncated: file.truncated,
                globs,
                given: file.given,
                changed: !file.given && paths.contains(&file.path),
            });
        }
        let text = (!sections.is_empty()).then(|| {
            format!(
                "The repository's rules for its reviewers. Follow them where they apply to the change.\n\n{}",
                sections.join("\n\n")
            )
        });
        Selection { text, read }
    }

    /// The rules text for `paths`, `None` when no rules file applies.
    pub fn render_for(&self, paths: &[String]) -> Option<String> {
        self.select(paths).text
    }
}

impl RulesFile {
    /// The file as reviewers read it: introduced by its path and where it applies.
    fn section(&self, globs: &[String]) -> String {
        let applies = match &self.scope {
            Applies::Always => String::new(),
            Applies::Under(dir) => format!(" (for the changes under `{dir}/`)"),
            Applies::Globs(_) => {
                let globs: Vec<String> = globs.iter().map(|g| format!("`{g}`")).collect();
                format!(" (for the changes matching {})", globs.join(", "))
            }
        };
        format!("# From `{}`{applies}\n\n{}", self.path, self.text)
    }
}

impl Applies {
    /// `None` when it applies to none of `paths`; else the globs that matched (none
    /// for a file without globs).
    fn matching(&self, paths: &[String]) -> Option<Vec<String>> {
        match self {
            Applies::Always => Some(Vec::new()),
            Applies::Under(dir) => {
                paths.iter().any(|p| p.strip_prefix(dir.as_str()).is_some_and(|r| r.starts_with('/'))).then(Vec::new)
            }
            Applies::Globs(globs) => {
                let matched: Vec<String> = globs
                    .iter()
                    .filter(|(_, set)| paths.iter().any(|p| set.is_match(p)))
                    .map(|(glob, _)| glob.clone())
                    .collect();
                (!matched.is_empty()).then_some(matched)
            }
        }
    }
}

/// Puts the rules for `paths` into a run input: the text under [`RULES_KEY`] and what
/// was applied or refused under [`RULES_FILES_KEY`], each only when there is
/// something to say (a repository without rules files gets neither key, so its
/// requests are the same as without this feature). Without `rules` (turned off),
/// both keys are removed. The one way rules enter a run input, a whole change's or
/// a part's.
pub fn insert_rules(input: &mut Map<String, Value>, rules: Option<&RepositoryRules>, paths: &[String]) {
    input.remove(RULES_KEY);
    input.remove(RULES_FILES_KEY);
    let Some(rules) = rules else { return };
    let selection = rules.select(paths);
    if let Some(text) = selection.text {
        input.insert(RULES_KEY.into(), Value::String(text));
    }
    if !selection.read.is_empty() {
        input.insert(RULES_FILES_KEY.into(), serde_json::to_value(&selection.read).unwrap_or_default());
    }
}

impl RulesRead {
    /// Whether no rules file was applied or refused.
    pub fn is_empty(&self) -> bool {
        self.applied.is_empty() && self.refused.is_empty()
    }

    /// What a review's run input records (see [`insert_rules`]); empty for a run
    /// without rules.
    pub fn of_input(input: &Value) -> RulesRead {
        input.get(RULES_FILES_KEY).and_then(|v| serde_json::from_value(v.clone()).ok()).unwrap_or_default()
    }
}

/// The root, then every directory holding a changed path and those between, by
/// depth then by name.
fn directories(changed: &[String]) -> Vec<String> {
    let mut dirs = std::collections::BTreeSet::from([(0usize, String::new())]);
    for path in changed {
        let mut parts: Vec<&str> = path.split('/').filter(|c| !c.is_empty() && *c != ".").collect();
        parts.pop();
        for depth in 1..=parts.len() {
            dirs.insert((depth, parts[..depth].join("/")));
        }
    }
    dirs.into_iter().map(|(_, dir)| dir).collect()
}

/// The `*.md` names in `.conclave/rules/`, by name; the directory itself refused
/// (noted) when it is a symlink or ignored.
fn rules_dir_names(sandbox: &Sandbox, refused: &mut Vec<RefusedRules>) -> Vec<String> {
    match sandbox.open_unlinked(RULES_DIR) {
        Ok(Some(Opened::Dir)) => {}
        Ok(_) => return Vec::new(),
        Err(why) => {
            refused.push(RefusedRules { path: RULES_DIR.into(), why: why.0 });
            return Vec::new();
        }
    }
    // Each name listed is opened through the sandbox again, one component at a time:
    // a directory swapped for a symlink after the check above leaks no file.
    let Ok(entries) = std::fs::read_dir(sandbox.root().join(RULES_DIR)) else { return Vec::new() };
    let mut names: Vec<String> = entries
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|name| name.ends_with(".md") && !name.starts_with('.'))
        .collect();
    names.sort();
    names
}

/// Reads a file given on the command line, front matter and all.
fn read_given(path: &Path, shown: &str) -> Result<RulesFile, RulesError> {
    let shown = shown.to_string();
    let unreadable = |message: String| RulesError::Unreadable { path: shown.clone(), message };
    let file = std::fs::File::open(path).map_err(|e| unreadable(e.to_string()))?;
    let meta = file.metadata().map_err(|e| unreadable(e.to_string()))?;
    if !meta.is_file() {
        return Err(unreadable("it is not a regular file".into()));
    }
    let (text, bytes) = read_capped(file).map_err(|e| unreadable(e.to_string()))?;
    let (scope, body) = front_matter(&text).map_err(|(line, message)| RulesError::FrontMatter {
        path: shown.clone(),
        line,
        message,
    })?;
    let (text, truncated) = cap(body, bytes > READ_CAP);
    Ok(RulesFile { path: shown, scope, text, bytes, truncated, given: true })
}

/// The first [`READ_CAP`] bytes of a file, as text, and the file's size.
fn read_capped(file: std::fs::File) -> std::io::Result<(String, u64)> {
    let bytes = file.metadata()?.len();
    let mut buffer = Vec::new();
    file.take(READ_CAP).read_to_end(&mut buffer)?;
    Ok((String::from_utf8_lossy(&buffer).into_owned(), bytes.max(buffer.len() as u64)))
}

/// `text` trimmed and cut to [`FILE_CAP`] at a line boundary when `over` (the file
/// was not read to its end, so its last line read is partial) or it is over the cap
/// itself, with a note saying so; whether it was cut.
fn cap(text: &str, over: bool) -> (String, bool) {
    let text = text.trim();
    if !over && text.len() <= FILE_CAP {
        return (text.to_string(), false);
    }
    let mut end = text.len().min(FILE_CAP);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let kept = &text[..end];
    let kept = match kept.rfind('\n') {
        Some(newline) if over || end < text.len() => &kept[..newline],
        _ => kept,
    };
    let note = format!("[… the rest of this file is cut: reviewers receive at most its first {FILE_CAP} bytes]");
    (format!("{}\n\n{note}", kept.trim_end()), true)
}

/// A parse error: the line (from 1) and what is wrong.
type Malformed = (usize, String);

/// The front matter of a `.conclave/rules` file, if it has one: where the file
/// applies (every change without `paths`) and the text after it.
fn front_matter(text: &str) -> Result<(Applies, &str), Malformed> {
    let mut lines = text.split_inclusive('\n');
    let Some(first) = lines.next() else { return Ok((Applies::Always, text)) };
    if first.trim_end() != "---" {
        return Ok((Applies::Always, text));
    }
    let mut offset = first.len();
    let mut block: Vec<(usize, &str)> = Vec::new();
    for (index, line) in lines.enumerate() {
        offset += line.len();
        if line.trim_end() == "---" {
            let globs = parse_paths(&block)?;
            let applies = if globs.is_empty() { Applies::Always } else { Applies::Globs(globs) };
            return Ok((applies, &text[offset..]));
        }
        block.push((index + 2, line.trim_end()));
    }
    Err((1, "the front matter opened by `---` is never closed by a `---` line".into()))
}

/// The globs of the front matter's lines (numbered from the file's first line).
fn parse_paths(block: &[(usize, &str)]) -> Result<Vec<(String, GlobSet)>, Malformed> {
    let mut globs: Option<Vec<(usize, String)>> = None;
    let mut in_list = false;
    for &(line, text) in block {
        let content = text.trim();
        if content.is_empty() || content.starts_with('#') {
            continue;
        }
        if let Some(item) = content.strip_prefix('-').filter(|_| in_list) {
            if !item.starts_with([' ', '\t']) {
                return Err((line, format!("`{content}`: a list item is `- ` then the glob")));
            }
            let (value, rest) = scalar(item.trim_start(), false).map_err(|m| (line, m))?;
            end_of_line(rest).map_err(|m| (line, m))?;
            globs.get_or_insert_with(Vec::new).push((line, value));
            continue;
        }
        in_list = false;
        if text.starts_with([' ', '\t']) {
            return Err((line, format!("`{content}` is indented, but no `paths:` list is open above it")));
        }
        let Some((key, value)) = content.split_once(':') else {
            return Err((line, format!("`{content}` is not `paths: [globs]`")));
        };
        if key.trim() != "paths" {
            return Err((
                line,
                format!("unknown key `{}`: the front matter of a rules file takes only `paths`", key.trim()),
            ));
        }
        if globs.is_some() {
            return Err((line, "`paths` is given twice".into()));
        }
        let value = value.trim();
        if value.is_empty() || value.starts_with('#') {
            in_list = true;
            globs = Some(Vec::new());
        } else if let Some(list) = value.strip_prefix('[') {
            globs = Some(flow_list(list).map_err(|m| (line, m))?.into_iter().map(|g| (line, g)).collect());
        } else {
            return Err((line, "`paths` takes a list: `paths: [\"db/**\"]`, or `paths:` then `- db/**` lines".into()));
        }
    }
    let Some(globs) = globs else { return Ok(Vec::new()) };
    let line = block.first().map_or(2, |(line, _)| *line);
    if globs.is_empty() {
        return Err((line, "`paths` lists no glob; remove it to apply the file to every change".into()));
    }
    globs.into_iter().map(|(line, glob)| compile(&glob).map(|set| (glob, set)).map_err(|m| (line, m))).collect()
}

/// The items of a flow list, after its `[`.
fn flow_list(mut rest: &str) -> Result<Vec<String>, String> {
    let mut items = Vec::new();
    loop {
        rest = rest.trim_start();
        if let Some(after) = rest.strip_prefix(']').filter(|_| items.is_empty()) {
            return end_of_line(after).map(|_| items);
        }
        let (item, after) = scalar(rest, true)?;
        items.push(item);
        let after = after.trim_start();
        if let Some(after) = after.strip_prefix(',') {
            rest = after;
        } else if let Some(after) = after.strip_prefix(']') {
            return end_of_line(after).map(|_| items);
        } else {
            return Err("the list is not closed by `]` on the same line".into());
        }
    }
}

/// One glob, quoted (`"…"` with `\"` and `\\`, or `'…'` with `''`) or bare; what
/// follows it. In a flow list a bare glob ends at `,` or `]`.
fn scalar(text: &str, in_flow: bool) -> Result<(String, &str), String> {
    let mut chars = text.char_indices();
    match chars.next() {
        Some((_, '"')) => {
            let mut value = String::new();
            while let Some((i, c)) = chars.next() {
                match c {
                    '"' => return Ok((value, &text[i + 1..])),
                    '\\' => match chars.next() {
                        Some((_, escaped @ ('"' | '\\'))) => value.push(escaped),
                        _ => return Err(format!("`{text}`: only `\\\"` and `\\\\` are escapes here")),
                    },
                    c => value.push(c),
                }
            }
            Err(format!("`{text}`: the quote is not closed"))
        }
        Some((_, '\'')) => {
            let mut value = String::new();
            let rest = &text[1..];
            let mut i = 0;
            while let Some(c) = rest[i..].chars().next() {
                if c == '\'' {
                    if rest[i + 1..].starts_with('\'') {
                        value.push('\'');
                        i += 2;
                        continue;
                    }
                    return Ok((value, &rest[i + 1..]));
                }
                value.push(c);
                i += c.len_utf8();
            }
            Err(format!("`{text}`: the quote is not closed"))
        }
        Some(_) => {
            let end = text
                .char_indices()
                .find(|&(i, c)| (in_flow && (c == ',' || c == ']')) || (c == '#' && text[..i].ends_with([' ', '\t'])))
                .map_or(text.len(), |(i, _)| i);
            let value = text[..end].trim();
            if value.is_empty() {
                return Err("an empty glob".into());
            }
            if value.starts_with(['[', '{', '&', '*', '!', '|', '>', '%', '@', '`']) {
                return Err(format!("`{value}` starts with a character YAML reserves; quote it: \"{value}\""));
            }
            Ok((value.to_string(), &text[end..]))
        }
        None => Err("an empty glob".into()),
    }
}

/// Nothing but spaces and a comment may follow a value.
fn end_of_line(rest: &str) -> Result<(), String> {
    let rest = rest.trim();
    if rest.is_empty() || rest.starts_with('#') { Ok(()) } else { Err(format!("unexpected `{rest}` after the value")) }
}

/// A glob as `.gitignore` reads one: `*` within a directory, `**` across them, and
/// without `/` the file name at any depth.
fn compile(glob: &str) -> Result<GlobSet, String> {
    let build = |pattern: &str| -> Result<Glob, String> {
        GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| format!("`{glob}` is not a valid glob: {}", e.kind()))
    };
    let anchored = glob.strip_prefix('/').unwrap_or(glob);
    let mut set = GlobSetBuilder::new();
    set.add(build(anchored)?);
    if !glob.contains('/') {
        set.add(build(&format!("**/{glob}"))?);
    }
    set.build().map_err(|e| format!("`{glob}` is not a valid glob: {e}"))
}

#[cfg(test)]
mod tests;
