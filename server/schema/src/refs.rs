//! Dotted schema references (`review.findings.v1`) and where they resolve.
//!
//! `a.b.c.v1` names the file `a/b/c/v1.schema.json`, searched in order in the
//! workspace (`conclaves/schemas/`), the user config directory
//! (`$CONCLAVE_CONFIG_DIR/schemas` or the platform config dir's `conclave/schemas`),
//! and finally the built-in set compiled into the binary.

use serde_json::Value;
use std::fmt;
use std::path::{Path, PathBuf};

/// Schemas compiled into the binary, by reference.
const BUILTIN: &[(&str, &str)] = &[
    ("review.findings.v1", include_str!("../schemas/review/findings/v1.schema.json")),
    ("review.verified.v1", include_str!("../schemas/review/verified/v1.schema.json")),
];

/// Where a resolved schema came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchemaSource {
    /// A file on disk.
    File(PathBuf),
    /// Compiled into the binary.
    Builtin,
}

impl fmt::Display for SchemaSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchemaSource::File(p) => write!(f, "{}", p.display()),
            SchemaSource::Builtin => f.write_str("built-in"),
        }
    }
}

/// A schema found for a reference.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedSchema {
    /// The reference as written.
    pub reference: String,
    /// The schema document.
    pub schema: Value,
    /// Where it was found.
    pub source: SchemaSource,
}

/// Why a reference did not resolve.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RefError {
    /// The reference is not of the form `segment.segment[...]` with lowercase segments.
    #[error("`{0}` is not a schema reference: use dot-separated lowercase segments such as `review.findings.v1`")]
    Malformed(String),
    /// No search root has the file.
    #[error(
        "schema reference `{reference}` not found; looked for {relative} in {searched}, and among the built-in schemas"
    )]
    NotFound {
        /// The reference.
        reference: String,
        /// The relative file name it maps to.
        relative: String,
        /// The directories searched, comma-separated.
        searched: String,
    },
    /// The file exists but is not JSON.
    #[error("schema file {path} is not valid JSON: {message}")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

/// The ordered search roots for schema references.
#[derive(Debug, Clone)]
pub struct SchemaCatalog {
    roots: Vec<PathBuf>,
}

impl SchemaCatalog {
    /// The standard search order for a workspace rooted at `workspace`.
    pub fn for_workspace(workspace: &Path) -> SchemaCatalog {
        let mut roots = vec![workspace.join("conclaves").join("schemas")];
        if let Some(dir) = user_config_dir() {
            roots.push(dir.join("schemas"));
        }
        SchemaCatalog { roots }
    }

    /// A catalog with exactly these roots (then the built-ins).
    pub fn with_roots(roots: Vec<PathBuf>) -> SchemaCatalog {
        SchemaCatalog { roots }
    }

    /// The directories searched before the built-ins.
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// Finds the schema a dotted reference names.
    pub fn resolve(&self, reference: &str) -> Result<ResolvedSchema, RefError> {
        let relative = relative_path(reference)?;
        for root in &self.roots {
            let path = root.join(&relative);
            match std::fs::read_to_string(&path) {
                Ok(text) => {
                    let schema = serde_json::from_str(&text)
                        .map_err(|e| RefError::Unreadable { path: path.clone(), message: e.to_string() })?;
                    return Ok(ResolvedSchema {
                        reference: reference.to_string(),
                        schema,
                        source: SchemaSource::File(path),
                    });
                }
                Err(_) => continue,
            }
        }
        if let Some((_, text)) = BUILTIN.iter().find(|(name, _)| *name == reference) {
            let schema = serde_json::from_str(text).map_err(|e| RefError::Unreadable {
                path: PathBuf::from(format!("<built-in {reference}>")),
                message: e.to_string(),
            })?;
            return Ok(ResolvedSchema { reference: reference.to_string(), schema, source: SchemaSource::Builtin });
        }
        Err(RefError::NotFound {
            reference: reference.to_string(),
            relative: relative.display().to_string(),
            searched: self.roots.iter().map(|r| r.display().to_string()).collect::<Vec<_>>().join(", "),
        })
    }

