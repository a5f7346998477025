//! `destroy` and rollback: stop PID 1 (which takes its whole pid namespace
//! with it), close the sandbox's preview ports and network, empty its
//! cgroup, release its id range — what a caller relies on once `destroy`
//! answers ([`stop`]) — then hand the rest to a reaper
//! (`crate::reaping`): detaching its writable layer and everything
//! mounted on it (an ext4 layer's loop device then unbinds itself),
//! removing its cgroup and its directory (and the disk image in it) once
//! nothing is mounted below it. Idempotent; never follows a symlink; never
//! signals a pid whose start time differs from the recorded one. This is
//! the one teardown of a sandbox: `destroy`, a failed create's rollback and
//! every reclaim of [`crate::gc`] end here (the last two finish inline:
//! [`teardown`], [`destroy_here`]). Every effect on the host goes through the state's
//! [`Host`], in the order [`stop`] and `crate::reaping::finish` give.

use std::time::Duration;

use corral_backend::Result;

use crate::host::Host;
use crate::reaping;
use crate::state::{State, is_sandbox_id, read_meta};

/// How long PID 1 gets to exit after `Shutdown` before `SIGKILL`.
pub(crate) const GRACE: Duration = Duration::from_millis(500);
/// How long PID 1 gets to exit after `SIGKILL`.
pub(crate) const KILLED: Duration = Duration::from_secs(5);
/// How long the outer init gets to exit after PID 1 did.
pub(crate) const OUTER: Duration = Duration::from_secs(1);

/// Destroys sandbox `id` (blocking). Unknown ids succeed. Answers once the
/// sandbox is stopped ([`stop`]); its directory is then in `reaping/`,
/// finished by a reaper (or, should none start, here). The key claim is
/// released even when the teardown failed: the record is gone by then, so
/// no later destroy could find the key again.
pub fn destroy(state: &State, id: &str) -> Result<()> {
    destroy_then(state, id, hand_off)
}

/// [`destroy`], finishing the sandbox here before answering ([`teardown`]):
/// gc's reclaim, which reports a sandbox reclaimed once it is gone.
pub fn destroy_here(state: &State, id: &str) -> Result<()> {
    destroy_then(state, id, |state, id| {
        finish_here(state, id, &state.sandbox_dir(id))
    })
}

/// Stops sandbox `id`, then runs `finish` on it once stopped; releases its
/// key whatever happened.
fn destroy_then(state: &State, id: &str, finish: fn(&State, &str) -> Result<()>) -> Result<()> {
    if !is_sandbox_id(id) {
        return Ok(());
    }
    let key = read_meta(state, id).ok().flatten().and_then(|m| m.key);
    let torn = match stop(state, id) {
        Ok(Stop::Done) => finish(state, id),
        Ok(Stop::NoDirectory) => Ok(()),
        Err(e) => Err(e),
    };
    if let Some(key) = key {
        state.host.release_key(&state.key_path(&key), id);
    }
    torn
}

/// Removes everything of sandbox `id`, whatever state it is in, here and
/// now: [`stop`], then `crate::reaping::finish` on its directory in
/// `sandboxes/` (a create's rollback and gc's reclaim, which need not
/// answer early).
pub fn teardown(state: &State, id: &str) -> Result<()> {
    if stop(state, id)? == Stop::NoDirectory {
        return Ok(());
    }
    finish_here(state, id, &state.sandbox_dir(id))
}

/// Finishes stopped sandbox `id`, whose directory is `dir`, here and now.
fn finish_here(state: &State, id: &str, dir: &std::path::Path) -> Result<()> {
    let host = state.host.as_ref();
    reaping::finish(host, id, dir, !state.rootless, || {
        host.remove_cgroup(state.cgroups.as_ref(), id)
    })
}

/// What [`stop`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The sandbox had a directory: it is stopped now.
    Done,
    /// It has no directory (never made, or already handed off): nothing
    /// was done.
    NoDirectory,
}

