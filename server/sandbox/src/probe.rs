//! What this kernel and process offer the sandbox, asked once and cached
//! ([`probe`]): the Landlock ABI (file rules from 1, TCP rules from 4, signal and
//! abstract-socket scopes from 6), seccomp filters, whether Conclave runs as root or
//! holds capabilities, and the `pids` cgroup a command's processes can be bounded in.

use conclave_shared::SandboxLayer;
use landlock::{ABI, Access, AccessFs, LandlockStatus, Ruleset, RulesetAttr, RulesetCreatedAttr};
use std::path::PathBuf;
use std::sync::OnceLock;

use crate::cgroup;

/// What the sandbox can use here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// The Landlock ABI version the kernel answers; 0 without Landlock.
    pub landlock_abi: u32,
    /// Why there is no Landlock, when there is none.
    pub landlock_missing: Option<String>,
    /// Whether seccomp filters can be installed (and this architecture is one the
    /// filter builder knows).
    pub seccomp: bool,
    /// Why there is no seccomp, when there is none.
    pub seccomp_missing: Option<String>,
    /// Whether Conclave runs as root (`RLIMIT_NPROC` does not hold for root).
    pub root: bool,
    /// Whether Conclave holds capabilities, which a command must not keep.
    pub capabilities: bool,
    /// The directory in which each command gets a `pids` cgroup of its own, when
    /// Conclave may create one there (root, cgroup v1 or a delegated v2 subtree).
    pub pids_cgroup: Option<PathBuf>,
    /// Why there is none, when Conclave runs as root and there is none.
    pub pids_cgroup_missing: Option<String>,
}

/// The sandbox cannot confine a command here.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the sandbox is unavailable here: {reason}")]
pub struct Unavailable {
    /// Why, in words.
    pub reason: String,
}

/// Landlock ABI with TCP rules.
pub const ABI_TCP: u32 = 4;
/// Landlock ABI with signal and abstract-socket scopes.
pub const ABI_SCOPES: u32 = 6;

/// What this kernel and process offer, asked on the first call and kept.
pub fn probe() -> &'static Probe {
    static PROBE: OnceLock<Probe> = OnceLock::new();
    PROBE.get_or_init(Probe::ask)
}

impl Probe {
    fn ask() -> Probe {
        let (landlock_abi, landlock_missing) = landlock_version();
        let seccomp_missing = seccomp_missing();
        let root = nix::unistd::geteuid().is_root();
        let (pids_cgroup, pids_cgroup_missing) = match root {
            true => match cgroup::usable_root() {
                Ok(dir) => (Some(dir), None),
                Err(why) => (None, Some(why)),
            },
            false => (None, None),
        };
        Probe {
            landlock_abi,
            landlock_missing,
            seccomp: seccomp_missing.is_none(),
            seccomp_missing,
            root,
            capabilities: holds_capabilities(),
            pids_cgroup,
            pids_cgroup_missing,
        }
    }

    /// Whether commands can be confined here: Landlock file rules and seccomp are
    /// both needed; without either, a command would run with its files or its
    /// sockets open.
    pub fn can_confine(&self) -> Result<(), Unavailable> {
        let mut missing = Vec::new();
        if self.landlock_abi == 0 {
            missing.push(self.landlock_missing.clone().unwrap_or_else(|| "Landlock is not available".into()));
        }
        if !self.seccomp {
            missing.push(self.seccomp_missing.clone().unwrap_or_else(|| "seccomp is not available".into()));
        }
        match missing.is_empty() {
            true => Ok(()),
            false => Err(Unavailable { reason: missing.join("; ") }),
        }
    }