    /// Every reference available: files under each root, then the built-ins, without repeats.
    pub fn list(&self) -> Vec<(String, SchemaSource)> {
        let mut found: Vec<(String, SchemaSource)> = Vec::new();
        for root in &self.roots {
            let mut files = Vec::new();
            collect_schema_files(root, &mut files);
            files.sort();
            for file in files {
                if let Some(reference) = reference_for(root, &file)
                    && !found.iter().any(|(r, _)| r == &reference)
                {
                    found.push((reference, SchemaSource::File(file)));
                }
            }
        }
        for (name, _) in BUILTIN {
            if !found.iter().any(|(r, _)| r == name) {
                found.push((name.to_string(), SchemaSource::Builtin));
            }
        }
        found
    }
}

/// The user config directory for Conclave: `$CONCLAVE_CONFIG_DIR`, else the platform's.
pub fn user_config_dir() -> Option<PathBuf> {
    match std::env::var_os("CONCLAVE_CONFIG_DIR") {
        Some(dir) if !dir.is_empty() => Some(PathBuf::from(dir)),
        _ => dirs::config_dir().map(|d| d.join("conclave")),
    }
}

/// Maps `a.b.v1` to `a/b/v1.schema.json`, refusing anything that could leave a root.
fn relative_path(reference: &str) -> Result<PathBuf, RefError> {
    let segments: Vec<&str> = reference.split('.').collect();
    let well_formed = segments.len() >= 2
        && segments.iter().all(|s| {
            !s.is_empty() && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
        });
    if !well_formed {
        return Err(RefError::Malformed(reference.to_string()));
    }
    let mut path = PathBuf::new();
    let (last, dirs) = segments.split_last().ok_or_else(|| RefError::Malformed(reference.to_string()))?;
    for d in dirs {
        path.push(d);
    }
    path.push(format!("{last}.schema.json"));
    Ok(path)
}

fn reference_for(root: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(root).ok()?;
    let text = rel.to_str()?.strip_suffix(".schema.json")?;
    let reference = text.replace(std::path::MAIN_SEPARATOR, ".");
    relative_path(&reference).ok().map(|_| reference)
}

fn collect_schema_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        match entry.file_type() {
            Ok(t) if t.is_dir() => collect_schema_files(&path, out),
            Ok(t) if t.is_file() && path.to_string_lossy().ends_with(".schema.json") => out.push(path),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().expect("has parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    #[test]
    fn references_map_to_nested_files() {
        assert_eq!(relative_path("review.findings.v1").expect("ok"), PathBuf::from("review/findings/v1.schema.json"));
        for bad in ["review", "../x.v1", "a..b", "A.b", "a/b.v1", "", "a.b.", "a.b\\c"] {
            assert_eq!(relative_path(bad), Err(RefError::Malformed(bad.to_string())), "{bad}");
        }
    }

    #[test]
    fn workspace_wins_over_user_dir_which_wins_over_builtin() {
        let ws = tempfile::tempdir().expect("tempdir");
        let user = tempfile::tempdir().expect("tempdir");
        let catalog = SchemaCatalog::with_roots(vec![ws.path().to_path_buf(), user.path().to_path_buf()]);

        let builtin = catalog.resolve("review.findings.v1").expect("built-in resolves");
        assert_eq!(builtin.source, SchemaSource::Builtin);

        write(user.path(), "review/findings/v1.schema.json", r#"{"title":"user"}"#);
        let from_user = catalog.resolve("review.findings.v1").expect("user resolves");
        assert_eq!(from_user.schema["title"], "user");

        write(ws.path(), "review/findings/v1.schema.json", r#"{"title":"workspace"}"#);
        let from_ws = catalog.resolve("review.findings.v1").expect("workspace resolves");
        assert_eq!(from_ws.schema["title"], "workspace");
        assert_eq!(from_ws.source, SchemaSource::File(ws.path().join("review/findings/v1.schema.json")));

        let listed: Vec<String> = catalog.list().into_iter().map(|(r, _)| r).collect();
        assert_eq!(listed, ["review.findings.v1", "review.verified.v1"], "each reference once, the built-ins included");
    }

    #[test]
    fn missing_reference_names_every_place_searched() {
        let ws = tempfile::tempdir().expect("tempdir");
        let catalog = SchemaCatalog::with_roots(vec![ws.path().to_path_buf()]);
        let err = catalog.resolve("team.triage.v2").expect_err("missing");
        let text = err.to_string();
        assert!(text.contains("team/triage/v2.schema.json"), "{text}");
        assert!(text.contains(&ws.path().display().to_string()), "{text}");
    }
}
