//! `--record DIR` and `--replay DIR`, defined once for every command that calls
//! providers: `conclave run`, `review` and `eval`. Recording writes every provider call
//! to a file; replaying answers every call from those files and opens no connection
//! (the format is `conclave_core::record`'s, documented in docs/eval.md).

use clap::Args;
use conclave_core::ProviderRegistry;
use std::path::PathBuf;

/// Where provider calls are recorded, or replayed from.
#[derive(Debug, Clone, Default, Args)]
pub struct Recordings {
    /// Write every provider call (request after lowering, redacted, and the whole
    /// response) to one file per call in DIR, named by the request's hash.
    #[arg(long, value_name = "DIR", conflicts_with = "replay")]
    pub record: Option<PathBuf>,
    /// Answer every provider call from the recordings in DIR, never calling a
    /// provider; a call with no recording fails (exit 2) naming its node and hash.
    #[arg(long, value_name = "DIR")]
    pub replay: Option<PathBuf>,
}

impl Recordings {
    /// The providers wrapped as asked, or why not (the directory cannot be made or
    /// does not exist).
    pub fn apply(&self, providers: ProviderRegistry) -> Result<ProviderRegistry, String> {
        if let Some(dir) = &self.record {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot make the recordings directory {}: {e}", dir.display()))?;
            return Ok(providers.recording(dir));
        }
        if let Some(dir) = &self.replay {
            if !dir.is_dir() {
                return Err(format!(
                    "--replay {}: no such directory of recordings; make one with --record {}",
                    dir.display(),
                    dir.display()
                ));
            }
            return Ok(providers.replaying(dir));
        }
        Ok(providers)
    }
}
