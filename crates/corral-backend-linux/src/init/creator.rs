//! A sandbox bound to its creator (`CreateRequest::bound_to_creator`):
//! after the commit, the outer init goes on watching the startup socket,
//! whose other end only the creating process holds (close-on-exec, so no
//! child of it inherits it). When that end closes — the creator exited or
//! was killed, `SIGKILL` included — the outer init kills PID 1, and with
//! it every process of the sandbox's pid namespace (a `setsid`'d workload
//! too).
//!
//! No host process is left then to remove what the sandbox holds on disk.
//! Without a user namespace the outer init does it itself: it kept a
//! descriptor of the host's mount namespace from before it made its own
//! ([`HostMounts`]), returns to it once PID 1 is gone, and removes the
//! record, the mounts and the sandbox directory. With one, the outer init
//! is no longer host root, and its warden (`super::warden`) does it. The cgroup (the outer init is still in it) and any
//! firewall table are left for `gc`, which finds them by name.

use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use rustix::event::{PollFd, PollFlags, poll};
use rustix::process::{Pid, PidfdFlags, Signal, kill_process, pidfd_open};

/// How a watch ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Watched {
    /// PID 1 exited on its own (a destroy, a lifetime, a crash).
    InitExited,
    /// The creator is gone: PID 1 was killed.
    CreatorGone,
}

/// Returns when PID 1 (`child`, this process's child) exits on its own, or
/// once it was killed because the creator's end of `startup` closed.
pub fn watch(startup: &OwnedFd, child: i32) -> Watched {
    let Some(pid) = Pid::from_raw(child) else {
        return Watched::InitExited;
    };
    // Without a pidfd, the socket alone is watched: PID 1's own exit is
    // then noticed when the creator closes its end after reaping it.
    let pidfd = pidfd_open(pid, PidfdFlags::empty()).ok();
    let mut buf = [0u8; 64];
    loop {
        let mut fds = vec![PollFd::new(startup, PollFlags::IN)];
        if let Some(p) = &pidfd {
            fds.push(PollFd::new(p, PollFlags::IN));
        }
        match poll(&mut fds, None) {
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return Watched::InitExited,
        }
        if fds.get(1).is_some_and(|f| !f.revents().is_empty()) {
            return Watched::InitExited;
        }
        let socket = fds[0].revents();
        if socket.is_empty() {
            continue;
        }
        // Anything but end-of-file is a stray byte: the creator still lives.
        match rustix::io::read(startup.as_fd(), &mut buf) {
            Ok(n) if n > 0 && !socket.contains(PollFlags::HUP) => continue,
            Err(rustix::io::Errno::INTR | rustix::io::Errno::AGAIN) => continue,
            _ => {
                let _ = kill_process(pid, Signal::KILL);
                return Watched::CreatorGone;
            }
        }
    }
}

/// The host's mount namespace, held from before the outer init made its
/// own, to remove the sandbox's files from once its creator is gone.
#[derive(Debug)]
pub struct HostMounts(OwnedFd);

impl HostMounts {
    /// Opens this process's mount namespace (call before `unshare(NEWNS)`);
    /// `None` when it cannot (the sandbox is then left for `gc`).
    pub fn open() -> Option<HostMounts> {
        rustix::fs::open(
            "/proc/self/ns/mnt",
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )
        .ok()
        .map(HostMounts)
    }

    /// Enters the host's mount namespace again and removes what sandbox
    /// `root` (`<sandbox dir>/fs/root`) holds there: the record first (so
    /// it is no longer listed), then the tmpfs, then the directory. Best
    /// effort: whatever fails is `gc`'s.
    pub fn reclaim(self, root: &Path) {
        let entered = rustix::thread::move_into_link_name_space(
            self.0.as_fd(),
            Some(rustix::thread::LinkNameSpaceType::Mount),
        );
        if entered.is_ok() {
            super::warden::remove_host_side(root);
        }
    }
}
