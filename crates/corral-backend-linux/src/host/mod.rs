//! The host effects of a sandbox's life, behind two traits. [`Host`]:
//! its teardown — stopping its init, closing its preview ports and
//! network, emptying its cgroup, releasing its id range and key claim,
//! handing its directory to a reaper (`crate::reaping`), and what a reaper
//! does: unmounting its writable layer, removing its cgroup and its
//! directory — and, for
//! [`crate::gc`], finding the inits, forwarders, mounts and cgroups on the
//! host, killing orphans and sweeping firewall tables. [`Build`]: the
//! steps of its create, from its directory to the commit of its init
//! ([`build`]).
//!
//! `RealHost` ([`crate::real_host`]) performs them; `RecordingHost` (built
//! for the crate's tests only) records each call (a [`HostCall`]) instead and can be told to fail one,
//! so that the order of [`crate::create`] and of
//! [`crate::destroy::teardown`], what a failed create leaves to its
//! rollback, what a teardown still does after a failure, and what a gc
//! pass spares and reclaims are tested without root. Which one a
//! [`crate::state::State`] uses is chosen where it is made (`State::open`
//! takes it: the backend passes the real one, a test the one it needs),
//! never by the build.
//!
//! Low-level: the traits name only ids, paths, pids, the cgroup hierarchy
//! and plain values (and the two handles [`build`] names), so that the
//! state directory holds a host without the host depending on it.
//! `RealHost` sits at the top, beside the backend: it calls the modules
//! that own each effect.

mod build;
// The fake is compiled for the crate's tests only; which host a `State`
// uses is still chosen where it is made, never by the build.
#[cfg(test)]
pub(crate) mod recording;

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

use corral_backend::Result;

use crate::cgroup::Cgroups;

pub use crate::hostproc::{Forwarder, InitProcess};
pub use build::{Build, InitLink, WritableLayer};
#[cfg(test)]
pub use recording::{HostCall, HostStep, InitModel, RecordingHost};

/// One effect on the host per method, each named after what it does.
pub trait Host: Send + Sync + std::fmt::Debug {
    /// Thaws the cgroup of sandbox `id` (frozen processes can neither act
    /// on `Shutdown` nor die); quiet when it has none.
    fn thaw_cgroup(&self, cgroups: Option<&Cgroups>, id: &str);

    /// Removes the record at `path` (from then on the sandbox is not
    /// listed); quiet when it is gone.
    fn remove_record(&self, path: &Path);

    /// Closes the preview ports published for the sandbox in `dir`.
    fn close_previews(&self, dir: &Path) -> Result<()>;

    /// Asks PID 1 of the sandbox in `dir` to shut down over its control
    /// socket; whether the socket answered.
    fn send_shutdown(&self, dir: &Path) -> bool;

    /// When host process `pid` started (boot ticks), while it runs: with
    /// its pid, what names one process for good (the liveness of a
    /// recorded init or creator).
    fn process_start(&self, pid: u32) -> Option<u64>;

    /// A handle on host process `pid`, when it exists and (for `Some`
    /// `start`) started at the recorded `start` time.
    fn open_process(&self, pid: u32, start: Option<u64>) -> Option<Process>;

    /// The parent of host process `pid` when it is a `corral-init` (the
    /// outer init, which exits right after reaping PID 1).
    fn outer_init(&self, pid: u32) -> Option<u32>;

    /// Whether `process` exits within `wait`.
    fn wait_exit(&self, process: &Process, wait: Duration) -> bool;

    /// Sends `SIGKILL` to `process`.
    fn kill(&self, process: &Process);

    /// Removes the network of the sandbox in `dir` (veth, nft rules).
    fn teardown_network(&self, dir: &Path) -> Result<()>;

    /// Kills whatever is left in the cgroup of sandbox `id` and waits
    /// (bounded) until it holds no process; quiet when it has none.
    fn empty_cgroup(&self, cgroups: Option<&Cgroups>, id: &str) -> Result<()>;

    /// Removes the cgroup of sandbox `id` and whatever is left in it;
    /// nothing when it has none.
    fn remove_cgroup(&self, cgroups: Option<&Cgroups>, id: &str) -> Result<()>;

    /// Detaches everything mounted on `fs` (the writable layer and what is
    /// mounted on it).
    fn unmount_all(&self, fs: &Path) -> std::io::Result<()>;

