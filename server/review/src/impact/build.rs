//! Building a change's impact: both versions of each changed file (the base's from
//! git's objects, the head's through the tools' sandbox and the symbol index),
//! the functions the change touches in them (`changed.rs`), each one's callers and
//! tests in the head's index (`sites.rs`), within the caps (`caps.rs`). A file that
//! cannot be read or parsed on either side is skipped and counted, never an error.

use conclave_shared::ImpactSettings;
use conclave_symbols::{FileSymbols, Index, Skip, language_of, parse_source};
use std::collections::HashMap;
use std::io::Read as _;
use std::path::Path;

use super::caps::{Caps, Found, within_caps};
use super::changed::{Touched, Versions, touched_functions};
use super::model::{ChangeImpact, ChangeKind, Counts, ImpactFunction, ImpactRecord};
use super::sites::{is_test_definition, sites_of};
use crate::diff::ChangedFile;
use crate::tools::sandbox::{Opened, Sandbox};

/// The largest file read on either side; a larger one is skipped as too large.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// What the impact is built from.
#[derive(Debug, Clone, Copy)]
pub struct ImpactRequest<'a> {
    /// The repository root (the head's working tree).
    pub root: &'a Path,
    /// The commit the change starts from; `None` when there is none (every file new).
    pub base_commit: Option<&'a str>,
    /// The changed files.
    pub files: &'a [ChangedFile],
    /// The tools' allowlist, so the head is read as the tools read it.
    pub allow: &'a [String],
    pub settings: ImpactSettings,
}

/// Whether a change has a file in a language the symbol index parses (else its
/// impact needs no index).
pub fn has_code(files: &[ChangedFile]) -> bool {
    files.iter().any(|f| language_of(&f.path).is_some())
}

/// The change's impact, from the head's symbol `index` (`Err` says why there is
/// none; it is not read when no changed file is code). Runs git and reads files:
/// call it on a blocking thread.
pub fn build_impact(request: &ImpactRequest<'_>, index: Result<&Index, &str>) -> ChangeImpact {
    let mut record = ImpactRecord {
        max_entries: request.settings.entries() as u32,
        max_bytes: request.settings.bytes() as u32,
        ..ImpactRecord::default()
    };
    let code: Vec<&ChangedFile> = request.files.iter().filter(|f| language_of(&f.path).is_some()).collect();
    let other = request.files.len() - code.len();
    if other > 0 {
        record.skipped.insert("language".into(), other as u32);
    }
    if code.is_empty() {
        return ChangeImpact { impact: None, record };
    }
    let index = match index {
        Ok(index) => index,
        Err(why) => return without_impact(request.settings, format!("the symbol index could not be built: {why}")),
    };
    let sandbox = Sandbox::new(request.root, request.allow).ok();
    let renamed = renames(request.root, request.base_commit);
    let old_paths: Vec<&str> =
        code.iter().map(|f| renamed.get(&f.path).map_or(f.path.as_str(), String::as_str)).collect();
    let bases = base_versions(request, &code, &old_paths);
    let mut found = Vec::new();
    for ((file, old_path), base) in code.iter().zip(&old_paths).zip(bases) {
        let head = head_version(file, sandbox.as_ref(), index);
        let (base, head) = match (base, head) {
            (Err(skip), _) | (_, Err(skip)) => {
                *record.skipped.entry(skip.reason().to_string()).or_default() += 1;
                continue;
            }
            (Ok(base), Ok(head)) => (base, head),
        };
        record.files += 1;
        let versions = Versions {
            base: base.as_ref().map(|(text, symbols)| (text.as_str(), symbols)),
            head: head.as_ref().map(|(text, symbols)| (text.as_str(), symbols)),
        };
        for touched in touched_functions(versions) {
            found.push(found_function(touched, old_path, index));
        }
    }
    record.found = Counts {
        functions: found.len() as u32,
        callers: found.iter().map(|f| f.callers.len() as u32).sum(),
        tests: found.iter().map(|f| f.tests.len() as u32).sum(),
    };
    let caps = Caps { entries: request.settings.entries(), bytes: request.settings.bytes() };
    let (impact, given) = within_caps(found, caps);
    record.given = given;
    record.bytes = serde_json::to_vec(&impact).map_or(0, |v| v.len() as u32);
    let impact = (!impact.functions.is_empty()).then_some(impact);
    if impact.is_none() {
        record.bytes = 0;
    }
    ChangeImpact { impact, record }
}

/// The impact of a review whose impact is off, or whose index could not be built.
pub fn without_impact(settings: ImpactSettings, why: String) -> ChangeImpact {
    let record = ImpactRecord {
        max_entries: settings.entries() as u32,
        max_bytes: settings.bytes() as u32,
        off: Some(why),
        ..ImpactRecord::default()
    };
    ChangeImpact { impact: None, record }
}

