//! A `pids` cgroup of a command's own, which bounds how many processes it runs at
//! once when Conclave runs as root (root is exempt from `RLIMIT_NPROC`). The
//! controller is found where the machine mounts it: cgroup v1's `pids` hierarchy, or
//! the process's cgroup v2 directory when its `pids` controller can be handed down.
//! The child joins by writing `0` into `cgroup.procs`; dropping the [`CommandCgroup`]
//! kills whatever is left in it and removes it.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A command's cgroup; removed, with every process left in it killed, when dropped.
#[derive(Debug)]
pub struct CommandCgroup {
    dir: PathBuf,
}

impl CommandCgroup {
    /// Creates a cgroup under `root` holding at most `processes` processes, and opens
    /// its `cgroup.procs` for the child to join by.
    pub fn create(root: &Path, processes: u64) -> std::io::Result<(CommandCgroup, File)> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let name = format!("conclave-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        let dir = root.join(name);
        fs::create_dir(&dir)?;
        let cgroup = CommandCgroup { dir };
        fs::write(cgroup.dir.join("pids.max"), processes.to_string())?;
        let procs = OpenOptions::new().write(true).open(cgroup.dir.join("cgroup.procs"))?;
        Ok((cgroup, procs))
    }
}

impl Drop for CommandCgroup {
    fn drop(&mut self) {
        let dir = std::mem::take(&mut self.dir);
        if remove(&dir) {
            return;
        }
        // Killed processes leave the cgroup once they are reaped, which may take a
        // moment; the caller does not wait for it.
        let _ = std::thread::Builder::new().name("cgroup-cleanup".into()).spawn(move || {
            for _ in 0..50 {
                std::thread::sleep(Duration::from_millis(40));
                if remove(&dir) {
                    return;
                }
            }
            tracing::warn!("could not remove the command's cgroup {}", dir.display());
        });
    }
}

/// Kills every process in `dir` and removes it; true when it is gone.
fn remove(dir: &Path) -> bool {
    if fs::remove_dir(dir).is_ok() || !dir.exists() {
        return true;
    }
    // cgroup v2 kills the whole cgroup in one write; v1 is read and killed pid by pid.
    if fs::write(dir.join("cgroup.kill"), "1").is_err() {
        let procs = fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
        for pid in procs.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
        }
    }
    fs::remove_dir(dir).is_ok()
}

/// The directory where commands' cgroups are made, checked by making and removing
/// one; or why there is none.
pub fn usable_root() -> Result<PathBuf, String> {
    let mountinfo = fs::read_to_string("/proc/self/mountinfo").map_err(|e| format!("/proc/self/mountinfo: {e}"))?;
    let membership = fs::read_to_string("/proc/self/cgroup").map_err(|e| format!("/proc/self/cgroup: {e}"))?;
    let root = v1_pids_dir(&mountinfo, &membership)
        .or_else(|| v2_dir(&mountinfo, &membership))
        .ok_or_else(|| "no pids cgroup controller that Conclave may use (cgroup v1 `pids`, or a cgroup v2 directory whose `pids` controller it can hand down)".to_string())?;
    let (cgroup, _procs) = CommandCgroup::create(&root, 1)
        .map_err(|e| format!("cannot create a pids cgroup in {}: {e}", root.display()))?;
    drop(cgroup);
    Ok(root)
}

/// cgroup v1: the `pids` hierarchy's mount point joined with this process's path in it.
fn v1_pids_dir(mountinfo: &str, membership: &str) -> Option<PathBuf> {
    let mount = mountinfo.lines().find_map(|line| {
        let (mount, after) = line.split_once(" - ")?;
        let mut fields = after.split_whitespace();
        let (kind, options) = (fields.next()?, fields.nth(1)?);
        (kind == "cgroup" && options.split(',').any(|o| o == "pids")).then(|| mount.split_whitespace().nth(4))?
    })?;
    let path = membership.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        controllers.split(',').any(|c| c == "pids").then_some(path)
    })?;
    let dir = Path::new(mount).join(path.trim_start_matches('/'));
    Some(dir.components().collect())
}

/// cgroup v2: this process's directory, when `pids` is among its controllers and
/// can be enabled for the cgroups made under it.
fn v2_dir(mountinfo: &str, membership: &str) -> Option<PathBuf> {
    let mount = mountinfo.lines().find_map(|line| {
        let (mount, after) = line.split_once(" - ")?;
        (after.split_whitespace().next()? == "cgroup2").then(|| mount.split_whitespace().nth(4))?
    })?;
    let path = membership.lines().find_map(|line| line.strip_prefix("0::"))?;
    let dir: PathBuf = Path::new(mount).join(path.trim_start_matches('/')).components().collect();
    let controllers = fs::read_to_string(dir.join("cgroup.controllers")).ok()?;
    if !controllers.split_whitespace().any(|c| c == "pids") {
        return None;
    }
    let enabled = fs::read_to_string(dir.join("cgroup.subtree_control")).ok()?;
    if !enabled.split_whitespace().any(|c| c == "pids") {
        let mut control = OpenOptions::new().write(true).open(dir.join("cgroup.subtree_control")).ok()?;
        control.write_all(b"+pids").ok()?;
    }
    Some(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n\
        35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n\
        39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n\
        41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

    #[test]
    fn the_v1_pids_hierarchy_is_found_with_this_process_path_in_it() {
        let membership = "8:pids:/ci/job\n4:memory:/x\n0::/\n";
        assert_eq!(v1_pids_dir(MOUNTINFO, membership), Some(PathBuf::from("/sys/fs/cgroup/pids/ci/job")));
        assert_eq!(v1_pids_dir(MOUNTINFO, "4:memory:/x\n0::/\n"), None);
    }
}
