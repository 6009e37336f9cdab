//! The base side's configuration files, copied out of git's objects into a private
//! directory: the files of one commit that [`Layout::wanted`] names, written at
//! their repository paths, so that the catalog, the schema search and the rules
//! reader read them as they read a working tree, and never see the change's edits.
//!
//! Only regular files are copied, each at most [`MAX_FILE_BYTES`]; a submodule is left
//! out, and so is a symlink, but for a rules file's: it is made again as the same
//! symlink, which the rules reader refuses with its usual note (it never follows one).

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::layout::Layout;
use super::source::ConfigKind;
use crate::diff::ChangeError;

/// The largest configuration file copied; a larger one is left out (a conclave,
/// schema or rules file is never near this).
pub const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// The copy of one commit's configuration files, removed when dropped.
#[derive(Debug)]
pub struct Snapshot {
    dir: tempfile::TempDir,
    commit: String,
}

/// One entry of `git ls-tree`: its mode, object id and path.
struct TreeEntry {
    mode: String,
    object: String,
    path: String,
}

impl Snapshot {
    /// Copies the files `layout` wants from `commit` (a full hash) of the repository
    /// at `root`. Runs git: call it on a blocking thread.
    pub fn extract(root: &Path, commit: &str, layout: &Layout) -> Result<Snapshot, ChangeError> {
        let entries: Vec<TreeEntry> = tree(root, commit)?.into_iter().filter(|e| is_plain_relative(&e.path)).collect();
        let regular = |e: &&TreeEntry| (e.mode == "100644" || e.mode == "100755") && layout.wanted(&e.path);
        let linked_rules = |e: &&TreeEntry| e.mode == "120000" && layout.kind_of(&e.path) == Some(ConfigKind::Rules);
        let wanted: Vec<&TreeEntry> = entries.iter().filter(|e| regular(e) || linked_rules(e)).collect();
        let dir = tempfile::Builder::new()
            .prefix("conclave-base-")
            .tempdir()
            .map_err(|e| git_error("cat-file", format!("cannot make a directory for the base's configuration: {e}")))?;
        let objects: Vec<&str> = wanted.iter().map(|e| e.object.as_str()).collect();
        let blobs = cat_blobs(root, &objects)?;
        for (entry, blob) in wanted.iter().zip(blobs) {
            let Some(bytes) = blob else { continue };
            let target = dir.path().join(&entry.path);
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent).map_err(|e| io_error(&target, e))?;
            }
            if entry.mode == "120000" {
                let link = PathBuf::from(String::from_utf8_lossy(&bytes).into_owned());
                std::os::unix::fs::symlink(link, &target).map_err(|e| io_error(&target, e))?;
            } else {
                std::fs::write(&target, bytes).map_err(|e| io_error(&target, e))?;
            }
        }
        Ok(Snapshot { dir, commit: commit.to_string() })
    }

    /// The copy's root: the repository root as the commit has it.
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// The commit copied.
    pub fn commit(&self) -> &str {
        &self.commit
    }

    /// Where a repository-relative path lies in the copy.
    pub fn path(&self, relative: &str) -> PathBuf {
        self.dir.path().join(relative)
    }
}

/// Whether a tree path stays inside the copy: relative, no `..`, `.` or empty
/// component, and no `.git` (git refuses such trees, but a crafted object may hold one).
fn is_plain_relative(path: &str) -> bool {
    !path.starts_with('/') && path.split('/').all(|c| !matches!(c, "" | "." | "..") && !c.eq_ignore_ascii_case(".git"))
}

