//! The cache of parsed files, one entry per git blob id and language under the cache
//! directory, so a second index of a repository (or of another worktree of it) parses
//! only the files that changed. An entry holds its format and blob id, and each
//! string once; one that does not read back is parsed again and rewritten, never a
//! failure.

use serde::{Deserialize, Serialize};
use sha1::{Digest, Sha1};
use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use crate::lang::query_sources;
use crate::symbol::{Definition, FileSymbols, Lang, Reference, Skip, SymbolKind};

/// The version of an entry's layout; the key also holds a digest of the queries, so
/// a changed query never reads an old entry.
pub const CACHE_FORMAT: u32 = 3;

/// The git blob id of `content`: the SHA-1 of `blob <len>\0<content>`, in hex.
pub fn blob_id(content: &[u8]) -> String {
    let mut hasher = Sha1::new();
    hasher.update(format!("blob {}\0", content.len()).as_bytes());
    hasher.update(content);
    hex::encode(hasher.finalize())
}

/// The cache directory when none is given: `$CONCLAVE_SYMBOLS_CACHE`, else
/// `$XDG_CACHE_HOME/conclave/symbols`, else `~/.cache/conclave/symbols` (next to
/// the review mirrors' `conclave/mirrors`).
pub fn default_cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("CONCLAVE_SYMBOLS_CACHE").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
    Some(cache.join("conclave").join("symbols"))
}

/// One cached outcome of parsing a blob.
#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    format: u32,
    blob: String,
    lang: Lang,
    outcome: Result<Compact, Skip>,
}

/// A file's symbols with each string once in `strings` (a file repeats a few names,
/// and the line text of every reference on one line), referred to by index; no
/// path, since the same blob may sit at several paths.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct Compact {
    strings: Vec<String>,
    /// Name, kind, start line, end line, signature, container (0 for none, else
    /// index + 1).
    definitions: Vec<(u32, SymbolKind, u32, u32, u32, u32)>,
    /// Name, line, text, enclosing function and qualifier (0 for none, else index +
    /// 1), call.
    references: Vec<(u32, u32, u32, u32, u32, bool)>,
    parse_errors: bool,
}

impl Compact {
    pub(crate) fn from_symbols(symbols: &FileSymbols) -> Compact {
        let mut strings = Strings::default();
        let mut id = |text| strings.id(text);
        let definitions = symbols
            .definitions
            .iter()
            .map(|d| {
                let container = d.container.as_deref().map_or(0, |c| id(c) + 1);
                (id(&d.name), d.kind, d.start_line, d.end_line, id(&d.signature), container)
            })
            .collect();
        let references = symbols
            .references
            .iter()
            .map(|r| {
                let enclosing = r.enclosing.as_deref().map_or(0, |e| id(e) + 1);
                let qualifier = r.qualifier.as_deref().map_or(0, |q| id(q) + 1);
                (id(&r.name), r.line, id(&r.text), enclosing, qualifier, r.call)
            })
            .collect();
        Compact { strings: strings.list, definitions, references, parse_errors: symbols.parse_errors }
    }

    /// The symbols at `path`; `None` when an index is out of range (a corrupt entry).
    /// Each distinct string is allocated once and shared by the symbols that use it.
    pub(crate) fn to_symbols(&self, path: &str) -> Option<FileSymbols> {
        let strings: Vec<Arc<str>> = self.strings.iter().map(|s| Arc::from(s.as_str())).collect();
        let file: Arc<str> = Arc::from(path);
        let text = |i: u32| strings.get(i as usize).cloned();
        let optional = |i: u32| if i == 0 { Some(None) } else { text(i - 1).map(Some) };
        let definitions = self
            .definitions
            .iter()
            .map(|&(name, kind, start_line, end_line, signature, container)| {
                Some(Definition {
                    name: text(name)?,
                    kind,
                    file: file.clone(),
                    start_line,
                    end_line,
                    signature: text(signature)?,
                    container: optional(container)?,
                })
            })
            .collect::<Option<Vec<_>>>()?;
        let references = self
            .references
            .iter()
            .map(|&(name, line, line_text, enclosing, qualifier, call)| {
                Some(Reference {
                    name: text(name)?,
                    file: file.clone(),
                    line,
                    text: text(line_text)?,
                    enclosing: optional(enclosing)?,
                    qualifier: optional(qualifier)?,
                    call,
                })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(FileSymbols { definitions, references, parse_errors: self.parse_errors })
    }
}

/// Each distinct string once, by first appearance.
#[derive(Default)]
struct Strings<'a> {
    ids: HashMap<&'a str, u32>,
    list: Vec<String>,
}

impl<'a> Strings<'a> {
    fn id(&mut self, text: &'a str) -> u32 {
        *self.ids.entry(text).or_insert_with(|| {
            self.list.push(text.to_string());
            self.list.len() as u32 - 1
        })
    }
}

/// The cache under one directory.
#[derive(Debug, Clone)]
pub(crate) struct Cache {
    dir: PathBuf,
}

/// What reading an entry gave.
pub(crate) enum Read {
    Hit(Result<FileSymbols, Skip>),
    Miss,
    /// An entry was there but did not read back (corrupt, or another format).
    Corrupt,
}

impl Cache {
    pub fn new(dir: &Path) -> Cache {
        Cache { dir: dir.join(format!("v{CACHE_FORMAT}-{}", query_digest())) }
    }

    /// The directory of this format's entries.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn read(&self, blob: &str, lang: Lang, path: &str) -> Read {
        let Ok(bytes) = std::fs::read(self.path(blob, lang)) else { return Read::Miss };
        match serde_json::from_slice::<Entry>(&bytes) {
            Ok(entry) if entry.format == CACHE_FORMAT && entry.blob == blob && entry.lang == lang => {
                match entry.outcome {
                    Ok(compact) => compact.to_symbols(path).map_or(Read::Corrupt, |symbols| Read::Hit(Ok(symbols))),
                    Err(skip) => Read::Hit(Err(skip)),
                }
            }
            _ => Read::Corrupt,
        }
    }

    /// Writes an entry through a temporary file renamed into place, so a reader never
    /// sees half an entry.
    pub fn write(&self, blob: &str, lang: Lang, outcome: &Result<FileSymbols, Skip>) -> std::io::Result<()> {
        let path = self.path(blob, lang);
        let dir = path.parent().unwrap_or(&self.dir);
        std::fs::create_dir_all(dir)?;
        let outcome = outcome.as_ref().map(Compact::from_symbols).map_err(Clone::clone);
        let entry = Entry { format: CACHE_FORMAT, blob: blob.to_string(), lang, outcome };
        let bytes = serde_json::to_vec(&entry).map_err(std::io::Error::other)?;
        let mut file = tempfile::NamedTempFile::new_in(dir)?;
        file.write_all(&bytes)?;
        file.persist(&path).map_err(|e| e.error)?;
        Ok(())
    }

    fn path(&self, blob: &str, lang: Lang) -> PathBuf {
        let (shard, rest) = blob.split_at(2.min(blob.len()));
        self.dir.join(shard).join(format!("{rest}.{}.json", lang.name()))
    }
}

/// The first 12 hex digits of the SHA-1 of every query, computed once.
fn query_digest() -> &'static str {
    static DIGEST: OnceLock<String> = OnceLock::new();
    DIGEST.get_or_init(|| {
        let mut hasher = Sha1::new();
        hasher.update(query_sources().as_bytes());
        hex::encode(hasher.finalize())[..12].to_string()
    })
}
