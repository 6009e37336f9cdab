//! Which process runs a run: an owner token a later process can check, so that runs
//! whose process died are told apart from live ones.

use sysinfo::{Pid, ProcessRefreshKind, ProcessesToUpdate, System};

/// Identifies this process: `pid:<pid>:<start time>` (the start time guards against
/// a pid being reused by another process). The process table is read once per
/// process, so that starting a run from async code reads no file.
pub fn owner_token() -> String {
    static TOKEN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TOKEN
        .get_or_init(|| {
            let pid = std::process::id();
            format!("pid:{pid}:{}", process_start_time(pid).unwrap_or_default())
        })
        .clone()
}

/// Whether the process named by an [`owner_token`] is still running.
pub fn owner_alive(owner: &str) -> bool {
    let mut parts = owner.splitn(3, ':');
    let (Some("pid"), Some(pid), start) = (parts.next(), parts.next(), parts.next()) else { return false };
    let Ok(pid) = pid.parse::<u32>() else { return false };
    if pid == std::process::id() {
        return true;
    }
    match process_start_time(pid) {
        Some(actual) => start.is_none_or(|s| s.is_empty() || s == actual.to_string()),
        None => false,
    }
}

/// When process `pid` started, in seconds since the epoch, if it exists.
fn process_start_time(pid: u32) -> Option<u64> {
    let pid = Pid::from_u32(pid);
    let mut system = System::new();
    system.refresh_processes_specifics(ProcessesToUpdate::Some(&[pid]), false, ProcessRefreshKind::nothing());
    system.process(pid).map(|p| p.start_time())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_made_up_one_is_not() {
        assert!(owner_alive(&owner_token()));
        assert!(!owner_alive("pid:4294967000:1"));
        assert!(!owner_alive("garbage"));
        let parent = std::os::unix::process::parent_id();
        let start = process_start_time(parent).expect("the parent process exists");
        assert!(owner_alive(&format!("pid:{parent}:{start}")), "a live process with its start time");
        assert!(!owner_alive(&format!("pid:{parent}:{}", start + 1)), "the same pid with another start time");
    }
}