    /// The layers a command gets here, the network closed or `network` open, when
    /// the Landlock ABI used is `abi` (the kernel's, or less in tests).
    pub fn layers(&self, abi: u32, network: bool) -> Vec<SandboxLayer> {
        let mut layers = vec![SandboxLayer::LandlockFiles];
        if !network && abi >= ABI_TCP {
            layers.push(SandboxLayer::LandlockTcp);
        }
        if abi >= ABI_SCOPES {
            layers.push(SandboxLayer::LandlockScopes);
        }
        if !network {
            layers.push(SandboxLayer::SeccompSockets);
        }
        if abi < ABI_SCOPES {
            layers.push(SandboxLayer::SeccompSignals);
        }
        layers.extend([SandboxLayer::SeccompPrivileged, SandboxLayer::NoNewPrivs]);
        if self.capabilities {
            layers.push(SandboxLayer::CapabilitiesDropped);
        }
        layers.push(SandboxLayer::ResourceLimits);
        match (self.root, &self.pids_cgroup) {
            (false, _) => layers.push(SandboxLayer::ProcessRlimit),
            (true, Some(_)) => layers.push(SandboxLayer::ProcessCgroup),
            (true, None) => {}
        }
        layers
    }

    /// What is not enforced here though the sandbox runs, in words, when the
    /// Landlock ABI used is `abi`.
    pub fn gaps(&self, abi: u32) -> Vec<String> {
        let mut gaps = Vec::new();
        if abi > 0 && abi < ABI_TCP {
            gaps.push(format!(
                "Landlock ABI {abi} has no TCP rules (4 and later); seccomp's socket refusal still closes TCP"
            ));
        }
        if abi > 0 && abi < ABI_SCOPES {
            gaps.push(format!(
                "Landlock ABI {abi} has no signal scope (6 and later): seccomp refuses signals to Conclave and its ancestors instead, and abstract sockets are closed only by the socket refusal"
            ));
        }
        if let Some(why) = &self.pids_cgroup_missing {
            gaps.push(format!("process count not bounded: {why}"));
        }
        gaps
    }
}

/// The kernel's Landlock ABI, asked by restricting a thread that ends at once (a
/// Landlock domain, like `no_new_privs`, which an unprivileged thread needs before
/// it may restrict itself, is a thread's own until it is inherited), so Conclave
/// itself is never confined.
fn landlock_version() -> (u32, Option<String>) {
    let asked = std::thread::spawn(|| {
        let ruleset = Ruleset::default().handle_access(AccessFs::from_all(ABI::V1))?.create()?;
        let status = ruleset.no_new_privs(true).restrict_self()?;
        Ok::<_, landlock::RulesetError>(status.landlock)
    })
    .join();
    match asked {
        Ok(Ok(LandlockStatus::Available { effective_abi, kernel_abi })) => {
            (kernel_abi.and_then(|v| u32::try_from(v).ok()).unwrap_or(effective_abi as u32), None)
        }
        Ok(Ok(LandlockStatus::NotEnabled)) => (
            0,
            Some(
                "Landlock is built into this kernel but not enabled (add `landlock` to the `lsm=` boot parameter)"
                    .into(),
            ),
        ),
        Ok(Ok(LandlockStatus::NotImplemented)) => {
            (0, Some("this kernel has no Landlock (Linux 5.13 or later with CONFIG_SECURITY_LANDLOCK)".into()))
        }
        Ok(Err(e)) => (0, Some(format!("Landlock could not be used: {e}"))),
        Err(_) => (0, Some("asking the kernel for Landlock failed".into())),
    }
}

/// Why seccomp filters cannot be used here, if they cannot.
fn seccomp_missing() -> Option<String> {
    if seccompiler::TargetArch::try_from(std::env::consts::ARCH).is_err() {
        return Some(format!("seccomp filters are not built for {}", std::env::consts::ARCH));
    }
    match std::fs::read_to_string("/proc/sys/kernel/seccomp/actions_avail") {
        Ok(actions) if actions.split_whitespace().any(|a| a == "errno") => None,
        Ok(_) => Some("this kernel's seccomp cannot answer a system call with an error".into()),
        Err(_) => Some("this kernel has no seccomp filters (CONFIG_SECCOMP_FILTER)".into()),
    }
}

/// Whether this process holds any effective or permitted capability.
fn holds_capabilities() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .filter_map(|line| line.strip_prefix("CapEff:").or_else(|| line.strip_prefix("CapPrm:")))
        .any(|caps| u64::from_str_radix(caps.trim(), 16).is_ok_and(|caps| caps != 0))
}
