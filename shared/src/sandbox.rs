//! The sandbox of command nodes as files and events name it: the `sandbox` block by
//! which a node widens its default confinement (network, more paths to read or write,
//! variables, limits), and the record of what confined a command when it ran.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How a command node widens the sandbox it runs in. Everything left out keeps the
/// default: no network, read access to the system, the repository and the workspace
/// only, writes to the node's scratch directory only, and the default limits.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct SandboxConfig {
    /// Opens the network (TCP and UDP, loopback included) to the command.
    #[serde(default, skip_serializing_if = "is_false")]
    pub network: bool,
    /// More files and directories it may read (and run programs from): absolute
    /// paths, or `~/…` for a path in the real home directory (`~/.rustup`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read: Vec<String>,
    /// More files and directories it may write (besides its scratch directory),
    /// written as `read` is.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub write: Vec<String>,
    /// Variables set for the command. `{scratch}` in a value is the node's scratch
    /// directory and a value starting with `~/` is in the real home directory
    /// (`"CARGO_TARGET_DIR": "{scratch}/target"`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Resource limits other than the defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "json-schema", schemars(with = "SandboxLimits"))]
    pub limits: Option<SandboxLimits>,
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// The placeholder for the node's scratch directory in a `sandbox.env` value.
pub const SCRATCH_PLACEHOLDER: &str = "{scratch}";

impl SandboxConfig {
    /// Whether it opens anything beyond the default (network, read or write paths):
    /// what a conclave saved through the API may not do. Variables and limits do not
    /// widen what the command reaches.
    pub fn widens(&self) -> bool {
        self.network || !self.read.is_empty() || !self.write.is_empty()
    }

    /// What `self` opens that `before` did not: the network, and the paths to read
    /// or write that `before` did not list, in words (`network`, `read ~/.ssh`).
    pub fn widened_beyond(&self, before: Option<&SandboxConfig>) -> Vec<String> {
        let empty = SandboxConfig::default();
        let before = before.unwrap_or(&empty);
        let mut widened = Vec::new();
        if self.network && !before.network {
            widened.push("network".to_string());
        }
        widened.extend(self.read.iter().filter(|p| !before.read.contains(p)).map(|p| format!("read {p}")));
        widened.extend(self.write.iter().filter(|p| !before.write.contains(p)).map(|p| format!("write {p}")));
        widened
    }
}

/// Resource limits of a command, each for the command and every process it starts
/// (CPU time, memory and file size per process; processes for the whole command).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct SandboxLimits {
    /// CPU seconds of each process (default 600).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "crate::budget::whole_number")]
    #[cfg_attr(feature = "json-schema", schemars(range(min = 1)))]
    #[cfg_attr(feature = "openapi", schema(minimum = 1))]
    pub cpu_secs: Option<u64>,
    /// Memory of each process, in MiB (its data segments, default 2048).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "crate::budget::whole_number")]
    #[cfg_attr(feature = "json-schema", schemars(range(min = 1)))]
    #[cfg_attr(feature = "openapi", schema(minimum = 1))]
    pub memory_mb: Option<u64>,
    /// The largest file a process may write, in MiB (default 1024).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "crate::budget::whole_number")]
    #[cfg_attr(feature = "json-schema", schemars(range(min = 1)))]
    #[cfg_attr(feature = "openapi", schema(minimum = 1))]
    pub file_size_mb: Option<u64>,
    /// Files each process may have open at once (default 1024).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "crate::budget::whole_number")]
    #[cfg_attr(feature = "json-schema", schemars(range(min = 16)))]
    #[cfg_attr(feature = "openapi", schema(minimum = 16))]
    pub open_files: Option<u64>,
    /// Processes the command may run at once, itself included (default 256).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "crate::budget::whole_number")]
    #[cfg_attr(feature = "json-schema", schemars(range(min = 1)))]
    #[cfg_attr(feature = "openapi", schema(minimum = 1))]
    pub processes: Option<u64>,
}

