//! The Landlock ruleset of a command: which files it may read (the system, `/etc`
//! less its secrets, a few global `/proc` files, the policy's paths), which it may
//! write (its scratch directory, the policy's paths, `/dev/null` and its kind), TCP
//! closed, and signals and abstract sockets scoped to the sandbox. Landlock is an
//! allow-list, so `/etc` is granted entry by entry, less [`ETC_SECRETS`], and `/proc`
//! is never granted as a whole: `/proc/PID/cmdline` is readable by anyone, so
//! granting `/proc` would show every ancestor's command line.

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreated,
    RulesetCreatedAttr, RulesetError, Scope,
};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use crate::policy::Policy;
use crate::probe::{ABI_SCOPES, ABI_TCP};

/// The system's directories of programs and libraries, read and run.
pub const SYSTEM_DIRS: &[&str] = &["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt"];

/// The global `/proc` and `/sys` files tools read (CPU count, memory, load, kernel
/// settings). No `/proc/PID` directory is among them.
pub const PROC_FILES: &[&str] = &[
    "/proc/cpuinfo",
    "/proc/meminfo",
    "/proc/stat",
    "/proc/loadavg",
    "/proc/uptime",
    "/proc/version",
    "/proc/filesystems",
    "/proc/sys",
    "/sys/devices/system/cpu",
];

/// Device files that read and write as nothing, zeros or randomness.
pub const DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"];

/// What in `/etc` holds secrets and is not granted: paths relative to `/etc`, a
/// trailing `*` matching any name that starts with what is before it.
pub const ETC_SECRETS: &[&str] = &[
    "shadow",
    "shadow-",
    "gshadow",
    "gshadow-",
    "sudoers",
    "sudoers.d",
    "security/opasswd",
    "ssh/ssh_host_*",
    "ssl/private",
    "pki/tls/private",
    "credstore",
    "credstore.encrypted",
    "wireguard",
    "NetworkManager/system-connections",
    "ppp/chap-secrets",
    "ppp/pap-secrets",
    "openvpn",
    "ipsec.secrets",
    "ipsec.d/private",
    "krb5.keytab",
    "docker/key.json",
    "gitlab-runner",
    "letsencrypt",
    "mysql/debian.cnf",
    "libvirt/secrets",
    "kubernetes",
    "rancher",
];

/// How a path is granted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grant {
    /// Read, list and run.
    Read,
    /// Read, run, write, create, remove (no device nodes).
    Write,
    /// A device file: read and write.
    Device,
}

/// Every path a command gets under `policy`, with how.
pub fn grants(policy: &Policy) -> Vec<(PathBuf, Grant)> {
    let mut grants: Vec<(PathBuf, Grant)> = Vec::new();
    grants.extend(SYSTEM_DIRS.iter().chain(PROC_FILES).map(|p| (PathBuf::from(p), Grant::Read)));
    grants.extend(etc_entries(Path::new("/etc"), "").into_iter().map(|p| (p, Grant::Read)));
    grants.extend(DEVICES.iter().map(|p| (PathBuf::from(p), Grant::Device)));
    grants.extend(policy.read.iter().map(|p| (p.clone(), Grant::Read)));
    grants.push((policy.scratch.clone(), Grant::Write));
    grants.extend(policy.write.iter().map(|p| (p.clone(), Grant::Write)));
    grants
}

/// The entries of `dir` (at `relative` under `/etc`) not among [`ETC_SECRETS`],
/// descending into the directories that hold one, and leaving out links that lead
/// into `/proc`, `/sys`, `/dev` or a home directory.
fn etc_entries(dir: &Path, relative: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut granted = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let inner = if relative.is_empty() { name } else { format!("{relative}/{name}") };
        if ETC_SECRETS.iter().any(|secret| is_secret(secret, &inner)) {
            continue;
        }
        let path = entry.path();
        if ETC_SECRETS.iter().any(|secret| secret.starts_with(&format!("{inner}/"))) {
            granted.extend(etc_entries(&path, &inner));
        } else if leads_somewhere_safe(&path) {
            granted.push(path);
        }
    }
    granted
}

fn is_secret(secret: &str, path: &str) -> bool {
    match secret.strip_suffix('*') {
        Some(prefix) => path.starts_with(prefix),
        None => secret == path,
    }
}

/// Whether a path in `/etc` resolves outside the pseudo-file systems and homes (a
/// link such as `/etc/mtab` leads to `/proc/self/mounts`, which the rule would take
/// as Conclave's own `/proc` entry).
fn leads_somewhere_safe(path: &Path) -> bool {
    let Ok(target) = std::fs::canonicalize(path) else { return false };
    !["/proc", "/sys", "/dev", "/home", "/root"].iter().any(|p| target.starts_with(p))
}

/// The access a grant gives, under `abi`, for a directory or (`file`) a file.
fn access(grant: Grant, abi: ABI, file: bool) -> BitFlags<AccessFs> {
    let access = match grant {
        Grant::Read => AccessFs::from_read(abi),
        Grant::Write => AccessFs::from_all(abi) & !(AccessFs::MakeChar | AccessFs::MakeBlock),
        Grant::Device => AccessFs::from_file(abi) & !AccessFs::Execute,
    };
    if file { access & AccessFs::from_file(abi) } else { access }
}

/// The ruleset for `policy` under Landlock ABI `abi`, ready for the child to restrict
/// itself with (`None` when the kernel has no Landlock after all). Paths that do not
/// exist are left out.
pub fn ruleset(policy: &Policy, abi: u32) -> Result<Option<OwnedFd>, RulesetError> {
    let version = ABI::from(i32::try_from(abi).unwrap_or(i32::MAX));
    let mut ruleset = Ruleset::default().handle_access(AccessFs::from_all(version))?;
    if !policy.network && abi >= ABI_TCP {
        ruleset = ruleset.handle_access(AccessNet::from_all(version))?;
    }
    if abi >= ABI_SCOPES {
        ruleset = ruleset.scope(Scope::from_all(version))?;
    }
    let mut created: RulesetCreated = ruleset.create()?;
    for (path, grant) in grants(policy) {
        let Ok(metadata) = std::fs::metadata(&path) else { continue };
        let Ok(fd) = PathFd::new(&path) else { continue };
        created = created.add_rule(PathBeneath::new(fd, access(grant, version, !metadata.is_dir())))?;
    }
    Ok(created.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etc_secrets_are_left_out_and_their_neighbours_kept() {
        let granted = etc_entries(Path::new("/etc"), "");
        assert!(!granted.iter().any(|p| p == Path::new("/etc/shadow")), "{granted:?}");
        assert!(granted.iter().any(|p| p == Path::new("/etc/passwd")), "{granted:?}");
        assert!(!granted.iter().any(|p| p.starts_with("/etc/ssh/ssh_host_")), "{granted:?}");
        assert!(!granted.iter().any(|p| p == Path::new("/etc/ssl")), "ssl is descended into: {granted:?}");
        assert!(!granted.iter().any(|p| p.starts_with("/etc/ssl/private")), "{granted:?}");
    }

    #[test]
    fn a_secret_pattern_matches_whole_names_or_prefixes() {
        assert!(is_secret("shadow", "shadow") && !is_secret("shadow", "shadows"));
        assert!(is_secret("ssh/ssh_host_*", "ssh/ssh_host_ed25519_key"));
        assert!(!is_secret("ssh/ssh_host_*", "ssh/ssh_config"));
    }
}
