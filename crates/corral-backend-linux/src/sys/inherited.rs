//! Adopting a descriptor the parent process placed at a known number
//! before `exec` (the preview forwarder's listeners).

use std::os::fd::{FromRawFd, OwnedFd};

/// Takes ownership of descriptor `fd`, inherited across `exec`: `None`
/// when no descriptor of that number is open.
///
/// Contract: `fd` is a number this process has not opened itself and
/// adopts once — the forwarder calls it first thing, for the numbers its
/// parent placed — so nothing else in the process owns it.
pub fn adopt_inherited_descriptor(fd: i32) -> Option<OwnedFd> {
    // F_GETFD fails on a descriptor that is not open: nothing is adopted then.
    // SAFETY: fcntl(F_GETFD) only reads the flags of descriptor `fd`.
    if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
        return None;
    }
    // SAFETY: `fd` is open (checked above) and, by this function's
    // contract, was placed by the parent for this process alone and is
    // owned by nothing else in it.
    Some(unsafe { OwnedFd::from_raw_fd(fd) })
}