/// A touched function with its callers and tests.
fn found_function(touched: Touched, old_path: &str, index: &Index) -> Found {
    let removed = touched.change == ChangeKind::Removed;
    let mut definition = touched.definition;
    if removed {
        // A removed function is where the base had it.
        definition.file = old_path.into();
    }
    let sites = sites_of(&definition, removed, index);
    let function = ImpactFunction {
        kind: definition.kind.name().to_string(),
        test: is_test_definition(&definition),
        name: definition.name.to_string(),
        container: definition.container.as_deref().map(str::to_string),
        file: definition.file.to_string(),
        lines: [definition.start_line, definition.end_line],
        change: touched.change,
        changed_lines: touched.changed_lines,
        signature: definition.signature.to_string(),
        callers: Vec::new(),
        tests: Vec::new(),
        more: 0,
    };
    Found { function, callers: sites.callers, tests: sites.tests }
}

/// A side of a file: `Ok(None)` when the file is not on that side.
type Side = Result<Option<(String, FileSymbols)>, Skip>;

/// The base version of each file, read with one `git cat-file --batch`.
fn base_versions(request: &ImpactRequest<'_>, code: &[&ChangedFile], old_paths: &[&str]) -> Vec<Side> {
    let Some(commit) = request.base_commit else { return code.iter().map(|_| Ok(None)).collect() };
    let names: Vec<String> = old_paths.iter().map(|p| format!("{commit}:{p}")).collect();
    // A name with a line break cannot be asked for in a batch: such a file is unreadable.
    let askable: Vec<&str> = names.iter().filter(|n| !n.contains(['\n', '\r'])).map(String::as_str).collect();
    let mut blobs = match crate::configuration::snapshot::cat_blobs(request.root, &askable) {
        Ok(blobs) => blobs.into_iter(),
        Err(e) => return code.iter().map(|_| Err(Skip::Unreadable(e.to_string()))).collect(),
    };
    code.iter()
        .zip(old_paths)
        .zip(&names)
        .map(|((file, old_path), name)| {
            if name.contains(['\n', '\r']) {
                return Err(Skip::Unreadable("a path with a line break".into()));
            }
            match blobs.next().flatten() {
                _ if file.status == "added" => Ok(None),
                Some(bytes) => parsed(old_path, bytes).map(Some),
                None => Ok(None),
            }
        })
        .collect()
}

/// The head version of a file: its text through the sandbox, its symbols from the
/// index (parsed here when the index left it out, which says why).
fn head_version(file: &ChangedFile, sandbox: Option<&Sandbox>, index: &Index) -> Side {
    if file.status == "deleted" {
        return Ok(None);
    }
    let sandbox = sandbox.ok_or_else(|| Skip::Unreadable("the repository cannot be opened".into()))?;
    let bytes = read_capped(sandbox, &file.path)?;
    match index.file(&file.path) {
        Some(symbols) => {
            let text = String::from_utf8(bytes).map_err(|_| Skip::InvalidUtf8)?;
            Ok(Some((text, symbols.clone())))
        }
        None => parsed(&file.path, bytes).map(Some),
    }
}

/// A file's text and symbols, or why it has none.
fn parsed(path: &str, bytes: Vec<u8>) -> Result<(String, FileSymbols), Skip> {
    let symbols = parse_source(path, &bytes)?;
    let text = String::from_utf8(bytes).map_err(|_| Skip::InvalidUtf8)?;
    Ok((text, symbols))
}

/// A file's bytes through the sandbox (no symlink followed, nothing hidden read), at
/// most [`MAX_FILE_BYTES`].
fn read_capped(sandbox: &Sandbox, path: &str) -> Result<Vec<u8>, Skip> {
    let file = match sandbox.open_listed(path) {
        Ok(Opened::File(file)) => file,
        Ok(Opened::Dir) => return Err(Skip::Unreadable("a directory".into())),
        Err(refused) => return Err(Skip::Unreadable(refused.0)),
    };
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes).map_err(|e| Skip::Unreadable(e.to_string()))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(Skip::TooLarge { bytes: bytes.len() as u64, cap: MAX_FILE_BYTES });
    }
    Ok(bytes)
}

/// The renamed files of the change, new path to old, as git finds them between the
/// base commit and the working tree.
fn renames(root: &Path, base_commit: Option<&str>) -> HashMap<String, String> {
    let Some(commit) = base_commit else { return HashMap::new() };
    let args = ["diff", "-z", "--name-status", "--find-renames", "--diff-filter=R", "--end-of-options", commit, "--"];
    let Ok(out) = crate::diff::git(root, &args) else { return HashMap::new() };
    let fields: Vec<&str> = out.split('\0').collect();
    let mut renamed = HashMap::new();
    let mut i = 0;
    while i + 2 < fields.len() {
        if fields[i].starts_with('R') {
            renamed.insert(fields[i + 2].to_string(), fields[i + 1].to_string());
            i += 3;
        } else {
            i += 2;
        }
    }
    renamed
}
