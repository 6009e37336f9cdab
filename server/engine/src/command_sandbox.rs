//! The sandbox of one command node: its scratch directory (its `HOME` and `TMPDIR`),
//! its environment (the scrubbed variables, then the node's `sandbox.env`), and its
//! confinement through `conclave-sandbox` (read access to the repository, the
//! workspace, the program file (with the Python virtual environment it is installed
//! in and the Python that environment was made from) and the node's declared paths;
//! writes to the scratch
//! directory and the declared paths; the network only when the node opens it). Where
//! the kernel cannot confine, the command runs unconfined only when the engine allows
//! it, and the record says so; otherwise the node fails with
//! [`NodeError::SandboxUnavailable`].

use conclave_sandbox::{Confinement, Limits, Policy, Scratch, expand_home, real_home};
use conclave_shared::sandbox::SCRATCH_PLACEHOLDER;
use conclave_shared::{CommandConfig, SandboxConfig, SandboxRecord};
use std::path::{Path, PathBuf};

use crate::node_error::NodeError;

/// The variables a command inherits, when set: what programs need to find
/// themselves and their language, and nothing that holds a secret. `HOME` and
/// `TMPDIR` are the scratch directory.
pub const INHERITED_VARIABLES: &[&str] = &["PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "USER"];

/// A command's sandbox, kept until it ended: ending it kills what is left in its
/// cgroup and removes its scratch directory.
#[derive(Debug)]
pub struct Sandbox {
    /// What confined it, for its `command_exited` event.
    pub record: SandboxRecord,
    confinement: Option<Confinement>,
    scratch: Scratch,
}

impl Sandbox {
    /// The scratch directory.
    pub fn scratch(&self) -> &Path {
        self.scratch.path()
    }

    /// Ends the sandbox on a blocking thread (removing files blocks): leftover
    /// processes killed, the scratch directory removed.
    pub async fn end(self) {
        let _ = tokio::task::spawn_blocking(move || {
            drop(self.confinement);
            drop(self.scratch);
        })
        .await;
    }
}

/// A command's sandbox made ready on a blocking thread, to be given to its command.
#[derive(Debug)]
pub struct Prepared {
    scratch: Scratch,
    confining: Confining,
}

/// How the command will run.
#[derive(Debug)]
enum Confining {
    /// In the sandbox, prepared.
    Confined(conclave_sandbox::Prepared),
    /// Unconfined, as allowed where the kernel cannot confine; the record says so.
    Unconfined(SandboxRecord),
}

impl Prepared {
    /// Sets `command`'s environment and makes its child confine itself; does not block.
    pub fn apply(self, command: &mut tokio::process::Command, config: &CommandConfig) -> Sandbox {
        set_environment(command, &config.sandbox.clone().unwrap_or_default(), self.scratch.path());
        let (record, confinement) = match self.confining {
            Confining::Confined(prepared) => {
                let confinement = prepared.apply(command.as_std_mut());
                (confinement.record.clone(), Some(confinement))
            }
            Confining::Unconfined(record) => (record, None),
        };
        Sandbox { record, confinement, scratch: self.scratch }
    }
}

/// Where the command runs and what it may reach besides its node's settings.
#[derive(Debug, Clone)]
pub struct Reach {
    /// Its directory (the repository or the workspace).
    pub workdir: PathBuf,
    /// The workspace, read too.
    pub workspace: Option<PathBuf>,
    /// Whether it may run unconfined where the kernel cannot confine.
    pub allow_unsandboxed: bool,
}

/// Prepares node `node_id`'s sandbox on a blocking thread: its scratch directory,
/// and its confinement, or the record of an unconfined run where that is allowed.
pub async fn prepare(config: &CommandConfig, node_id: &str, reach: Reach) -> Result<Prepared, NodeError> {
    let (config, node_id) = (config.clone(), node_id.to_string());
    tokio::task::spawn_blocking(move || prepare_blocking(&config, &node_id, &reach))
        .await
        .map_err(|e| NodeError::Internal(format!("preparing the sandbox stopped: {e}")))?
}

/// [`prepare`], on the calling thread.
pub fn prepare_blocking(config: &CommandConfig, node_id: &str, reach: &Reach) -> Result<Prepared, NodeError> {
    let program = config.program();
    let scratch = Scratch::create(node_id)
        .map_err(|e| NodeError::Command(format!("could not make a scratch directory for `{program}`: {e}")))?;
    let confining = match conclave_sandbox::probe().can_confine() {
        Ok(()) => {
            let sandbox = config.sandbox.clone().unwrap_or_default();
            let policy = policy(config, &sandbox, reach, scratch.path());
            Confining::Confined(
                conclave_sandbox::prepare(&policy)
                    .map_err(|e| NodeError::Command(format!("could not confine `{program}`: {e}")))?,
            )
        }
        Err(unavailable) if reach.allow_unsandboxed => {
            let gaps = vec![format!("ran unconfined: the sandbox is unavailable here ({})", unavailable.reason)];
            Confining::Unconfined(SandboxRecord { confined: false, layers: Vec::new(), network: true, gaps })
        }
        Err(unavailable) => {
            return Err(NodeError::SandboxUnavailable { program: program.to_string(), reason: unavailable.reason });
        }
    };
    Ok(Prepared { scratch, confining })
}

/// The scrubbed environment, `HOME` and `TMPDIR` the scratch directory, then the
/// node's variables (`{scratch}` and a leading `~/` expanded).
fn set_environment(command: &mut tokio::process::Command, sandbox: &SandboxConfig, scratch: &Path) {
    command
        .env_clear()
        .envs(INHERITED_VARIABLES.iter().filter_map(|name| Some((*name, std::env::var_os(name)?))))
        .env("HOME", scratch)
        .env("TMPDIR", scratch);
    let home = real_home();
    for (name, value) in &sandbox.env {
        let value = value.replace(SCRATCH_PLACEHOLDER, &scratch.to_string_lossy());
        let value = match value.starts_with("~/") {
            true => expand_home(&value, home.as_deref()).map_or(value, |p| p.to_string_lossy().into_owned()),
            false => value,
        };
        command.env(name, value);
    }
}

/// The policy of a command: the repository, the workspace, its program file and
/// the node's read paths readable; the node's write paths writable; its network
/// and limits.
fn policy(config: &CommandConfig, sandbox: &SandboxConfig, reach: &Reach, scratch: &Path) -> Policy {
    let home = real_home();
    let expand =
        |paths: &[String]| -> Vec<PathBuf> { paths.iter().filter_map(|p| expand_home(p, home.as_deref())).collect() };
    let mut policy = Policy::new(scratch.to_path_buf());
    policy.read.push(reach.workdir.clone());
    policy.read.extend(reach.workspace.clone());
    let program = program_file(config.program(), &reach.workdir);
    policy.read.extend(program.as_deref().map(python_environment).unwrap_or_default());
    policy.read.extend(program);
    policy.read.extend(expand(&sandbox.read));
    policy.write = expand(&sandbox.write);
    policy.network = sandbox.network;
    policy.limits = Limits::from_config(&sandbox.limits.unwrap_or_default());
    policy
}

/// The file the program runs from: found on the inherited `PATH` when it names no
/// directory, else relative to `workdir`; links followed.
fn program_file(program: &str, workdir: &Path) -> Option<PathBuf> {
    let found = if program.contains('/') {
        Some(workdir.join(program))
    } else {
        let path = std::env::var_os("PATH")?;
        std::env::split_paths(&path).map(|dir| dir.join(program)).find(|candidate| candidate.is_file())
    };
    found.and_then(|file| std::fs::canonicalize(file).ok())
}

/// What a program installed in a Python virtual environment needs to run (Semgrep,
/// installed by pip): the environment (`<venv>/bin/<program>` beside
/// `<venv>/pyvenv.cfg`) and the installation of the Python it was made from (the
/// `home` its `pyvenv.cfg` names, less its `bin`). Nothing for any other program.
fn python_environment(program: &Path) -> Vec<PathBuf> {
    let Some(venv) = program.parent().filter(|bin| bin.ends_with("bin")).and_then(Path::parent) else {
        return Vec::new();
    };
    let Ok(config) = std::fs::read_to_string(venv.join("pyvenv.cfg")) else { return Vec::new() };
    let mut paths = vec![venv.to_path_buf()];
    let home = config.lines().find_map(|line| {
        let (key, value) = line.split_once('=')?;
        (key.trim() == "home").then(|| PathBuf::from(value.trim()))
    });
    if let Some(home) = home.filter(|h| h.is_absolute()) {
        paths.push(if home.ends_with("bin") { home.parent().map_or(home.clone(), Path::to_path_buf) } else { home });
    }
    paths
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_in_a_virtual_environment_reads_it_and_its_python() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let venv = dir.path().join("semgrep");
        std::fs::create_dir_all(venv.join("bin")).expect("bin");
        std::fs::write(venv.join("bin/semgrep"), "#!/x/python3\n").expect("script");
        std::fs::write(venv.join("pyvenv.cfg"), "home = /opt/python/3.11/bin\nversion = 3.11.7\n").expect("cfg");
        assert_eq!(
            python_environment(&venv.join("bin/semgrep")),
            [venv.clone(), PathBuf::from("/opt/python/3.11")],
            "the environment, and the Python it was made from"
        );
        assert_eq!(python_environment(Path::new("/usr/bin/git")), Vec::<PathBuf>::new(), "any other program");
    }
}
