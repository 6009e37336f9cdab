//! The index of a repository: every file the review tools may read (the walk and
//! rules of `conclave_sandbox::paths`), within caps, parsed in parallel or read from
//! the cache, with a report of what was indexed, skipped and left out.

use conclave_sandbox::paths::{Opened, Sandbox};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::cache::{Cache, Compact, Read, blob_id};
use crate::lang::language_of;
use crate::parse::{extension, parse_source};
use crate::rank::nearness;
use crate::record::{Known, Loaded, Record, Stat, nanos};
use crate::symbol::{Definition, FileSymbols, Lang, Reference, Skip};

/// How many paths a report names per list.
const MAX_NAMED: usize = 20;

/// How to build an index.
#[derive(Debug, Clone)]
pub struct IndexOptions {
    /// Where parsed files are cached by blob id; `None` parses every file.
    pub cache_dir: Option<PathBuf>,
    /// Globs (relative to the root) of files read although `.git/` or `.gitignore`
    /// would hide them, as the review tools' allowlist.
    pub allow: Vec<String>,
    /// Most files parsed; the rest (in path order) are left out.
    pub max_files: usize,
    /// Largest file parsed, in bytes.
    pub max_file_bytes: u64,
    /// Most bytes parsed in all.
    pub max_total_bytes: u64,
    /// Threads that parse; `None` for one per core.
    pub threads: Option<usize>,
}

impl Default for IndexOptions {
    fn default() -> IndexOptions {
        IndexOptions {
            cache_dir: None,
            allow: Vec::new(),
            max_files: 50_000,
            max_file_bytes: 1024 * 1024,
            max_total_bytes: 256 * 1024 * 1024,
            threads: None,
        }
    }
}

/// Why an index could not be built at all.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("cannot index `{root}`: {error}; give the path of a repository's directory")]
    Root { root: PathBuf, error: String },
}

/// What the caps left out.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LeftOut {
    /// Files past `max_files`.
    pub over_file_cap: usize,
    /// Files over `max_file_bytes`.
    pub too_large: usize,
    /// Files that would have passed `max_total_bytes`.
    pub over_total_cap: usize,
    /// Some of them, with why.
    pub named: Vec<String>,
}

impl LeftOut {
    pub fn total(&self) -> usize {
        self.over_file_cap + self.too_large + self.over_total_cap
    }
}

/// What a build did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct IndexReport {
    /// Files the tools may read.
    pub files_seen: usize,
    /// Files whose symbols are in the index (parsed or from the cache).
    pub files_indexed: usize,
    /// Files parsed by this build.
    pub parsed: usize,
    /// Some of the parsed files, by path.
    pub parsed_named: Vec<String>,
    /// Files read from the cache (the repository's record or the per-blob entries).
    pub from_cache: usize,
    /// Files whose symbols came from the repository's record.
    pub from_record: usize,
    /// Of those, files whose stat matched the record, so they were not even opened.
    pub stat_hits: usize,
    /// Whether a record was there but did not read back (ignored; the per-blob
    /// cache served).
    pub record_corrupt: bool,
    /// Indexed files in which the grammar met errors (what parsed is kept).
    pub with_parse_errors: usize,
    /// Files of a known language skipped, by reason (`binary`, `invalid_utf8`,
    /// `parse_error`, ...).
    pub skipped: BTreeMap<String, usize>,
    /// Some of the skipped files, with why.
    pub skipped_named: Vec<String>,
    /// Files in languages without a grammar, by extension.
    pub other_languages: BTreeMap<String, usize>,
    pub left_out: LeftOut,
    /// Cache entries that did not read back and were parsed again.
    pub cache_corrupt: usize,
    /// Cache entries that could not be written.
    pub cache_write_errors: usize,
    pub definitions: usize,
    pub references: usize,
    pub elapsed_ms: u64,
}

impl IndexReport {
    /// One paragraph for people and for the tools' notes.
    pub fn summary(&self) -> String {
        let mut out = format!(
            "{} files indexed ({} parsed, {} from the cache) of {} seen: {} definitions, {} references",
            self.files_indexed, self.parsed, self.from_cache, self.files_seen, self.definitions, self.references
        );
        if self.with_parse_errors > 0 {
            out.push_str(&format!("; {} with grammar errors (what parsed is kept)", self.with_parse_errors));
        }
        let skipped: usize = self.skipped.values().sum();
        if skipped > 0 {
            let reasons: Vec<String> = self.skipped.iter().map(|(r, n)| format!("{n} {r}")).collect();
            out.push_str(&format!("; {skipped} skipped ({})", reasons.join(", ")));
        }
        let other: usize = self.other_languages.values().sum();
        if other > 0 {
            out.push_str(&format!("; {other} in other languages"));
        }
        let left = &self.left_out;
        if left.total() > 0 {
            out.push_str(&format!(
                "; {} left out by the caps ({} past the file cap, {} too large, {} past the total size cap)",
                left.total(),
                left.over_file_cap,
                left.too_large,
                left.over_total_cap
            ));
        }
        out
    }
}

