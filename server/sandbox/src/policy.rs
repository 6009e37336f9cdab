//! What a command may reach: the [`Policy`] a caller gives [`crate::confine`] (paths to
//! read and write beyond the system's, the scratch directory, the network, the
//! [`Limits`]), and how a path written with `~` finds the real home directory.

use conclave_shared::SandboxLimits;
use std::path::{Path, PathBuf};

/// What one command may reach. The system's files (programs, libraries, `/etc` less
/// its secrets, a few global `/proc` files, `/dev/null` and its kind) are always
/// readable; everything else is named here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// Files and directories it may read and run programs from (the repository, the
    /// workspace, the program file, a node's declared toolchains).
    pub read: Vec<PathBuf>,
    /// Files and directories it may write besides the scratch directory.
    pub write: Vec<PathBuf>,
    /// Its scratch directory: read, written, and its `HOME` and `TMPDIR`.
    pub scratch: PathBuf,
    /// Whether it may use the network.
    pub network: bool,
    /// Its resource limits.
    pub limits: Limits,
    /// Confine as a kernel with at most this Landlock ABI would (tests of the
    /// fallbacks older kernels get); `None` uses all the kernel offers.
    pub landlock_abi_at_most: Option<u32>,
}

impl Policy {
    /// A policy with only `scratch` and the default limits: no network, nothing to
    /// read beyond the system.
    pub fn new(scratch: PathBuf) -> Policy {
        Policy {
            read: Vec::new(),
            write: Vec::new(),
            scratch,
            network: false,
            limits: Limits::default(),
            landlock_abi_at_most: None,
        }
    }
}

/// Default CPU seconds of each process.
pub const DEFAULT_CPU_SECS: u64 = 600;
/// Default memory (data segments) of each process, in MiB: a 4 GiB allocation fails.
pub const DEFAULT_MEMORY_MB: u64 = 2048;
/// Default largest file a process writes, in MiB.
pub const DEFAULT_FILE_SIZE_MB: u64 = 1024;
/// Default files open at once in each process.
pub const DEFAULT_OPEN_FILES: u64 = 1024;
/// Default processes of one command at once.
pub const DEFAULT_PROCESSES: u64 = 256;

/// A command's resource limits, in the units the kernel takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// `RLIMIT_CPU`, seconds.
    pub cpu_secs: u64,
    /// `RLIMIT_DATA`, bytes: private writable memory, so programs that reserve large
    /// address spaces without touching them still start.
    pub memory_bytes: u64,
    /// `RLIMIT_FSIZE`, bytes.
    pub file_size_bytes: u64,
    /// `RLIMIT_NOFILE`.
    pub open_files: u64,
    /// Processes (and threads) at once: a `pids` cgroup's `pids.max` as root, else
    /// `RLIMIT_NPROC` above the user's current count.
    pub processes: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits::from_config(&SandboxLimits::default())
    }
}

const MIB: u64 = 1024 * 1024;

impl Limits {
    /// The limits a node's `sandbox.limits` gives, the defaults for what it leaves out.
    pub fn from_config(config: &SandboxLimits) -> Limits {
        Limits {
            cpu_secs: config.cpu_secs.unwrap_or(DEFAULT_CPU_SECS),
            memory_bytes: config.memory_mb.unwrap_or(DEFAULT_MEMORY_MB).saturating_mul(MIB),
            file_size_bytes: config.file_size_mb.unwrap_or(DEFAULT_FILE_SIZE_MB).saturating_mul(MIB),
            open_files: config.open_files.unwrap_or(DEFAULT_OPEN_FILES),
            processes: config.processes.unwrap_or(DEFAULT_PROCESSES),
        }
    }
}

/// The real home directory (`HOME`), which `~` means in a node's sandbox block.
pub fn real_home() -> Option<PathBuf> {
    std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from)
}

/// `path` with a leading `~` (alone or followed by `/`) replaced by `home`; other paths
/// as they are. `None` when it starts with `~` and there is no home.
pub fn expand_home(path: &str, home: Option<&Path>) -> Option<PathBuf> {
    match path.strip_prefix('~') {
        Some("") => home.map(Path::to_path_buf),
        Some(rest) if rest.starts_with('/') => home.map(|h| h.join(rest.trim_start_matches('/'))),
        _ => Some(PathBuf::from(path)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tilde_is_the_real_home() {
        let home = Path::new("/home/ci");
        assert_eq!(expand_home("~/.rustup", Some(home)), Some(PathBuf::from("/home/ci/.rustup")));
        assert_eq!(expand_home("~", Some(home)), Some(PathBuf::from("/home/ci")));
        assert_eq!(expand_home("/opt/x", Some(home)), Some(PathBuf::from("/opt/x")));
        assert_eq!(expand_home("~other/x", Some(home)), Some(PathBuf::from("~other/x")));
        assert_eq!(expand_home("~/.cargo", None), None);
    }

    #[test]
    fn limits_take_the_defaults_for_what_a_node_leaves_out() {
        let limits = Limits::from_config(&SandboxLimits { memory_mb: Some(4096), ..SandboxLimits::default() });
        assert_eq!(limits.memory_bytes, 4096 * MIB);
        assert_eq!(limits.cpu_secs, DEFAULT_CPU_SECS);
        assert_eq!(Limits::default().memory_bytes, DEFAULT_MEMORY_MB * MIB);
        assert!(Limits::default().memory_bytes < 4 * 1024 * MIB, "a 4 GiB allocation must fail by default");
    }
}
