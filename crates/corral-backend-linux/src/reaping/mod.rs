//! Reaping: what of a destroyed sandbox may come after `destroy` answers.
//!
//! `destroy` answers once what a caller relies on holds: the sandbox is
//! not listed, every one of its processes is dead (PID 1 and its pid
//! namespace, the outer init, the cgroup empty), its preview ports are
//! closed, its network is torn down, and its key and id range are free
//! for a new create. What is left is host state no one can reach:
//! its writable layer's mounts (and the loop device under an ext4 layer),
//! its disk image, its directory and its cgroup's directories. Detaching
//! and removing those is most of a destroy's time (a lazy unmount waits
//! for the kernel's grace periods; unlinking a disk image frees its
//! blocks), so `destroy` moves the directory, whole, from `sandboxes/` to
//! `reaping/` (one rename on the same file system: mounts below it move
//! with it, and a directory that is itself a mount point could not move)
//! and hands it to a reaper ([`crate::reaper`]).
//!
//! # Who finishes an entry
//!
//! Whoever holds its lock ([`crate::host::Host::lock_entry`]: an `flock`
//! on the entry's directory, freed when its holder exits or dies): the
//! reaper started for it, or, when that reaper is gone (killed half-way,
//! never started), the next `gc` pass. Each takes the lock without
//! waiting and leaves the entry alone when it is held, so two reapers, or
//! a reaper and gc, never act on one entry at once; every step is
//! idempotent, so whoever comes next finishes what an earlier one left.
//!
//! [`finish`] is the one sequence, for an entry of `reaping/` and, when a
//! teardown runs inline (a create's rollback, gc's reclaim, a destroy whose
//! reaper could not start), for a directory still in `sandboxes/`: detach
//! the writable layer by its known mount point (`umount2(MNT_DETACH)` of
//! the top detaches everything mounted below it; no mount table is read),
//! remove the cgroup, and remove the directory last (it is the marker that
//! something is left), a removal that refuses to cross into anything still
//! mounted ([`remove::remove_within_mount`]). Only when that refusal
//! happens does gc read the mount table, to detach what it names.

pub mod remove;

use std::path::Path;
use std::time::{Duration, Instant};

use corral_backend::Result;

use crate::host::Host;
use crate::state::{FS_DIR, State, is_sandbox_id, state_error};

/// Finishes stopped sandbox `id` whose directory is `dir` (its own in
/// `sandboxes/`, or its entry in `reaping/`): detaches its writable layer
/// (with `unmount`; rootless, nothing is mounted on the host), removes its
/// cgroup (`remove_cgroup`), then the directory. A failed step does not
/// stop the next unless it needs it; the first failure is returned, and
/// the directory — what tells a later pass that something is left — is
/// kept until the unmount and the cgroup's removal succeeded.
pub(crate) fn finish(
    host: &dyn Host,
    id: &str,
    dir: &Path,
    unmount: bool,
    remove_cgroup: impl FnOnce() -> Result<()>,
) -> Result<()> {
    let unmounted = match unmount {
        true => host
            .unmount_all(&dir.join(FS_DIR))
            .map_err(|e| state_error(format_args!("unmounting sandbox {id}"), &e)),
        false => Ok(()),
    };
    let cgroup = remove_cgroup();
    unmounted.and(cgroup)?;
    host.remove_sandbox_dir(dir)
        .map_err(|e| state_error(format_args!("removing sandbox {id}"), &e))
}

/// Finishes the entry of sandbox `id` in `reaping/` here, under its lock:
/// `None` when someone else holds it (its reaper, or a gc pass), or it is
/// gone.
pub(crate) fn finish_entry(state: &State, id: &str) -> Option<Result<()>> {
    let _lock = match lock(state, id) {
        Ok(Some(lock)) => lock,
        Ok(None) => return None,
        Err(e) => return Some(Err(e)),
    };
    Some(finish_locked(state, id))
}

/// The lock of sandbox `id`'s entry in `reaping/` ([`crate::host::Host::lock_entry`]),
/// its failure as the backend's error.
pub(crate) fn lock(state: &State, id: &str) -> Result<Option<crate::host::EntryLock>> {
    state
        .host
        .lock_entry(&state.reaping_entry(id))
        .map_err(|e| {
            state_error(
                format_args!("locking the reaping entry of sandbox {id}"),
                &e,
            )
        })
}

/// Finishes the entry of sandbox `id` in `reaping/`; the caller holds its
/// lock ([`lock`]).
pub(crate) fn finish_locked(state: &State, id: &str) -> Result<()> {
    let host = state.host.as_ref();
    let entry = state.reaping_entry(id);
    finish(host, id, &entry, !state.rootless, || {
        host.remove_cgroup(state.cgroups.as_ref(), id)
    })
}

/// The sandbox ids with an entry in `reaping/`, sorted.
pub(crate) fn entries(state: &State) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(state.reaping()) else {
        return Vec::new();
    };
    let mut ids: Vec<String> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .filter(|n| is_sandbox_id(n))
        .collect();
    ids.sort();
    ids
}

/// Waits until `reaping/` holds no entry, polling at most `limit`: whether
/// it emptied (every reaper finished, or a pass did their work). With
/// `help`, each entry no reaper holds is finished here meanwhile.
pub(crate) fn wait_empty(state: &State, limit: Duration, help: bool) -> bool {
    let deadline = Instant::now() + limit;
    let mut pause = Duration::from_millis(1);
    loop {
        let left = entries(state);
        if left.is_empty() {
            return true;
        }
        if help {
            for id in &left {
                let _ = finish_entry(state, id);
            }
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

#[cfg(test)]
#[path = "abandoned_tests.rs"]
mod abandoned_tests;