/// A repository's symbols. `Send + Sync`: one index serves every agent of a review.
#[derive(Debug)]
pub struct Index {
    root: PathBuf,
    files: Vec<(String, FileSymbols)>,
    by_path: HashMap<String, usize>,
    definitions: Names,
    references: Names,
    /// Why each file of a known language is not in the index.
    not_indexed: HashMap<String, String>,
    report: IndexReport,
}

/// Where each name's definitions or references are, as (file, position) pairs.
/// Keyed by the symbols' own shared names (no copy), hashed with foldhash seeded per
/// process: quick, and not open to names a change under review picks to collide.
type Names = HashMap<Arc<str>, Vec<(usize, usize)>, foldhash::fast::RandomState>;

/// A file chosen for indexing.
struct Chosen {
    path: String,
    lang: Lang,
    /// `None` when it could not be taken.
    stat: Option<Stat>,
}

/// Where a file's outcome came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Parsed,
    /// A per-blob cache entry.
    Cache,
    /// The record, after hashing the file.
    Record,
    /// The record, the file's stat matching it (not opened).
    StatHit,
}

/// What indexing one file gave.
struct Outcome {
    result: Result<FileSymbols, Skip>,
    source: Source,
    /// The file's blob id, when it was read and hashed (or recorded).
    blob: Option<String>,
    corrupt: bool,
    write_failed: bool,
}

impl Outcome {
    fn new(result: Result<FileSymbols, Skip>, source: Source, blob: Option<String>) -> Outcome {
        Outcome { result, source, blob, corrupt: false, write_failed: false }
    }
}

impl Index {
    /// Blocking (call it from `spawn_blocking`): indexes the files the review tools
    /// may read under `root`.
    pub fn build(root: &Path, options: &IndexOptions) -> Result<Index, IndexError> {
        let started = Instant::now();
        let stamp_ns = nanos(std::time::SystemTime::now());
        let sandbox = Sandbox::new(root, &options.allow)
            .map_err(|e| IndexError::Root { root: root.to_path_buf(), error: e.to_string() })?;
        let mut report = IndexReport::default();
        let mut not_indexed = HashMap::new();
        let cache = options.cache_dir.as_deref().map(Cache::new);
        let record = cache.as_ref().map(|cache| Record::new(cache, sandbox.root()));
        // The record is decoded on another thread while this one walks the files.
        let (chosen, loaded) = std::thread::scope(|scope| {
            let loading = scope.spawn(|| record.as_ref().map(Record::load));
            let chosen = choose(&sandbox, options, &mut report, &mut not_indexed);
            (chosen, loading.join().unwrap_or(Some(Err(()))))
        });
        let loaded = match loaded {
            Some(Ok(loaded)) => {
                report.record_corrupt = loaded.as_ref().is_some_and(|l| l.delta_corrupt);
                loaded
            }
            Some(Err(())) => {
                report.record_corrupt = true;
                None
            }
            None => None,
        };
        let outcomes = index_files(&sandbox, &chosen, options, cache.as_ref(), loaded.as_ref());
        if let Some(record) = &record {
            let written = save_record(record, stamp_ns, &chosen, &outcomes, loaded);
            report.cache_write_errors += usize::from(written.is_err());
        }
        let mut files = Vec::with_capacity(outcomes.len());
        for (file, outcome) in chosen.into_iter().zip(outcomes) {
            let cached = outcome.source != Source::Parsed;
            report.from_cache += usize::from(cached);
            report.from_record += usize::from(matches!(outcome.source, Source::Record | Source::StatHit));
            report.stat_hits += usize::from(outcome.source == Source::StatHit);
            count_parsed(&mut report, &file.path, !cached);
            report.cache_corrupt += usize::from(outcome.corrupt);
            report.cache_write_errors += usize::from(outcome.write_failed);
            match outcome.result {
                Ok(symbols) => {
                    report.with_parse_errors += usize::from(symbols.parse_errors);
                    files.push((file.path, symbols));
                }
                Err(skip) => {
                    *report.skipped.entry(skip.reason().to_string()).or_default() += 1;
                    if report.skipped_named.len() < MAX_NAMED {
                        report.skipped_named.push(format!("{} ({skip})", file.path));
                    }
                    not_indexed.insert(file.path, format!("skipped: {skip}"));
                }
            }
        }
        report.files_indexed = files.len();
        let mut index = Index {
            root: sandbox.root().to_path_buf(),
            by_path: HashMap::new(),
            definitions: Names::default(),
            references: Names::default(),
            not_indexed,
            files,
            report,
        };
        index.fill_maps();
        index.report.elapsed_ms = started.elapsed().as_millis() as u64;
        Ok(index)
    }