    /// Releases the user-id range of sandbox `id` kept in `ranges`.
    fn release_id_range(&self, ranges: &Path, id: &str);

    /// Removes the sandbox directory `dir` (or its entry in `reaping/`),
    /// never crossing into a mount: a directory below it that is still
    /// mounted on refuses the removal (`EBUSY`), and nothing is removed
    /// through it.
    fn remove_sandbox_dir(&self, dir: &Path) -> std::io::Result<()>;

    /// Moves the directory `dir` of a stopped sandbox to `entry` in
    /// `reaping/` (one rename, on the same file system; mounts below it
    /// move with it); `NotFound` when `dir` is gone, `AlreadyExists` when
    /// `entry` is there.
    fn move_to_reaping(&self, dir: &Path, entry: &Path) -> std::io::Result<()>;

    /// Starts a reaper for `entry` (of sandbox `id`, whose cgroup is in
    /// `cgroups`): a detached process that finishes it and outlives this
    /// one (`crate::reaper`).
    fn start_reaper(
        &self,
        entry: &Path,
        cgroups: Option<&Cgroups>,
        id: &str,
    ) -> std::io::Result<()>;

    /// The lock of `entry` in `reaping/`, when no one else holds it (a
    /// reaper holds it while it works, and so does gc): `None` when it is
    /// held, or the entry is gone; an error when it cannot be taken for
    /// any other reason (never read as "someone holds it", which would
    /// leave the entry unfinished without a word). Released when dropped.
    fn lock_entry(&self, entry: &Path) -> std::io::Result<Option<EntryLock>>;

    /// Releases the key claim in file `claim` when sandbox `id` holds it.
    fn release_key(&self, claim: &Path, id: &str);

    /// Every `corral-init` process on this host, with its cgroups.
    fn init_processes(&self) -> Vec<InitProcess>;

    /// Every preview forwarder on this host, with the directory it serves.
    fn preview_forwarders(&self) -> Vec<Forwarder>;

    /// Sends `SIGKILL` to each `(pid, start)` that still started at `start`
    /// and waits up to `wait` for them to go; how many were signalled.
    fn kill_all(&self, procs: &[(u32, u64)], wait: Duration) -> usize;

    /// Every mount point of this process's mount namespace (empty when the
    /// table cannot be read).
    fn mount_points(&self) -> Vec<PathBuf>;

    /// The names of the cgroups beside this backend's sandboxes' (every
    /// state directory's); empty without cgroups.
    fn cgroup_names(&self, cgroups: Option<&Cgroups>) -> Vec<String>;

    /// How long ago cgroup `name` last changed, when it exists and holds no
    /// process; `None` otherwise (or when that cannot be told).
    fn empty_cgroup_age(&self, cgroups: Option<&Cgroups>, name: &str) -> Option<Duration>;

    /// Removes the firewall tables and `FORWARD` rules this backend made
    /// for links that are gone; the links whose leftovers went (none
    /// without `nft`).
    fn sweep_tables(&self) -> Vec<String>;
}

/// A host process named by pid and, when opened for real, by a pidfd (which
/// keeps naming it even if the pid were reused).
#[derive(Debug)]
pub struct Process {
    pid: u32,
    pidfd: Option<OwnedFd>,
}

impl Process {
    /// Process `pid`, with its `pidfd` when one was opened.
    pub fn new(pid: u32, pidfd: Option<OwnedFd>) -> Self {
        Process { pid, pidfd }
    }

    /// Its host pid.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Its pidfd, when one was opened.
    pub fn pidfd(&self) -> Option<&OwnedFd> {
        self.pidfd.as_ref()
    }
}

/// The lock on one entry of `reaping/` (an `flock` on its directory):
/// whoever holds it is the one finishing that entry. Released when dropped,
/// or when its holder dies.
#[derive(Debug)]
pub struct EntryLock {
    _dir: Option<OwnedFd>,
}

impl EntryLock {
    /// The lock held through `dir`, the entry's directory locked with
    /// `flock` (`None` on a host that only records).
    pub fn new(dir: Option<OwnedFd>) -> Self {
        EntryLock { _dir: dir }
    }
}

#[cfg(test)]
pub(crate) mod fixture;
#[cfg(test)]
mod teardown_tests;
