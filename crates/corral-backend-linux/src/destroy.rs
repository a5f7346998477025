//! `destroy` and rollback: stop PID 1 (which takes its whole pid namespace
//! with it), detach the sandbox's writable layer and everything mounted on
//! it (an ext4 layer's loop device then unbinds itself), remove its
//! directory (and the disk image in it) once nothing is mounted below it.
//! Idempotent; never follows a symlink; never signals a pid whose start
//! time differs from the recorded one. This is the one teardown of a
//! sandbox: `destroy`, a failed create's rollback and every reclaim of
//! [`crate::gc`] end here.

use std::time::{Duration, Instant};

use corral_backend::Result;

use crate::protocol::{self, Request};
use crate::rootfs;
use crate::state::{State, is_sandbox_id, parent_pid, process_start, read_meta, state_error};

/// How long PID 1 gets to exit after `Shutdown` before `SIGKILL`.
const GRACE: Duration = Duration::from_millis(500);

/// Destroys sandbox `id` (blocking). Unknown ids succeed.
pub fn destroy(state: &State, id: &str) -> Result<()> {
    if !is_sandbox_id(id) {
        return Ok(());
    }
    let key = read_meta(state, id).ok().flatten().and_then(|m| m.key);
    teardown(state, id)?;
    if let Some(key) = key {
        crate::keys::release(state, &key, id);
    }
    Ok(())
}

/// Removes everything of sandbox `id`, whatever state it is in.
pub fn teardown(state: &State, id: &str) -> Result<()> {
    let dir = state.sandbox_dir(id);
    if std::fs::symlink_metadata(&dir).is_err() {
        return Ok(());
    }
    let meta = read_meta(state, id).ok().flatten();
    // Frozen processes cannot act on Shutdown or die: thaw first.
    crate::pause::thaw_quietly(state, id);
    // The record goes first: from here on the sandbox is not listed.
    let _ = std::fs::remove_file(state.meta_path(id));
    // Then its preview ports: closed when `destroy` returns.
    crate::preview::teardown(&dir)?;
    if let Ok(mut sock) = state.connect_control(id) {
        let _ = sock.set_write_timeout(Some(GRACE));
        let _ = protocol::write_frame(&mut sock, &Request::Shutdown);
    }
    if let Some(meta) = &meta {
        stop_init(meta.init_pid, meta.init_start);
    }
    crate::network::teardown(&dir)?;
    // Whatever is left in the cgroup dies with it.
    if let Some(cgroups) = &state.cgroups
        && let Ok(Some(cg)) = cgroups.open(id)
    {
        cg.destroy().map_err(|e| {
            corral_backend::BackendError::new(
                corral_backend::ErrorCode::Io,
                format!("removing the cgroup of sandbox {id}: {e}"),
            )
        })?;
    }
    // Rootless, nothing is mounted on the host (and unmounting needs root).
    if !state.rootless {
        rootfs::unmount_all(&state.fs_dir(id))
            .map_err(|e| state_error(format_args!("unmounting sandbox {id}"), &e))?;
    }
    crate::userns::ranges::release(&crate::userns::ranges::dir(state.dir()), id);
    // Never through a mount: the host image's binds are detached with the
    // tmpfs above, and the removal refuses while anything is still mounted.
    rootfs::remove_unmounted(&dir)
        .map_err(|e| state_error(format_args!("removing sandbox {id}"), &e))
}

/// Waits for PID 1 to exit, killing it after [`GRACE`]; its death kills
/// every process of its pid namespace.
fn stop_init(pid: u32, start: u64) {
    let Some(p) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return;
    };
    // A pidfd wakes us the moment PID 1 is gone (after every other process
    // of its namespace), and names that process even if the pid were
    // reused: it is checked against the recorded start time once opened.
    let Ok(pidfd) = rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty()) else {
        return;
    };
    if process_start(pid) != Some(start) {
        return;
    }
    // Its parent, the outer init, exits right after reaping it: waiting for
    // that too means the sandbox's cgroup is empty when this returns.
    let outer = outer_init(pid)
        .and_then(|o| rustix::process::pidfd_open(o, rustix::process::PidfdFlags::empty()).ok());
    if !exits_within(&pidfd, GRACE) {
        let _ = rustix::process::pidfd_send_signal(&pidfd, rustix::process::Signal::KILL);
        exits_within(&pidfd, Duration::from_secs(5));
    }
    if let Some(outer) = outer {
        exits_within(&outer, Duration::from_secs(1));
    }
}

/// The parent of PID 1 (host pid `pid`) when it is a `corral-init`.
fn outer_init(pid: u32) -> Option<rustix::process::Pid> {
    let ppid = parent_pid(pid)?;
    let comm = std::fs::read(format!("/proc/{ppid}/comm")).ok()?;
    (comm.trim_ascii_end() == b"corral-init")
        .then(|| {
            i32::try_from(ppid)
                .ok()
                .and_then(rustix::process::Pid::from_raw)
        })
        .flatten()
}

/// Whether the process of `pidfd` exits within `wait`.
fn exits_within(pidfd: &std::os::fd::OwnedFd, wait: Duration) -> bool {
    let deadline = Instant::now() + wait;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let timeout = rustix::event::Timespec {
            tv_sec: left.as_secs() as i64,
            tv_nsec: i64::from(left.subsec_nanos()),
        };
        let mut fds = [rustix::event::PollFd::new(
            pidfd,
            rustix::event::PollFlags::IN,
        )];
        match rustix::event::poll(&mut fds, Some(&timeout)) {
            Ok(n) if n > 0 => return true,
            Ok(_) => return false,
            Err(rustix::io::Errno::INTR) if !left.is_zero() => continue,
            Err(_) => return false,
        }
    }
}