    /// The definitions of `name`, best first: nearest to `near_file` when given,
    /// else by path. `Type::method` or `Type.method` narrows to one container.
    pub fn definitions(&self, name: &str, near_file: Option<&str>) -> Vec<&Definition> {
        let (container, name) = split_qualified(name);
        let mut found: Vec<&Definition> = self
            .definitions
            .get(name)
            .into_iter()
            .flatten()
            .map(|&(f, d)| &self.files[f].1.definitions[d])
            .filter(|d| container.is_none() || d.container.as_deref() == container)
            .collect();
        found.sort_by(|a, b| {
            (nearness(&a.file, near_file), &a.file, a.start_line).cmp(&(
                nearness(&b.file, near_file),
                &b.file,
                b.start_line,
            ))
        });
        found
    }

    /// The references to `name`, nearest to `near_file` first, else by path and line.
    /// `Type::name` or `Type.name` leaves out the Rust paths that name another type or
    /// module (`Other::name(…)`) and puts the ones that name `Type` first; a bare
    /// `name(…)` or a method call on a value (its type unknown) is kept, after them.
    pub fn references(&self, name: &str, near_file: Option<&str>) -> Vec<&Reference> {
        let (container, name) = split_qualified(name);
        let mut found: Vec<&Reference> = self
            .references
            .get(name)
            .into_iter()
            .flatten()
            .map(|&(f, r)| &self.files[f].1.references[r])
            .filter(|r| container.is_none() || r.qualifier.is_none() || r.qualifier.as_deref() == container)
            .collect();
        let key = |r: &Reference| {
            let unknown = container.is_some() && r.qualifier.is_none();
            (unknown, nearness(&r.file, near_file), r.file.clone(), r.line)
        };
        found.sort_by_cached_key(|r| key(r));
        found
    }

    /// The definitions of one indexed file (relative to the root), in line order.
    pub fn outline(&self, path: &str) -> Option<&[Definition]> {
        self.file(path).map(|symbols| symbols.definitions.as_slice())
    }

    /// One indexed file's symbols.
    pub fn file(&self, path: &str) -> Option<&FileSymbols> {
        let path = path.trim_start_matches("./");
        self.by_path.get(path).map(|&i| &self.files[i].1)
    }

    /// Why a file of a known language (relative to the root) is not in the index:
    /// skipped (binary, invalid UTF-8, ...) or left out by a cap.
    pub fn not_indexed(&self, path: &str) -> Option<&str> {
        self.not_indexed.get(path.trim_start_matches("./")).map(String::as_str)
    }

    /// The indexed files' paths, in path order.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.files.iter().map(|(path, _)| path.as_str())
    }

    /// The canonical root indexed.
    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn report(&self) -> &IndexReport {
        &self.report
    }

    fn fill_maps(&mut self) {
        let (definitions, references) =
            self.files.iter().fold((0, 0), |(d, r), (_, s)| (d + s.definitions.len(), r + s.references.len()));
        self.report.definitions = definitions;
        self.report.references = references;
        // Names repeat (a guess of one distinct name per eight references; the map
        // grows past it as needed).
        self.definitions.reserve(definitions);
        self.references.reserve(references / 8);
        self.by_path.reserve(self.files.len());
        for (f, (path, symbols)) in self.files.iter().enumerate() {
            self.by_path.insert(path.clone(), f);
            for (d, definition) in symbols.definitions.iter().enumerate() {
                self.definitions.entry(definition.name.clone()).or_default().push((f, d));
            }
            for (r, reference) in symbols.references.iter().enumerate() {
                self.references.entry(reference.name.clone()).or_default().push((f, r));
            }
        }
    }
}

