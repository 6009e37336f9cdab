//! Confinement to a repository root. Every path a model asks for is checked as text
//! (NUL bytes, look-alike separators, system trees, `..` escapes), then opened one
//! component at a time from a handle on the root without ever letting the kernel
//! follow a symlink: a symlink is read and resolved here, and only when its target
//! stays inside the root. What is opened is what was checked, so swapping a file for
//! a symlink between the check and the read cannot leak anything.
//!
//! Only the files `list_files` shows may be read: never `.git/`, never a gitignored
//! file, unless the allowlist (globs relative to the root) names it.

use cap_fs_ext::{DirExt, FollowSymlinks, OpenOptionsFollowExt};
use cap_std::fs::{Dir, OpenOptions, OpenOptionsExt};
use globset::{Glob, GlobSet, GlobSetBuilder};
use std::collections::BTreeSet;
use std::io::ErrorKind;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// Characters that look like a path separator or a dot, used to disguise `..` or `/`.
const LOOK_ALIKES: &[char] = &[
    '\u{2215}', // division slash
    '\u{2044}', // fraction slash
    '\u{FF0F}', // fullwidth solidus
    '\u{29F8}', // big solidus
    '\u{2216}', // set minus
    '\u{FF3C}', // fullwidth reverse solidus
    '\u{FF0E}', // fullwidth full stop
    '\u{2024}', // one dot leader
    '\u{2025}', // two dot leader
    '\u{FE52}', // small full stop
    '\u{3002}', // ideographic full stop
];

/// Trees outside any repository that must never be read, whatever the root.
const SYSTEM_TREES: &[&str] = &["/proc", "/sys", "/dev"];

/// How many symlinks one path may pass through.
const MAX_SYMLINKS: usize = 8;

/// A repository root that paths are confined to.
#[derive(Debug, Clone)]
pub struct Sandbox {
    root: PathBuf,
    dir: Arc<Dir>,
    allow: Arc<GlobSet>,
}

/// Why a path was refused; the text is shown to the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

/// What a path opened to.
#[derive(Debug)]
pub enum Opened {
    /// A regular file, open for reading.
    File(std::fs::File),
    /// A directory.
    Dir,
}

