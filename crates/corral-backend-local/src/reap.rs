//! Reaping every host process a sandbox started, wherever it went.
//!
//! Killing the process groups `destroy` knows is not enough: a process that
//! leaves its group with `setsid` (what every background-process manager
//! does) or double-forks keeps running after its command has ended, and the
//! backend instance that started it may itself be gone. So every process the
//! backend starts carries a marker in its environment, `CORRAL_SANDBOX=<id>`
//! ([`MARKER`]), set after every other variable so neither the sandbox's
//! create-time environment nor a request's can override it. Children
//! inherit it.
//!
//! [`reap`] scans `/proc` for the processes of a sandbox and sends `SIGKILL`
//! to each. A process belongs to sandbox `id` when
//!
//! - its initial environment (`/proc/<pid>/environ`) holds `CORRAL_SANDBOX=<id>`, or
//! - its working directory (`/proc/<pid>/cwd`) is beneath the sandbox's
//!   directory, or beneath a directory a destroy of that sandbox renamed it
//!   to (`.trash-<id>-…`).
//!
//! The scan repeats, a short pause apart, until one finds nothing more to
//! kill (a dying parent may still fork), within [`REAP_BOUND`]; what is still
//! running then is an error naming the pids. A process is signalled through
//! a pidfd opened after a first look and *before* a second, so a pid reused
//! between the look and the kill never sends the signal to an unrelated
//! process, and no descriptor is opened for the host's other processes
//! (where the kernel has no pidfds, the plain pid is signalled). Our own pid is never
//! signalled, nor is any process whose environment and working directory we
//! may not read or that we may not signal (another user's).
//!
//! Limits, honestly: the local backend isolates nothing, so a process that
//! both replaces its environment (`env -i`, or overwriting `CORRAL_SANDBOX`) **and**
//! moves its working directory outside the sandbox escapes the scan, as does
//! one started by a setuid program that we may not inspect. Where `/proc` is
//! missing or unreadable, nothing is scanned: `destroy` then kills only the
//! live process groups its own instance started, as it did before markers.

use std::collections::BTreeSet;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, Instant};

use corral_backend::{ExecError, Result};
use rustix::io::Errno;
use rustix::process::{Pid, PidfdFlags, Signal};

use crate::state::State;

/// The environment variable naming the sandbox a process belongs to.
pub(crate) const MARKER: &str = "CORRAL_SANDBOX";

/// How long [`reap`] keeps scanning while processes remain.
pub(crate) const REAP_BOUND: Duration = Duration::from_secs(2);

/// The pause between two scans that found something to kill.
const RESCAN_PAUSE: Duration = Duration::from_millis(10);

/// Where the kernel lists processes.
const PROC: &str = "/proc";

/// How the processes of one sandbox are recognised.
struct Matcher {
    /// `CORRAL_SANDBOX=<id>`, one entry of an environment block.
    entry: Vec<u8>,
    /// The sandbox id.
    id: String,
    /// The state's `sandboxes/` directory as the kernel names it (symlinks
    /// resolved); `None` when it cannot be resolved (only the marker counts).
    sandboxes: Option<PathBuf>,
}

impl Matcher {
    fn new(state: &State, id: &str) -> Self {
        Matcher {
            entry: format!("{MARKER}={id}").into_bytes(),
            id: id.to_owned(),
            sandboxes: std::fs::canonicalize(state.sandboxes()).ok(),
        }
    }

    /// Whether the process `pid` belongs to the sandbox. A process we may
    /// not inspect, or that is gone or a zombie, does not.
    fn owns(&self, pid: &str) -> bool {
        let dir = Path::new(PROC).join(pid);
        if let Ok(cwd) = std::fs::read_link(dir.join("cwd"))
            && self.cwd_inside(&cwd)
        {
            return true;
        }
        std::fs::read(dir.join("environ"))
            .is_ok_and(|env| env.split(|b| *b == 0).any(|e| e == self.entry))
    }

    /// Whether a working directory, as `/proc/<pid>/cwd` names it, is
    /// beneath the sandbox's directory or one of its destroy renames.
    fn cwd_inside(&self, cwd: &Path) -> bool {
        let Some(sandboxes) = &self.sandboxes else {
            return false;
        };
        let Ok(rest) = cwd.strip_prefix(sandboxes) else {
            return false;
        };
        let Some(Component::Normal(first)) = rest.components().next() else {
            return false;
        };
        let Some(first) = first.to_str() else {
            return false;
        };
        // The kernel appends " (deleted)" to a removed directory's name.
        let first = first.strip_suffix(" (deleted)").unwrap_or(first);
        first == self.id
            || first
                .strip_prefix(".trash-")
                .and_then(|t| t.strip_prefix(self.id.as_str()))
                .is_some_and(|t| t.starts_with('-'))
    }
}

