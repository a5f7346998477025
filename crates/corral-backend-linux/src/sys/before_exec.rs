//! What a helper process spawned by the host does between `fork` and
//! `exec`: `std::os::unix::process::CommandExt::pre_exec` is `unsafe`
//! because the hook runs in a forked copy of a multi-threaded process, where
//! only async-signal-safe calls are allowed. Each hook here makes only such
//! calls, on memory captured before the fork.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};

/// Makes `cmd` enter the network namespace `netns` (a `/proc/<pid>/ns/net`
/// descriptor, which the command now owns) before it execs.
pub fn enter_network_namespace(cmd: &mut Command, netns: OwnedFd) {
    use std::os::fd::AsFd;
    // SAFETY: the closure runs in the forked child before exec and only
    // makes the setns system call on a descriptor it owns (moved into it
    // here, so open for as long as the closure lives); it allocates nothing
    // and takes no lock.
    unsafe {
        cmd.pre_exec(move || {
            rustix::thread::move_into_link_name_space(
                netns.as_fd(),
                Some(rustix::thread::LinkNameSpaceType::Network),
            )
            .map_err(io::Error::from)
        });
    }
}

/// Makes `cmd` run in a fresh, empty network namespace of its own, gone
/// when it exits.
pub fn unshare_network_namespace(cmd: &mut Command) {
    // SAFETY: the closure runs in the forked child before exec and only
    // makes the unshare system call, which allocates nothing and takes no
    // lock. `unshare_unsafe` is sound here: only `NEWNET` is asked for,
    // never `FILES`, so no descriptor table is split between threads (the
    // forked child has one thread anyway).
    unsafe {
        cmd.pre_exec(|| {
            rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::NEWNET)
                .map_err(io::Error::from)
        });
    }
}

/// Spawns `cmd` as the leader of a new session, with `sources` (at most
/// `MAX` of them) placed on descriptors `first`, `first + 1`, … of the
/// child, in order, without close-on-exec. The sources are borrowed for the
/// whole spawn, so they are open in the parent while the child copies them.
pub fn spawn_detached_with_descriptors<const MAX: usize>(
    cmd: &mut Command,
    sources: &[BorrowedFd<'_>],
    first: i32,
) -> io::Result<Child> {
    if sources.len() > MAX || first < 0 {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    let raw: Vec<i32> = sources.iter().map(AsRawFd::as_raw_fd).collect();
    let n = i32::try_from(raw.len()).map_err(io::Error::other)?;
    // SAFETY: the closure runs in the forked child before exec and only
    // makes async-signal-safe calls (setsid, fcntl, dup2, close) on a
    // vector allocated before the fork and a fixed-size array on its stack;
    // the sources are open in the parent for the whole spawn (borrowed by
    // this function, which returns only after `spawn`). Each source is
    // first copied at or above `first + n`, so no target number overwrites
    // a source not yet moved (dup2 also clears close-on-exec on the
    // targets).
    unsafe {
        cmd.pre_exec(move || {
            if libc::setsid() < 0 {
                return Err(io::Error::last_os_error());
            }
            let mut high = [0i32; MAX];
            for (i, src) in raw.iter().enumerate() {
                high[i] = libc::fcntl(*src, libc::F_DUPFD_CLOEXEC, first + n);
                if high[i] < 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            for (i, fd) in high.iter().take(raw.len()).enumerate() {
                if libc::dup2(*fd, first + i as i32) < 0 || libc::close(*fd) < 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    cmd.spawn()
}
