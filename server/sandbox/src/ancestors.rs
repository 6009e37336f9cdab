//! Conclave and the processes that started it, read from `/proc`: the targets a
//! command's signals are refused for on kernels without Landlock's signal scope.
//! Every ancestor's pid and process group, Conclave's threads (a signal to a thread
//! id reaches its whole process), and `-1` (every process the sender may signal).

use std::collections::BTreeSet;

/// The most of Conclave's thread ids put in the filter (each costs a few
/// instructions of the filter's 4,096).
const MAX_THREADS: usize = 128;

/// The signal targets to refuse: `-1`, and for Conclave and each ancestor up to the
/// first process, its pid and minus its process group; and Conclave's thread ids.
pub fn signal_targets() -> Vec<i32> {
    let mut targets = BTreeSet::from([-1]);
    let mut pid = std::process::id() as i32;
    while pid > 0 && targets.insert(pid) {
        let Some((parent, group)) = parent_and_group(pid) else { break };
        if group > 0 {
            targets.insert(-group);
        }
        pid = parent;
    }
    let threads = std::fs::read_dir("/proc/self/task").into_iter().flatten().flatten();
    targets.extend(threads.filter_map(|t| t.file_name().to_str()?.parse::<i32>().ok()).take(MAX_THREADS));
    targets.into_iter().collect()
}

/// A process's parent and process group, from `/proc/PID/stat`.
fn parent_and_group(pid: i32) -> Option<(i32, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: the fields follow the last `)`.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let _state = fields.next()?;
    let parent = fields.next()?.parse().ok()?;
    let group = fields.next()?.parse().ok()?;
    Some((parent, group))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_targets_hold_this_process_its_parent_and_every_process() {
        let targets = signal_targets();
        let me = std::process::id() as i32;
        let parent = nix::unistd::getppid().as_raw();
        assert!(targets.contains(&me) && targets.contains(&parent) && targets.contains(&-1), "{targets:?}");
        assert!(targets.contains(&-nix::unistd::getpgrp().as_raw()), "{targets:?}");
    }
}