/// One layer of confinement a command ran under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum SandboxLayer {
    /// Landlock file rules: reads of the system, the repository, the workspace and
    /// the declared paths only; writes to the scratch directory only.
    LandlockFiles,
    /// Landlock TCP rules: no bind, no connect (Landlock ABI 4 and later).
    LandlockTcp,
    /// Landlock scopes: no signals to, and no abstract sockets of, processes outside
    /// the sandbox (Landlock ABI 6 and later).
    LandlockScopes,
    /// Seccomp refuses `socket()` in every domain and io_uring: no UDP, no raw sockets.
    SeccompSockets,
    /// Seccomp refuses signals to Conclave and its ancestors (kernels without
    /// Landlock scopes).
    SeccompSignals,
    /// Seccomp refuses the privileged system calls a command never needs (modules,
    /// mounts, ptrace, bpf, keyrings, clocks, reboot and the like).
    SeccompPrivileged,
    /// `no_new_privs`: no program it runs gains privileges (set-user-id, file
    /// capabilities).
    NoNewPrivs,
    /// Every capability dropped (Conclave runs as root): bounding, effective,
    /// permitted, inheritable and ambient sets.
    CapabilitiesDropped,
    /// CPU time, memory, file size and open files bounded per process.
    ResourceLimits,
    /// The processes bounded through a `pids` cgroup of the command's own.
    ProcessCgroup,
    /// The processes bounded through `RLIMIT_NPROC` (Conclave does not run as root).
    ProcessRlimit,
}

impl SandboxLayer {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxLayer::LandlockFiles => "landlock_files",
            SandboxLayer::LandlockTcp => "landlock_tcp",
            SandboxLayer::LandlockScopes => "landlock_scopes",
            SandboxLayer::SeccompSockets => "seccomp_sockets",
            SandboxLayer::SeccompSignals => "seccomp_signals",
            SandboxLayer::SeccompPrivileged => "seccomp_privileged",
            SandboxLayer::NoNewPrivs => "no_new_privs",
            SandboxLayer::CapabilitiesDropped => "capabilities_dropped",
            SandboxLayer::ResourceLimits => "resource_limits",
            SandboxLayer::ProcessCgroup => "process_cgroup",
            SandboxLayer::ProcessRlimit => "process_rlimit",
        }
    }
}

/// What confined one command when it ran, as its `command_exited` event records it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SandboxRecord {
    /// Whether it ran in the sandbox; false only when the sandbox was unavailable and
    /// unconfined runs were allowed.
    pub confined: bool,
    /// The layers that held.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub layers: Vec<SandboxLayer>,
    /// Whether its node opened the network.
    #[serde(default, skip_serializing_if = "is_false")]
    pub network: bool,
    /// What was not enforced here and why (a layer this kernel lacks, the process
    /// limit without a writable cgroup), or why it ran unconfined.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gaps: Vec<String>,
}

impl SandboxRecord {
    /// The layers in a few words, for a report: `landlock_files, seccomp_sockets, …`,
    /// or `unconfined`.
    pub fn summary(&self) -> String {
        if !self.confined {
            return "unconfined".to_string();
        }
        let layers: Vec<&str> = self.layers.iter().map(|l| l.as_str()).collect();
        let mut text = layers.join(", ");
        if self.network {
            text.push_str(" (network open)");
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widening_names_what_is_new() {
        let before = SandboxConfig { read: vec!["~/.rustup".into()], ..SandboxConfig::default() };
        let after = SandboxConfig {
            network: true,
            read: vec!["~/.rustup".into(), "~/.ssh".into()],
            write: vec!["/srv".into()],
            ..SandboxConfig::default()
        };
        assert_eq!(after.widened_beyond(Some(&before)), vec!["network", "read ~/.ssh", "write /srv"]);
        assert!(before.widened_beyond(Some(&before)).is_empty());
        assert_eq!(before.widened_beyond(None), vec!["read ~/.rustup"]);
        let env_only = SandboxConfig { env: BTreeMap::from([("A".into(), "b".into())]), ..SandboxConfig::default() };
        assert!(!env_only.widens() && env_only.widened_beyond(None).is_empty());
    }

    #[test]
    fn a_record_without_a_sandbox_field_reads_as_default() {
        let record: SandboxRecord = serde_json::from_str(r#"{"confined": true}"#).expect("reads");
        assert!(record.confined && record.layers.is_empty());
        assert_eq!(SandboxRecord::default().summary(), "unconfined");
    }
}
