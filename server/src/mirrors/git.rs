//! Running git for the mirrors: a clean configuration (no system or user config, so
//! no credential helper, `insteadOf` or filter of the machine's runs on a fetched
//! change), and a token given to one command only, through the environment.
//!
//! The token travels as `http.<origin>/.extraHeader` in `GIT_CONFIG_COUNT`,
//! `GIT_CONFIG_KEY_n` and `GIT_CONFIG_VALUE_n`, not as `-c` in the arguments: a
//! process's arguments are readable by every user of the machine
//! (`/proc/PID/cmdline`), its environment only by its own user; and nothing is
//! written into the mirror's config, so the next command (or a worktree's
//! checkout) has no token. The header is scoped to the forge's origin, so a redirect
//! elsewhere does not carry it.

use conclave_core::{Redactor, Secret};
use reqwest::Url;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use tokio::process::Command;

use super::error::MirrorError;

/// The longest one git command may take.
const TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// A git command in `dir`; with `auth` (the forge's origin and the header), it
/// sends that header to that origin.
pub fn git_command(dir: &Path, auth: Option<(&Url, &Secret)>) -> Command {
    let mut command = Command::new("git");
    command.current_dir(dir).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
    command
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env_remove("GIT_ASKPASS")
        .env_remove("SSH_ASKPASS")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE");
    let mut config: Vec<(String, String)> = vec![("credential.helper".into(), String::new())];
    if let Some((origin, header)) = auth {
        let origin = origin.origin().ascii_serialization();
        config.push((format!("http.{origin}/.extraHeader"), header.expose().to_string()));
    }
    command.env("GIT_CONFIG_COUNT", config.len().to_string());
    for (i, (key, value)) in config.into_iter().enumerate() {
        command.env(format!("GIT_CONFIG_KEY_{i}"), key).env(format!("GIT_CONFIG_VALUE_{i}"), value);
    }
    command
}

/// Runs `command`; its standard output, or git's message (cleaned by `redactor`)
/// in an error saying `what` failed.
pub async fn run(mut command: Command, what: &str, redactor: &Redactor) -> Result<String, MirrorError> {
    // A fetch that hangs would hold its mirror's lock for good; `kill_on_drop` ends git
    // when the wait is abandoned.
    let output = match tokio::time::timeout(TIMEOUT, command.output()).await {
        Ok(output) => output.map_err(MirrorError::io(format!("cannot run git for {what}")))?,
        Err(_) => {
            let message = format!("git did not finish in {} minutes", TIMEOUT.as_secs() / 60);
            return Err(MirrorError::Git { what: what.to_string(), message });
        }
    };
    if output.status.success() {
        return Ok(String::from_utf8_lossy(&output.stdout).into_owned());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let message = stderr.trim();
    let message = if message.is_empty() { format!("git exited with {}", output.status) } else { message.to_string() };
    Err(MirrorError::Git { what: what.to_string(), message: redactor.redact(&message) })
}

/// Whether `command` succeeds (for questions such as "is this commit here?").
pub async fn succeeds(mut command: Command) -> bool {
    command.output().await.is_ok_and(|o| o.status.success())
}