/// Every entry of `commit`'s tree, recursively, paths exact (`-z`).
fn tree(root: &Path, commit: &str) -> Result<Vec<TreeEntry>, ChangeError> {
    let out = git(root, &["ls-tree", "-r", "-z", "--full-tree", "--end-of-options", commit], None)?;
    let mut entries = Vec::new();
    for record in out.split(|&b| b == 0).filter(|r| !r.is_empty()) {
        let record = String::from_utf8_lossy(record);
        // `<mode> SP <type> SP <object> TAB <path>`
        let Some((meta, path)) = record.split_once('\t') else { continue };
        let mut words = meta.split(' ');
        let (Some(mode), Some(_kind), Some(object)) = (words.next(), words.next(), words.next()) else { continue };
        entries.push(TreeEntry { mode: mode.to_string(), object: object.to_string(), path: path.to_string() });
    }
    Ok(entries)
}

/// The contents of `objects` (object ids, or `<commit>:<path>` names), in order, read
/// with one `git cat-file --batch`; a blob larger than [`MAX_FILE_BYTES`], and an
/// object the repository does not have, is `None`. Runs git: call it on a blocking
/// thread.
pub(crate) fn cat_blobs(root: &Path, objects: &[&str]) -> Result<Vec<Option<Vec<u8>>>, ChangeError> {
    if objects.is_empty() {
        return Ok(Vec::new());
    }
    let mut input = objects.join("\n");
    input.push('\n');
    let out = git(root, &["cat-file", "--batch"], Some(input.as_bytes()))?;
    let mut reader = BufReader::new(out.as_slice());
    let mut blobs = Vec::with_capacity(objects.len());
    for object in objects {
        let mut header = String::new();
        reader.read_line(&mut header).map_err(|e| git_error("cat-file --batch", e.to_string()))?;
        if header.trim_end().ends_with(" missing") || header.trim_end().ends_with(" ambiguous") {
            blobs.push(None);
            continue;
        }
        // `<object> SP <type> SP <size> LF <contents> LF`
        let size: u64 = header.split_whitespace().nth(2).and_then(|s| s.parse().ok()).ok_or_else(|| {
            git_error("cat-file --batch", format!("unexpected answer for {object}: {}", header.trim()))
        })?;
        let mut contents = vec![0u8; usize::try_from(size).unwrap_or(usize::MAX)];
        reader.read_exact(&mut contents).map_err(|e| git_error("cat-file --batch", e.to_string()))?;
        let mut newline = [0u8; 1];
        reader.read_exact(&mut newline).map_err(|e| git_error("cat-file --batch", e.to_string()))?;
        blobs.push((size <= MAX_FILE_BYTES).then_some(contents));
    }
    Ok(blobs)
}

/// Runs git in `root` with `stdin` fed, returning its standard output.
fn git(root: &Path, args: &[&str], stdin: Option<&[u8]>) -> Result<Vec<u8>, ChangeError> {
    let command = args.first().copied().unwrap_or("git").to_string();
    let mut child = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .env("LC_ALL", "C")
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| git_error(&command, format!("cannot run git: {e}")))?;
    // The input is written from another thread so that a large answer cannot block
    // git while the input is still being written.
    let writer = match (stdin, child.stdin.take()) {
        (Some(bytes), Some(mut pipe)) => {
            let bytes = bytes.to_vec();
            Some(std::thread::spawn(move || pipe.write_all(&bytes)))
        }
        _ => None,
    };
    let out = child.wait_with_output().map_err(|e| git_error(&command, e.to_string()))?;
    if let Some(writer) = writer {
        let written = writer.join().map_err(|_| git_error(&command, "the writing thread stopped".into()))?;
        written.map_err(|e| git_error(&command, format!("cannot write to git: {e}")))?;
    }
    if !out.status.success() {
        return Err(git_error(&command, String::from_utf8_lossy(&out.stderr).trim().to_string()));
    }
    Ok(out.stdout)
}

fn git_error(command: &str, message: String) -> ChangeError {
    ChangeError::Git { command: command.to_string(), message }
}

fn io_error(path: &Path, e: std::io::Error) -> ChangeError {
    git_error("cat-file", format!("cannot write {}: {e}", path.display()))
}