impl Sandbox {
    /// A sandbox rooted at `root`; `allow` are globs (relative to the root) of files
    /// that may be read even though they are in `.git/` or ignored.
    pub fn new(root: &Path, allow: &[String]) -> std::io::Result<Sandbox> {
        let root = root.canonicalize()?;
        let dir = Dir::open_ambient_dir(&root, cap_std::ambient_authority())?;
        let mut globs = GlobSetBuilder::new();
        for pattern in allow {
            let glob = Glob::new(pattern).map_err(|e| {
                std::io::Error::new(ErrorKind::InvalidInput, format!("`{pattern}` is not a valid glob: {e}"))
            })?;
            globs.add(glob);
        }
        let allow = globs.build().map_err(|e| std::io::Error::new(ErrorKind::InvalidInput, e.to_string()))?;
        Ok(Sandbox { root, dir: Arc::new(dir), allow: Arc::new(allow) })
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Opens `requested` (relative to the root, or absolute inside it) for reading;
    /// returns the path it resolved to, relative to the root, and what it is.
    pub fn open(&self, requested: &str) -> Result<(String, Opened), Refused> {
        let (name, opened) = self.open_unlisted(requested)?;
        self.check_visible(&name, &requested.escape_debug().to_string())?;
        Ok((name, opened))
    }

    /// Opens a path taken from [`Sandbox::visible_files`], without asking again
    /// whether it is visible; it is still opened without following symlinks.
    pub fn open_listed(&self, relative: &str) -> Result<Opened, Refused> {
        self.open_unlisted(relative).map(|(_, opened)| opened)
    }

    /// Opens a file the repository itself designates (a rules file, relative to the
    /// root) without following any symlink, even one that stays inside the root: a
    /// symlink on the way or at the end is refused, saying whether it leads outside.
    /// `.git/`, ignored files and special files are refused as [`Sandbox::open`]
    /// refuses them; `None` when there is nothing at that path.
    pub fn open_unlinked(&self, relative: &str) -> Result<Option<Opened>, Refused> {
        let shown = relative.escape_debug().to_string();
        let components = self.lexical(relative, &shown)?;
        let opened = match self.open_relative(&components, &shown) {
            Ok(Step::Done(opened)) => opened,
            Ok(Step::Symlink { at, target }) => {
                let link = join(&components[..=at]);
                let whither = match self.follow(&components, at, &target, &shown) {
                    Ok(_) => "a symlink",
                    Err(_) => "a symlink leading outside the repository",
                };
                return Err(Refused(format!(
                    "`{link}` is {whither}; rules files are read only as regular files of the repository, never through a symlink"
                )));
            }
            Ok(Step::Missing) => return Ok(None),
            Err(refused) => return Err(refused),
        };
        self.check_visible(&join(&components), &shown)?;
        Ok(Some(opened))
    }

    fn open_unlisted(&self, requested: &str) -> Result<(String, Opened), Refused> {
        let shown = requested.escape_debug().to_string();
        let mut relative = self.lexical(requested, &shown)?;
        for _ in 0..=MAX_SYMLINKS {
            match self.open_relative(&relative, &shown)? {
                Step::Done(opened) => return Ok((join(&relative), opened)),
                Step::Missing => return Err(Refused(format!("`{shown}` does not exist in the repository"))),
                Step::Symlink { at, target } => relative = self.follow(&relative, at, &target, &shown)?,
            }
        }
        Err(Refused(format!("`{shown}` passes through more than {MAX_SYMLINKS} symlinks")))
    }

    /// Every file the tools may read, relative to the root, in path order: the files
    /// a walk honouring `.gitignore` finds (never `.git/`, never a symlink), and the
    /// allowlisted ones. Walked afresh each time, so it follows the working tree.
    pub fn visible_files(&self) -> BTreeSet<String> {
        let mut files: BTreeSet<String> = self
            .walker(&self.root)
            .build()
            .flatten()
            .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
            .map(|e| self.relative(e.path()))
            .collect();
        if !self.allow.is_empty() {
            files.extend(walkdir(&self.root).into_iter().filter(|f| self.allow.is_match(f)));
        }
        files
    }

    /// Whether the walk of `list_files` shows `name` (a file or directory relative to
    /// the root). Each directory on the way is listed alone, with the ignore files of
    /// it and its parents applied, so the answer agrees with a whole walk: an ignored
    /// directory hides everything under it.
    fn walk_shows(&self, name: &str) -> bool {
        let mut parent = String::new();
        for component in name.split('/') {
            let child = if parent.is_empty() { component.to_string() } else { format!("{parent}/{component}") };
            let listed = self
                .walker(&self.root.join(&parent))
                .max_depth(Some(1))
                .build()
                .flatten()
                .any(|e| e.depth() == 1 && self.relative(e.path()) == child);
            if !listed {
                return false;
            }
            parent = child;
        }
        true
    }

    fn walker(&self, dir: &Path) -> ignore::WalkBuilder {
        let mut walk = ignore::WalkBuilder::new(dir);
        walk.hidden(false).follow_links(false).git_global(false).filter_entry(|e| e.file_name() != ".git");
        walk
    }

    /// `path` relative to the root, with `/` separators, for display.
    pub fn relative(&self, path: &Path) -> String {
        path.strip_prefix(&self.root).unwrap_or(path).to_string_lossy().replace('\\', "/")
    }

    /// The path as components under the root, checked as text only.
    fn lexical(&self, requested: &str, shown: &str) -> Result<Vec<String>, Refused> {
        if requested.trim().is_empty() {
            return Err(Refused("the path is empty; give a path relative to the repository root".into()));
        }
        if requested.contains('\0') {
            return Err(Refused(format!("`{shown}` contains a NUL byte")));
        }
        if let Some(c) = requested.chars().find(|c| LOOK_ALIKES.contains(c)) {
            return Err(Refused(format!(
                "`{shown}` contains {c:?} (U+{:04X}), which looks like a path separator or dot; use plain `/` and `.`",
                c as u32
            )));
        }
        let path = Path::new(requested);
        if path.is_absolute() {
            if SYSTEM_TREES.iter().any(|t| path.starts_with(t)) {
                return Err(Refused(format!(
                    "`{shown}` is a system path outside the repository; paths are relative to the repository root"
                )));
            }
            let inside = path.strip_prefix(&self.root).map_err(|_| {
                Refused(format!(
                    "`{shown}` is outside the repository; only files under the repository root can be read"
                ))
            })?;
            return normalize(inside).ok_or_else(|| climbs(shown));
        }
        normalize(path).ok_or_else(|| climbs(shown))
    }

    /// Opens `components` from the root, one directory at a time, never following a
    /// symlink; stops at the first symlink met.
    fn open_relative(&self, components: &[String], shown: &str) -> Result<Step, Refused> {
        let cannot = |e: std::io::Error| Refused(format!("`{shown}` cannot be opened: {e}"));
        // What is missing (or a file where a directory should be) is no refusal: the
        // caller says what it means for it.
        let missing = |e: &std::io::Error| matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory);
        let Some((last, parents)) = components.split_last() else { return Ok(Step::Done(Opened::Dir)) };
        let mut dir = self.dir.try_clone().map_err(cannot)?;
        for (at, name) in parents.iter().enumerate() {
            if is_symlink(&dir, name) {
                let target = dir.read_link_contents(name).map_err(cannot)?;
                return Ok(Step::Symlink { at, target });
            }
            dir = match dir.open_dir_nofollow(name) {
                Ok(dir) => dir,
                Err(e) if missing(&e) => return Ok(Step::Missing),
                Err(e) => return Err(cannot(e)),
            };
        }
        if is_symlink(&dir, last) {
            let target = dir.read_link_contents(last).map_err(cannot)?;
            return Ok(Step::Symlink { at: parents.len(), target });
        }
        let mut options = OpenOptions::new();
        // Non-blocking, so a FIFO swapped in cannot hang the read; it is refused below.
        options.read(true).follow(FollowSymlinks::No).custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
        let file = match dir.open_with(last, &options) {
            Ok(file) => file,
            Err(e) if missing(&e) => return Ok(Step::Missing),
            Err(e) => return Err(cannot(e)),
        };
        let meta = file.metadata().map_err(cannot)?;
        if meta.is_dir() {
            Ok(Step::Done(Opened::Dir))
        } else if meta.is_file() {
            Ok(Step::Done(Opened::File(file.into_std())))
        } else {
            Err(Refused(format!("`{shown}` is not a regular file (a device, socket or pipe)")))
        }
    }

