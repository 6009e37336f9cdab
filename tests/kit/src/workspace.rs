//! Temporary workspaces laid out like a Conclave checkout, conclave files on the fake
//! provider, git run as a test author, the third-party tools installed in the cache, and
//! an empty tool directory for tests that must not depend on them.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A temporary directory laid out like a Conclave workspace (`conclaves/`, a run database).
#[derive(Debug)]
pub struct TempWorkspace {
    dir: tempfile::TempDir,
}

impl TempWorkspace {
    /// An empty workspace with a `conclaves/` directory.
    pub fn new() -> std::io::Result<TempWorkspace> {
        let dir = tempfile::tempdir()?;
        std::fs::create_dir_all(dir.path().join("conclaves"))?;
        Ok(TempWorkspace { dir })
    }

    /// The workspace root.
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// The run database used by [`TempWorkspace::command`].
    pub fn db(&self) -> PathBuf {
        self.root().join(".conclave").join("conclave.db")
    }

    /// Writes `conclaves/<id>.conclave.json`.
    pub fn write_conclave(&self, id: &str, text: &str) -> std::io::Result<()> {
        std::fs::write(self.root().join("conclaves").join(format!("{id}.conclave.json")), text)
    }

    /// A command for `binary` running in this workspace with its own database and
    /// config directory, and no provider keys from the environment.
    pub fn command(&self, binary: &str) -> Command {
        let mut cmd = Command::new(binary);
        cmd.current_dir(self.root())
            .env("CONCLAVE_DB", self.db())
            .env("CONCLAVE_CONFIG_DIR", self.root().join("config"))
            .env_remove("CONCLAVE_LOG");
        cmd
    }

    /// Runs `binary` with `args` to completion.
    pub fn run(&self, binary: &str, args: &[&str]) -> std::io::Result<Output> {
        self.command(binary).args(args).output()
    }
}

/// A conclave file text: a trigger `input`, then agents on the fake provider given as
/// `(id, model spec)` each fed by `input` (or by the agent named after `<`, as in
/// `("b<a", spec)`), and an output `result` fed by every agent nobody else consumes.
pub fn fake_conclave(id: &str, agents: &[(&str, &str)]) -> String {
    let mut nodes =
        vec![serde_json::json!({"id": "input", "kind": "trigger", "label": "Input", "position": {"x": 0, "y": 0}})];
    let mut edges = Vec::new();
    let mut consumed = std::collections::HashSet::new();
    let mut ids = Vec::new();
    for (i, (spec, model)) in agents.iter().enumerate() {
        let (node, from) = spec.split_once('<').unwrap_or((spec, "input"));
        consumed.insert(from.to_string());
        ids.push(node.to_string());
        nodes.push(serde_json::json!({
            "id": node, "kind": "agent", "label": node, "position": {"x": 200, "y": 100 * i},
            "agent": {"provider": "fake", "model": model, "system_prompt": ""}
        }));
        edges.push(serde_json::json!({"from": from, "to": node}));
    }
    nodes
        .push(serde_json::json!({"id": "result", "kind": "output", "label": "Result", "position": {"x": 400, "y": 0}}));
    for node in ids.iter().filter(|n| !consumed.contains(*n)) {
        edges.push(serde_json::json!({"from": node, "to": "result"}));
    }
    let doc = serde_json::json!({"version": 1, "id": id, "name": id, "nodes": nodes, "edges": edges});
    serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
}

/// Runs git in `repo` as a test author, failing the test with git's message.
pub fn git(repo: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["-c", "user.email=dev@example.com", "-c", "user.name=Dev", "-c", "commit.gpgsign=false"])
        .args(args)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A third-party tool the project's scripts install into Conclave's cache
/// (`$XDG_CACHE_HOME/conclave` or `~/.cache/conclave`) at `relative`, failing the
/// test with the script to run when it is missing.
pub fn cached_tool(relative: &str, script: &str) -> PathBuf {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .expect("HOME is set");
    let bin = cache.join("conclave").join(relative);
    assert!(bin.is_file(), "{} is not installed: run `bash {script}`", bin.display());
    bin
}

/// An empty directory for Conclave's tool directory (`CONCLAVE_TOOLS_DIR`) in a test
/// that is not about analyzer lanes: which linters this machine has installed there
/// (Ruff and Semgrep, once set-up ran) must not change what its reviews report. The
/// lanes whose programs are on `PATH` (git, ShellCheck) still run. It is
/// `conclave-tests-no-tools` in the system's temporary directory, made when missing.
pub fn no_tools() -> PathBuf {
    let dir = std::env::temp_dir().join("conclave-tests-no-tools");
    std::fs::create_dir_all(&dir).expect("an empty tool directory");
    dir
}