/// Kills every host process of sandbox `id` (blocking): scans until a scan
/// finds none left, for at most [`REAP_BOUND`]. `timeout` naming the pids
/// still running after that; `Ok` at once where `/proc` cannot be listed.
pub(crate) fn reap(state: &State, id: &str) -> Result<()> {
    let matcher = Matcher::new(state, id);
    let start = Instant::now();
    loop {
        let Some(signalled) = kill_pass(&matcher) else {
            return Ok(());
        };
        if signalled.is_empty() {
            return Ok(());
        }
        if start.elapsed() >= REAP_BOUND {
            let pids: Vec<String> = signalled.iter().map(ToString::to_string).collect();
            return Err(ExecError::KillUnconfirmed {
                what: format!("sandbox {id}: processes {}", pids.join(", ")),
                within: REAP_BOUND,
            }
            .into());
        }
        std::thread::sleep(RESCAN_PAUSE);
    }
}

/// One scan of `/proc`: sends `SIGKILL` to every process the matcher owns
/// and returns the pids signalled. `None` when `/proc` cannot be listed.
fn kill_pass(matcher: &Matcher) -> Option<BTreeSet<u32>> {
    let entries = std::fs::read_dir(PROC).ok()?;
    let own = std::process::id();
    let mut signalled = BTreeSet::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            continue;
        };
        let Ok(raw) = name.parse::<u32>() else {
            continue;
        };
        if raw == own {
            continue;
        }
        let Some(pid) = i32::try_from(raw).ok().and_then(Pid::from_raw) else {
            continue;
        };
        // Most of the host's processes are not the sandbox's: rejected on a
        // first look, without opening a descriptor for each.
        if !matcher.owns(name) {
            continue;
        }
        // Then opened and looked at again, so the signal reaches the process
        // looked at even were the pid reused since the first look.
        let pidfd = match rustix::process::pidfd_open(pid, PidfdFlags::empty()) {
            Ok(fd) => Some(fd),
            Err(Errno::SRCH) => continue,
            Err(_) => None,
        };
        if !matcher.owns(name) {
            continue;
        }
        if kill(pid, pidfd.as_ref()) {
            signalled.insert(raw);
        }
    }
    Some(signalled)
}

/// Sends `SIGKILL`; whether it was delivered to a living process.
fn kill(pid: Pid, pidfd: Option<&OwnedFd>) -> bool {
    let sent = match pidfd {
        Some(fd) => rustix::process::pidfd_send_signal(fd, Signal::KILL),
        None => rustix::process::kill_process(pid, Signal::KILL),
    };
    sent.is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matcher() -> Matcher {
        Matcher {
            entry: b"CORRAL_SANDBOX=loc-0123456789abcdef".to_vec(),
            id: "loc-0123456789abcdef".into(),
            sandboxes: Some(PathBuf::from("/state/sandboxes")),
        }
    }

    #[test]
    fn working_directories_beneath_the_sandbox_or_its_trash_belong_to_it() {
        let m = matcher();
        let inside = [
            "/state/sandboxes/loc-0123456789abcdef",
            "/state/sandboxes/loc-0123456789abcdef/root/workspace",
            "/state/sandboxes/loc-0123456789abcdef (deleted)",
            "/state/sandboxes/.trash-loc-0123456789abcdef-00ff00ff00ff00ff/root",
        ];
        for p in inside {
            assert!(m.cwd_inside(Path::new(p)), "{p}");
        }
        let outside = [
            "/state/sandboxes",
            "/state/sandboxes/loc-0123456789abcdee/root",
            "/state/sandboxes/loc-0123456789abcdef0",
            "/state/sandboxes/.trash-loc-0123456789abcdee-00ff00ff00ff00ff",
            "/state/sandboxes/.trash-loc-0123456789abcdef",
            "/state/sandboxes2/loc-0123456789abcdef",
            "/elsewhere/loc-0123456789abcdef",
            "/",
        ];
        for p in outside {
            assert!(!m.cwd_inside(Path::new(p)), "{p}");
        }
    }

    #[test]
    fn without_a_resolved_state_only_the_marker_counts() {
        let mut m = matcher();
        m.sandboxes = None;
        assert!(!m.cwd_inside(Path::new("/state/sandboxes/loc-0123456789abcdef/root")));
    }

    #[test]
    fn our_own_process_is_never_owned_by_a_sandbox_it_is_not_in() {
        let m = matcher();
        assert!(!m.owns("self"));
    }
}
