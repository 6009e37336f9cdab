//! A command's scratch directory: made before it starts (private to Conclave's user,
//! in the system's temporary directory), the only place it may write, its `HOME` and
//! its `TMPDIR`, and removed with everything in it when the [`Scratch`] is dropped.

use std::path::Path;

/// A scratch directory, removed when dropped.
#[derive(Debug)]
pub struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    /// Makes a scratch directory whose name starts with `label` (a node id; characters
    /// other than letters, digits, `-` and `_` become `-`).
    pub fn create(label: &str) -> std::io::Result<Scratch> {
        let label: String =
            label.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '-' }).collect();
        let dir = tempfile::Builder::new().prefix(&format!("conclave-{label}-")).tempdir()?;
        Ok(Scratch { dir })
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}
