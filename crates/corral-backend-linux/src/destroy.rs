//! `destroy` and rollback: stop PID 1 (which takes its whole pid namespace
//! with it), detach the sandbox's writable layer and everything mounted on
//! it (an ext4 layer's loop device then unbinds itself), remove its
//! directory (and the disk image in it) once nothing is mounted below it.
//! Idempotent; never follows a symlink; never signals a pid whose start
//! time differs from the recorded one. This is the one teardown of a
//! sandbox: `destroy`, a failed create's rollback and every reclaim of
//! [`crate::gc`] end here. Every effect on the host goes through the
//! state's [`Host`], in the order [`teardown`] gives.

use std::time::Duration;

use corral_backend::Result;

use crate::host::Host;
use crate::state::{State, is_sandbox_id, read_meta, state_error};

/// How long PID 1 gets to exit after `Shutdown` before `SIGKILL`.
pub(crate) const GRACE: Duration = Duration::from_millis(500);
/// How long PID 1 gets to exit after `SIGKILL`.
pub(crate) const KILLED: Duration = Duration::from_secs(5);
/// How long the outer init gets to exit after PID 1 did.
pub(crate) const OUTER: Duration = Duration::from_secs(1);

/// Destroys sandbox `id` (blocking). Unknown ids succeed. The key claim is
/// released even when the teardown failed: the record is gone by then, so
/// no later destroy could find the key again.
pub fn destroy(state: &State, id: &str) -> Result<()> {
    if !is_sandbox_id(id) {
        return Ok(());
    }
    let key = read_meta(state, id).ok().flatten().and_then(|m| m.key);
    let torn = teardown(state, id);
    if let Some(key) = key {
        state.host.release_key(&state.key_path(&key), id);
    }
    torn
}

/// Removes everything of sandbox `id`, whatever state it is in. A failed
/// step does not stop the steps that do not depend on it; the first
/// failure is returned. The id range is released, and the directory
/// removed, only once every step before succeeded: nothing of the sandbox
/// is then mounted or alive, and until then the directory holds what a
/// later teardown (a retried destroy, gc) needs to finish.
pub fn teardown(state: &State, id: &str) -> Result<()> {
    let host: &dyn Host = state.host.as_ref();
    let dir = state.sandbox_dir(id);
    if std::fs::symlink_metadata(&dir).is_err() {
        return Ok(());
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
    // Whatever is left in the cgroup dies with it.
    let cgroup = host.remove_cgroup(state.cgroups.as_ref(), id);
    // Rootless, nothing is mounted on the host (and unmounting needs root).
    let unmounted = match state.rootless {
        true => Ok(()),
        false => host
            .unmount_all(&state.fs_dir(id))
            .map_err(|e| state_error(format_args!("unmounting sandbox {id}"), &e)),
    };
    for step in [network, cgroup, unmounted] {
        if let Err(e) = step {
            first_error.get_or_insert(e);
        }
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    // Never through a mount: the host image's binds are detached with the
    // tmpfs above, and the removal refuses while anything is still mounted.
    host.release_id_range(&crate::userns::ranges::dir(state.dir()), id);
    host.remove_sandbox_dir(&dir)
        .map_err(|e| state_error(format_args!("removing sandbox {id}"), &e))
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