fn count_parsed(report: &mut IndexReport, path: &str, parsed: bool) {
    if parsed {
        report.parsed += 1;
        if report.parsed_named.len() < MAX_NAMED {
            report.parsed_named.push(path.to_string());
        }
    }
}

/// `Type::method` or `Type.method` as (container, name).
fn split_qualified(name: &str) -> (Option<&str>, &str) {
    let name = name.trim();
    if let Some((container, last)) = name.rsplit_once("::") {
        return (Some(container.rsplit("::").next().unwrap_or(container)), last);
    }
    match name.rsplit_once('.') {
        Some((container, last)) if !container.is_empty() && !last.is_empty() => {
            (Some(container.rsplit('.').next().unwrap_or(container)), last)
        }
        _ => (None, name),
    }
}

/// The visible files in a known language, within the caps; counts the others.
fn choose(
    sandbox: &Sandbox,
    options: &IndexOptions,
    report: &mut IndexReport,
    not_indexed: &mut HashMap<String, String>,
) -> Vec<Chosen> {
    let visible = sandbox.visible_files();
    report.files_seen = visible.len();
    let mut chosen = Vec::new();
    let mut total: u64 = 0;
    for path in visible {
        let Some(lang) = language_of(&path) else {
            *report.other_languages.entry(extension(&path)).or_default() += 1;
            continue;
        };
        let left = &mut report.left_out;
        let mut leave = |why: String, left: &mut LeftOut| {
            if left.named.len() < MAX_NAMED {
                left.named.push(format!("{path} ({why})"));
            }
            not_indexed.insert(path.clone(), format!("left out: {why}"));
        };
        if chosen.len() >= options.max_files {
            left.over_file_cap += 1;
            leave(format!("past the cap of {} files", options.max_files), left);
            continue;
        }
        let stat = std::fs::symlink_metadata(sandbox.root().join(&path)).ok().map(|m| Stat::of(&m));
        let size = stat.map_or(0, |s| s.size);
        if size > options.max_file_bytes {
            left.too_large += 1;
            leave(format!("{size} bytes, over the cap of {}", options.max_file_bytes), left);
            continue;
        }
        if total + size > options.max_total_bytes {
            left.over_total_cap += 1;
            leave(format!("past the cap of {} bytes in all", options.max_total_bytes), left);
            continue;
        }
        total += size;
        chosen.push(Chosen { path, lang, stat });
    }
    chosen
}

/// Indexes every chosen file on a few threads; outcomes in the order of `chosen`.
fn index_files(
    sandbox: &Sandbox,
    chosen: &[Chosen],
    options: &IndexOptions,
    cache: Option<&Cache>,
    loaded: Option<&Loaded>,
) -> Vec<Outcome> {
    let threads = options
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .clamp(1, 16)
        .min(chosen.len().max(1));
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, Outcome)>> = Mutex::new(Vec::with_capacity(chosen.len()));
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                let mut mine = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(file) = chosen.get(i) else { break };
                    let known = loaded.and_then(|l| l.files.get(&file.path)).map(|r| (&r.known, r.stamp_ns));
                    let known = known.filter(|(known, _)| known.lang == file.lang);
                    mine.push((i, index_file(sandbox, file, options.max_file_bytes, cache, known)));
                }
                if let Ok(mut results) = results.lock() {
                    results.extend(mine);
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner());
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, outcome)| outcome).collect()
}

/// One file's outcome: from the record when its stat matches (not opened), else
/// read and hashed, then from the record when its blob matches, else from the
/// per-blob cache, else parsed (and cached).
fn index_file(
    sandbox: &Sandbox,
    file: &Chosen,
    cap: u64,
    cache: Option<&Cache>,
    known: Option<(&Known, u64)>,
) -> Outcome {
    if let Some((known, stamp_ns)) = known
        && known.unchanged(file.stat, stamp_ns)
        && let Some(outcome) = from_record(known, &file.path, Source::StatHit)
    {
        return outcome;
    }
    let content = match read_capped(sandbox, &file.path, cap) {
        Ok(content) => content,
        Err(skip) => return Outcome::new(Err(skip), Source::Parsed, None),
    };
    let Some(cache) = cache else { return Outcome::new(parse_source(&file.path, &content), Source::Parsed, None) };
    let blob = blob_id(&content);
    if let Some((known, _)) = known
        && known.blob == blob
        && let Some(outcome) = from_record(known, &file.path, Source::Record)
    {
        return outcome;
    }
    let mut corrupt = false;
    match cache.read(&blob, file.lang, &file.path) {
        Read::Hit(result) => return Outcome::new(result, Source::Cache, Some(blob)),
        Read::Corrupt => corrupt = true,
        Read::Miss => {}
    }
    let result = parse_source(&file.path, &content);
    let write_failed = cache.write(&blob, file.lang, &result).is_err();
    Outcome { result, source: Source::Parsed, blob: Some(blob), corrupt, write_failed }
}

