//! A sandbox bound to its creator (`CreateRequest::bound_to_creator`):
//! after the commit, the outer init goes on watching the startup socket,
//! whose other end only the creating process holds (close-on-exec, so no
//! child of it inherits it). When that end closes — the creator exited or
//! was killed, `SIGKILL` included — the outer init kills PID 1, and with
//! it every process of the sandbox's pid namespace (a `setsid`'d workload
//! too).

use std::os::fd::{AsFd, OwnedFd};

use rustix::event::{PollFd, PollFlags, poll};
use rustix::process::{Pid, PidfdFlags, Signal, kill_process, pidfd_open};

/// Returns when PID 1 (`child`, this process's child) exits on its own, or
/// once it was killed because the creator's end of `startup` closed.
pub fn watch(startup: &OwnedFd, child: i32) {
    let Some(pid) = Pid::from_raw(child) else {
        return;
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
            Err(_) => return,
        }
        if fds.get(1).is_some_and(|f| !f.revents().is_empty()) {
            return;
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
                return;
            }
        }
    }
}
