//! Turning a checked `O_PATH` descriptor into a readable one without a race.
//!
//! The containment check happens on an `O_PATH` descriptor: it pins the exact
//! inode the kernel resolved, and `fstat` on it tells its type without opening
//! it. What remains is to read *that inode*.
//!
//! **Primary: procfs re-open.** `openat(proc, "thread-self/fd/<n>", O_RDONLY)`
//! follows the magic link of our own descriptor `<n>` to the object it pins.
//! No name inside the root is looked up again, so nothing can be swapped: the
//! file opened is the file checked. The procfs handle is opened once per
//! process and accepted only if it is really the root of a procfs instance
//! (`fstatfs` magic and inode 1); the caller still compares `(st_dev, st_ino)`
//! of the result with the checked descriptor, so a tampered `/proc` could at
//! worst make the read fail, never return another file's bytes.
//!
//! **Fallback, only when procfs is unusable: re-resolve and compare.** The same
//! contained lookup is repeated with `O_RDONLY | O_NONBLOCK | O_NOCTTY` (for the
//! walk: one `openat` of the final name in the pinned parent directory, with
//! `O_NOFOLLOW`) and the result's `(st_dev, st_ino)` must equal the checked
//! one, else `changed_during_read`. The second lookup is still contained, so it
//! can never reach outside the root, and no byte of a swapped-in file is read.
//! The residual, documented: if the name is swapped in the window between the
//! check and the second open for a device node *inside* the root, that device's
//! driver `open` runs once before the mismatch is refused (a fifo cannot block
//! thanks to `O_NONBLOCK`; a socket fails to open).

use super::ContainmentReason;
use rustix::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use std::sync::OnceLock;

/// The inode number of every procfs root (`PROC_ROOT_INO`).
const PROC_ROOT_INO: u64 = 1;

/// How a checked `O_PATH` descriptor is turned into a readable one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reopen {
    /// Through our own descriptor's magic link in procfs (race-free).
    Procfs,
    /// By repeating the contained lookup and comparing identities.
    Reresolve,
}

impl Reopen {
    /// Procfs when it is usable in this process, the fallback otherwise.
    pub(super) fn detect() -> Self {
        if procfs().is_some() {
            Self::Procfs
        } else {
            Self::Reresolve
        }
    }
}

/// The verified procfs root of this process, opened once.
fn procfs() -> Option<&'static OwnedFd> {
    static PROCFS: OnceLock<Option<OwnedFd>> = OnceLock::new();
    PROCFS
        .get_or_init(|| {
            let fd = rustix::fs::open(
                "/proc",
                OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .ok()?;
            let fs = rustix::fs::fstatfs(&fd).ok()?;
            let st = rustix::fs::fstat(&fd).ok()?;
            (fs.f_type == rustix::fs::PROC_SUPER_MAGIC && super::ino(&st) == PROC_ROOT_INO)
                .then_some(fd)
        })
        .as_ref()
}

/// Opens the object pinned by `path_fd` for reading through procfs.
///
/// Returns `None` when procfs is not usable (the caller then falls back):
/// no verified procfs, or one that does not show our descriptor (a procfs
/// of another pid namespace).
pub(super) fn via_procfs(path_fd: BorrowedFd<'_>) -> Option<Result<OwnedFd, ContainmentReason>> {
    let proc = procfs()?;
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let raw = path_fd.as_fd().as_raw_fd();
    let thread = format!("thread-self/fd/{raw}");
    let opened = match rustix::fs::openat(proc, thread.as_str(), flags, Mode::empty()) {
        // Kernels before 3.17 have no `thread-self`; `self` shares our fd table
        // unless this thread unshared it, and the identity check covers that.
        Err(Errno::NOENT) => rustix::fs::openat(
            proc,
            format!("self/fd/{raw}").as_str(),
            flags,
            Mode::empty(),
        ),
        other => other,
    };
    match opened {
        Err(Errno::NOENT) => None,
        Err(errno) => Some(Err(ContainmentReason::Io {
            errno: errno.raw_os_error(),
        })),
        Ok(fd) => Some(Ok(fd)),
    }
}