/// The recorded outcome of a file at `path`; `None` when the record's entry is
/// corrupt (then the file is read as if unrecorded).
fn from_record(known: &Known, path: &str, source: Source) -> Option<Outcome> {
    let result = match &known.outcome {
        Ok(compact) => Ok(compact.to_symbols(path)?),
        Err(skip) => Err(skip.clone()),
    };
    Some(Outcome::new(result, source, Some(known.blob.clone())))
}

/// Writes the repository's record: nothing when every file was a stat hit of the
/// same set of files; a delta over the base when few files differ from it; else a
/// new base. A recorded file's packed symbols are moved over, not packed again.
fn save_record(
    record: &Record,
    stamp_ns: u64,
    chosen: &[Chosen],
    outcomes: &[Outcome],
    loaded: Option<Loaded>,
) -> std::io::Result<()> {
    let all_hits = outcomes.iter().all(|o| o.source == Source::StatHit);
    if all_hits && loaded.as_ref().is_some_and(|l| l.files.len() == chosen.len()) {
        return Ok(());
    }
    // Per file: whether it is recorded (stat and blob known), and whether the base
    // holds it as it is (a stat hit of a base entry).
    let kept: Vec<(bool, bool)> = chosen
        .iter()
        .zip(outcomes)
        .map(|(file, outcome)| {
            let in_base = outcome.source == Source::StatHit
                && loaded.as_ref().and_then(|l| l.files.get(&file.path)).is_some_and(|r| r.in_base);
            (file.stat.is_some() && outcome.blob.is_some(), in_base)
        })
        .collect();
    let changed = kept.iter().filter(|&&(recorded, in_base)| recorded && !in_base).count();
    let delta = Record::fits_delta(loaded.as_ref(), changed);
    let mut current = HashSet::with_capacity(chosen.len());
    let mut files = Vec::with_capacity(if delta { changed } else { chosen.len() });
    let mut old = loaded;
    for ((file, outcome), &(recorded, in_base)) in chosen.iter().zip(outcomes).zip(&kept) {
        if !recorded {
            continue;
        }
        current.insert(file.path.as_str());
        if delta && in_base {
            continue;
        }
        let recorded = old.as_mut().and_then(|l| l.files.remove(&file.path));
        let packed = match recorded {
            Some(r) if matches!(outcome.source, Source::Record | Source::StatHit) => r.known.outcome,
            _ => outcome.result.as_ref().map(Compact::from_symbols).map_err(Clone::clone),
        };
        let (Some(stat), Some(blob)) = (file.stat, &outcome.blob) else { continue };
        files.push(Known { path: file.path.clone(), lang: file.lang, stat, blob: blob.clone(), outcome: packed });
    }
    match old {
        Some(loaded) if delta => record.save_delta(stamp_ns, &loaded, files, &current),
        _ => record.save(stamp_ns, files),
    }
}

/// A listed file's bytes, through the sandbox (no symlink followed), at most `cap`.
fn read_capped(sandbox: &Sandbox, path: &str, cap: u64) -> Result<Vec<u8>, Skip> {
    let file = match sandbox.open_listed(path) {
        Ok(Opened::File(file)) => file,
        Ok(Opened::Dir) => return Err(Skip::Unreadable("a directory".to_string())),
        Err(refused) => return Err(Skip::Unreadable(refused.0)),
    };
    // Sized up front from the file's length, so the read is one copy, not a doubling
    // buffer's several.
    let length = file.metadata().map_err(|e| Skip::Unreadable(e.to_string()))?.len();
    if length > cap {
        return Err(Skip::TooLarge { bytes: length, cap });
    }
    let mut content = Vec::with_capacity(length as usize + 1);
    file.take(cap + 1).read_to_end(&mut content).map_err(|e| Skip::Unreadable(e.to_string()))?;
    if content.len() as u64 > cap {
        return Err(Skip::TooLarge { bytes: content.len() as u64, cap });
    }
    Ok(content)
}
