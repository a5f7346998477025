//! The processes of this host as `/proc` shows them, and the one way this
//! backend kills a process it did not start in this call: by pid *and*
//! start time, so that a reused pid is never hit.
//!
//! Low-level: it knows nothing of sandboxes or the state directory; what a
//! process found here means is decided above it ([`crate::gc`]).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use corral_backend::host_process::process_start;

/// A running `corral-init` process, with where it sits in the cgroup tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitProcess {
    /// Its host pid.
    pub pid: u32,
    /// Its start time (boot ticks): with `pid`, what names it for good.
    pub start: u64,
    /// The last component of each of its cgroup paths (one per line of
    /// `/proc/<pid>/cgroup`): a sandbox's init sits in the cgroup named
    /// after the sandbox.
    pub cgroups: Vec<String>,
}

/// A running process that names the directory it serves on its command
/// line (a preview forwarder, see [`crate::preview`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forwarder {
    /// Its host pid.
    pub pid: u32,
    /// Its start time (boot ticks).
    pub start: u64,
    /// The sandbox directory it serves.
    pub dir: PathBuf,
}

/// The pid of every process on this host (the numeric names in `/proc`);
/// empty when `/proc` cannot be listed.
pub(crate) fn pids() -> impl Iterator<Item = u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
}

/// Every `corral-init` process on this host (by its `comm`), with the last
/// component of each of its cgroup paths.
pub(crate) fn corral_inits() -> Vec<InitProcess> {
    let mut out = Vec::new();
    for pid in pids() {
        let is_init = std::fs::read(format!("/proc/{pid}/comm"))
            .is_ok_and(|comm| comm.trim_ascii_end() == b"corral-init");
        if !is_init {
            continue;
        }
        let Ok(cgroups) = std::fs::read_to_string(format!("/proc/{pid}/cgroup")) else {
            continue;
        };
        let cgroups = cgroups
            .lines()
            .filter_map(|line| line.rsplit('/').next())
            .map(str::to_owned)
            .collect();
        if let Some(start) = process_start(pid) {
            out.push(InitProcess {
                pid,
                start,
                cgroups,
            });
        }
    }
    out
}

/// `SIGKILL`s each `(pid, start)` while its start time still matches (so a
/// reused pid is never hit) and waits up to `wait` for them to go; returns
/// how many were signalled.
pub(crate) fn kill_all(procs: &[(u32, u64)], wait: Duration) -> usize {
    let mut n = 0;
    for (pid, start) in procs {
        if process_start(*pid) == Some(*start)
            && let Some(p) = i32::try_from(*pid)
                .ok()
                .and_then(rustix::process::Pid::from_raw)
            && rustix::process::kill_process(p, rustix::process::Signal::KILL).is_ok()
        {
            n += 1;
        }
    }
    let deadline = Instant::now() + wait;
    let mut pause = Duration::from_micros(100);
    while Instant::now() < deadline
        && procs
            .iter()
            .any(|(pid, start)| process_start(*pid) == Some(*start))
    {
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(5));
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_listed_and_killing_nothing_kills_nothing() {
        assert!(pids().any(|p| p == std::process::id()));
        assert_eq!(kill_all(&[(u32::MAX, 1)], Duration::ZERO), 0);
        let me = std::process::id();
        let other_start = process_start(me).unwrap() + 1;
        assert_eq!(
            kill_all(&[(me, other_start)], Duration::ZERO),
            0,
            "a pid whose start time differs is another process"
        );
    }
}
