//! Confinement to a repository root: every path a model asks for is resolved
//! (symlinks included) and must land inside the root, on a regular file or a
//! directory. Anything else is refused with a message the model can act on.

use std::path::{Component, Path, PathBuf};

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

/// A repository root that paths are confined to.
#[derive(Debug, Clone)]
pub struct Sandbox {
    root: PathBuf,
}

/// Why a path was refused; the text is shown to the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

impl Sandbox {
    /// A sandbox rooted at `root` (resolved to its canonical form).
    pub fn new(root: &Path) -> std::io::Result<Sandbox> {
        Ok(Sandbox { root: root.canonicalize()? })
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves `requested` (relative to the root, or absolute inside it) to a
    /// canonical path inside the root.
    pub fn resolve(&self, requested: &str) -> Result<PathBuf, Refused> {
        let shown = requested.escape_debug().to_string();
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
        if path.is_absolute() && SYSTEM_TREES.iter().any(|t| path.starts_with(t)) {
            return Err(Refused(format!(
                "`{shown}` is a system path outside the repository; paths are relative to the repository root"
            )));
        }
        let joined = if path.is_absolute() { path.to_path_buf() } else { self.root.join(path) };
        let lexical_escape = !path.is_absolute()
            && path
                .components()
                .try_fold(0i32, |depth, c| match c {
                    Component::ParentDir if depth == 0 => None,
                    Component::ParentDir => Some(depth - 1),
                    Component::Normal(_) => Some(depth + 1),
                    _ => Some(depth),
                })
                .is_none();
        if lexical_escape {
            return Err(Refused(format!(
                "`{shown}` climbs out of the repository with `..`; paths are relative to the repository root"
            )));
        }
        let canonical = joined.canonicalize().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Refused(format!("`{shown}` does not exist in the repository")),
            _ => Refused(format!("`{shown}` cannot be opened: {e}")),
        })?;
        if !canonical.starts_with(&self.root) {
            let why = if path.is_absolute() {
                "is outside the repository"
            } else {
                "leads outside the repository (through a symlink)"
            };
            return Err(Refused(format!("`{shown}` {why}; only files under the repository root can be read")));
        }
        if SYSTEM_TREES.iter().any(|t| canonical.starts_with(t)) {
            return Err(Refused(format!("`{shown}` resolves to a system path")));
        }
        let meta = std::fs::metadata(&canonical).map_err(|e| Refused(format!("`{shown}` cannot be opened: {e}")))?;
        if !meta.is_file() && !meta.is_dir() {
            return Err(Refused(format!("`{shown}` is not a regular file (a device, socket or pipe)")));
        }
        Ok(canonical)
    }

    /// `path` relative to the root, with `/` separators, for display.
    pub fn relative(&self, path: &Path) -> String {
        path.strip_prefix(&self.root).unwrap_or(path).to_string_lossy().replace('\\', "/")
    }
}