/// Brings sandbox `id` to where a destroy may answer: not listed, every
/// process dead (PID 1, its pid namespace, the outer init: the cgroup
/// empty), preview ports closed, network torn down, id range released. A
/// failed step does not stop the steps that do not depend on it; the first
/// failure is returned, and then the id range is kept (something of the
/// sandbox may still run) and the directory stays in `sandboxes/`, holding
/// what a later teardown (a retried destroy, gc) needs to finish.
pub(crate) fn stop(state: &State, id: &str) -> Result<Stop> {
    let host: &dyn Host = state.host.as_ref();
    let dir = state.sandbox_dir(id);
    if std::fs::symlink_metadata(&dir).is_err() {
        return Ok(Stop::NoDirectory);
    }
    let meta = read_meta(state, id).ok().flatten();
    // Frozen processes cannot act on Shutdown or die: thaw first.
    host.thaw_cgroup(state.cgroups.as_ref(), id);
    // The record goes first: from here on the sandbox is not listed.
    host.remove_record(&state.meta_path(id));
    // Then its preview ports: closed when `destroy` returns.
    let mut first_error = host.close_previews(&dir).err();
    host.send_shutdown(&dir);
    if let Some(meta) = &meta {
        stop_init(host, meta.init_pid, meta.init_start);
    }
    let network = host.teardown_network(&dir);
    // Whatever is left in the cgroup dies now; its directories go later.
    let cgroup = host.empty_cgroup(state.cgroups.as_ref(), id);
    for step in [network, cgroup] {
        if let Err(e) = step {
            first_error.get_or_insert(e);
        }
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    // Nothing of the sandbox runs: a new create may take its id range.
    host.release_id_range(&crate::userns::ranges::dir(state.dir()), id);
    Ok(Stop::Done)
}

/// Moves stopped sandbox `id`'s directory to `reaping/` and starts its
/// reaper. Where the move fails (an entry of that name is left over), the
/// sandbox is finished here, in place; where no reaper starts, its entry
/// is finished here (unless a gc pass holds it already, and finishes it).
fn hand_off(state: &State, id: &str) -> Result<()> {
    let host = state.host.as_ref();
    let dir = state.sandbox_dir(id);
    let entry = state.reaping_entry(id);
    match host.move_to_reaping(&dir, &entry) {
        Ok(()) => {}
        // A concurrent destroy of the same sandbox moved it first: only
        // when the directory is gone. A missing `reaping/` (removed while
        // the backend was open) leaves it in place, to be finished here.
        Err(e)
            if e.kind() == std::io::ErrorKind::NotFound
                && std::fs::symlink_metadata(&dir).is_err() =>
        {
            return Ok(());
        }
        Err(_) => return finish_here(state, id, &dir),
    }
    match host.start_reaper(&entry, state.cgroups.as_ref(), id) {
        Ok(()) => Ok(()),
        Err(_) => reaping::finish_entry(state, id).unwrap_or(Ok(())),
    }
}

/// Waits for PID 1 to exit, killing it after [`GRACE`]; its death kills
/// every process of its pid namespace.
fn stop_init(host: &dyn Host, pid: u32, start: u64) {
    // A pidfd wakes us the moment PID 1 is gone (after every other process
    // of its namespace), and names that process even if the pid were
    // reused: it is checked against the recorded start time once opened.
    let Some(init) = host.open_process(pid, Some(start)) else {
        return;
    };
    // Its parent, the outer init, exits right after reaping it: waiting for
    // that too means the sandbox's cgroup is empty when this returns.
    let outer = host
        .outer_init(pid)
        .and_then(|o| host.open_process(o, None));
    if !host.wait_exit(&init, GRACE) {
        host.kill(&init);
        host.wait_exit(&init, KILLED);
    }
    if let Some(outer) = outer {
        host.wait_exit(&outer, OUTER);
    }
}