    /// The components once the symlink at component `at` is replaced by its target.
    fn follow(&self, components: &[String], at: usize, target: &Path, shown: &str) -> Result<Vec<String>, Refused> {
        let outside = || {
            Refused(format!(
                "`{shown}` leads outside the repository (through a symlink); only files under the repository root can be read"
            ))
        };
        let mut resolved = if target.is_absolute() {
            normalize(target.strip_prefix(&self.root).map_err(|_| outside())?).ok_or_else(outside)?
        } else {
            normalize(&components[..at].iter().collect::<PathBuf>().join(target)).ok_or_else(outside)?
        };
        resolved.extend(components[at + 1..].iter().cloned());
        Ok(resolved)
    }

    /// Refuses what the tools do not show: `.git/` and ignored files or directories.
    fn check_visible(&self, name: &str, shown: &str) -> Result<(), Refused> {
        if self.allow.is_match(name) {
            return Ok(());
        }
        if name.split('/').any(|c| c == ".git") {
            return Err(Refused(format!(
                "`{shown}` is inside `.git/`, which the tools do not read (it holds credentials in CI)"
            )));
        }
        if name.is_empty() || self.walk_shows(name) {
            Ok(())
        } else {
            Err(Refused(format!(
                "`{shown}` is ignored by the repository's .gitignore, so the tools do not read it; list_files shows what they read"
            )))
        }
    }
}

/// Where opening a path got to.
enum Step {
    /// The path opened.
    Done(Opened),
    /// Component `at` is a symlink to `target`.
    Symlink { at: usize, target: PathBuf },
    /// Nothing is there.
    Missing,
}

fn is_symlink(dir: &Dir, name: &str) -> bool {
    dir.symlink_metadata(name).is_ok_and(|m| m.file_type().is_symlink())
}

fn climbs(shown: &str) -> Refused {
    Refused(format!("`{shown}` climbs out of the repository with `..`; paths are relative to the repository root"))
}

/// The components of a relative path with `.` and `..` applied, or `None` when `..`
/// would climb above the start.
fn normalize(path: &Path) -> Option<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(name) => out.push(name.to_string_lossy().into_owned()),
            Component::ParentDir => {
                out.pop()?;
            }
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

fn join(components: &[String]) -> String {
    components.join("/")
}

/// Every regular file under `root` (not following symlinks, skipping `.git/`
/// internals only when no allowlist asks for them), relative to the root.
fn walkdir(root: &Path) -> Vec<String> {
    let walk = ignore::WalkBuilder::new(root).standard_filters(false).follow_links(false).build();
    walk.flatten()
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .map(|e| e.path().strip_prefix(root).unwrap_or(e.path()).to_string_lossy().replace('\\', "/"))
        .collect()
}
