//! Strategy 1: one `openat2(2)` call resolves the whole path inside the kernel.
//!
//! The lookup runs with the [`Resolution`]'s flags relative to the root's
//! directory descriptor; for [`Resolution::Beneath`], the default, that is
//! `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`:
//!
//! * `RESOLVE_BENEATH` makes the kernel refuse (with `EXDEV`) any resolution
//!   that would leave the root: a `..` above it, an absolute path, an absolute
//!   symlink target, a relative symlink climbing out. We want refusal rather
//!   than `RESOLVE_IN_ROOT`'s silent clamping: a hostile path must come back as
//!   `outside_root`, not as some other file that happens to sit at the clamped
//!   location. Consequence, documented for callers: *absolute symlinks inside
//!   the root are refused as `outside_root`*, even when they would name a file
//!   inside the root after re-rooting.
//! * `RESOLVE_NO_MAGICLINKS` refuses procfs magic links (`/proc/<pid>/root`,
//!   `/proc/<pid>/fd/<n>`, `/proc/<pid>/cwd`, …) anywhere in the path, e.g.
//!   through a procfs mounted inside the root. The kernel answers `ELOOP`,
//!   which is ambiguous with a real symlink loop, so `ELOOP` is reclassified
//!   by re-running the inspection-only component walk (it opens nothing for
//!   reading and refuses every procfs symlink as `outside_root`).
//! * [`Resolution::InRoot`] uses `RESOLVE_IN_ROOT` instead: the same lookup
//!   as a process chrooted at the root makes, which never leaves it either.
//! * The result is an `O_PATH` descriptor: resolving never opens the object, so
//!   a fifo cannot block and a device driver's `open` never runs.
//!
//! Mount points inside the root are crossed (no `RESOLVE_NO_XDEV`): the root's
//! own submounts are part of what the caller sees under it.

use super::walk;
use super::{ContainmentReason, Resolution};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

/// Whether `openat2` with the flags we need works in this process.
///
/// `ENOSYS` (kernel older than 5.6), `EPERM` (a seccomp filter that blocks
/// it), or `EINVAL`/`E2BIG` (unknown resolve flags) all mean "no".
pub(super) fn available() -> bool {
    let Ok(root) = rustix::fs::open(
        "/",
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) else {
        return false;
    };
    rustix::fs::openat2(
        &root,
        ".",
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
        Resolution::Beneath.flags(),
    )
    .is_ok()
}

/// Calls `openat2` beneath `root`, retrying on `EAGAIN`.
pub(super) fn openat2_beneath(
    root: BorrowedFd<'_>,
    rel: &[u8],
    flags: OFlags,
    resolution: Resolution,
) -> Result<OwnedFd, Errno> {
    super::openat2_retrying(
        root,
        rel,
        flags | OFlags::CLOEXEC,
        Mode::empty(),
        resolution.flags(),
    )
}

/// Resolves `rel` (already relative, validated) to an `O_PATH` descriptor.
///
/// With `follow_final` false the final component is not followed if it is a
/// symlink (the descriptor then refers to the link itself).
pub(super) fn resolve(
    root: BorrowedFd<'_>,
    rel: &[u8],
    follow_final: bool,
    resolution: Resolution,
) -> Result<OwnedFd, ContainmentReason> {
    let mut flags = OFlags::PATH;
    if !follow_final {
        flags |= OFlags::NOFOLLOW;
    }
    openat2_beneath(root, rel, flags, resolution)
        .map_err(|errno| classify(root, rel, follow_final, resolution, errno))
}

/// Opens `rel` again, this time for reading, for the fallback without procfs.
///
/// The caller compares the identity of the result with the `O_PATH`
/// descriptor it checked; `O_NONBLOCK` keeps a fifo swapped in meanwhile (or a
/// file under a lease) from blocking, `O_NOCTTY` keeps a terminal from becoming
/// ours.
pub(super) fn open_for_read(
    root: BorrowedFd<'_>,
    rel: &[u8],
    resolution: Resolution,
) -> Result<OwnedFd, ContainmentReason> {
    openat2_beneath(
        root,
        rel,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY,
        resolution,
    )
    .map_err(|errno| match errno {
        // The first lookup found a regular file; a socket (which cannot be
        // opened) now means the name was swapped.
        Errno::NXIO => ContainmentReason::ChangedDuringRead,
        other => ContainmentReason::from_resolve_errno(other),
    })
}

/// Turns a failed lookup into a reason, disambiguating `ELOOP`.
fn classify(
    root: BorrowedFd<'_>,
    rel: &[u8],
    follow_final: bool,
    resolution: Resolution,
    errno: Errno,
) -> ContainmentReason {
    if errno != Errno::LOOP {
        return ContainmentReason::from_resolve_errno(errno);
    }
    // `ELOOP` is either a real loop or a refused magic link. The walk inspects
    // (O_PATH opens and readlink only) and names which one.
    match walk::resolve(root.as_fd(), rel, follow_final, resolution) {
        Err(ContainmentReason::OutsideRoot) => ContainmentReason::OutsideRoot,
        // A loop, or the tree changed under us: the kernel's answer stands.
        _ => ContainmentReason::SymlinkLoop,
    }
}
