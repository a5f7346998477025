//! The raw calls of user namespaces that rustix does not offer:
//! `mount_setattr(2)` (a bind's attributes, an idmapping, its propagation),
//! and the rootless probe.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// `MOUNT_ATTR_RDONLY`.
const MOUNT_ATTR_RDONLY: u64 = 0x1;
/// `MOUNT_ATTR_NOSUID`.
const MOUNT_ATTR_NOSUID: u64 = 0x2;
/// `MOUNT_ATTR_NODEV`.
const MOUNT_ATTR_NODEV: u64 = 0x4;
/// `MOUNT_ATTR_IDMAP`.
const MOUNT_ATTR_IDMAP: u64 = 0x0010_0000;

/// `struct mount_attr` (`MOUNT_ATTR_SIZE_VER0`).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// `MS_PRIVATE`, as `struct mount_attr` takes a propagation.
const MS_PRIVATE: u64 = 1 << 18;

/// Makes the detached mount `tree` read-only, `nosuid`, `nodev` and
/// idmapped through the user namespace `userns`.
pub fn set_read_only_idmapped(tree: BorrowedFd<'_>, userns: BorrowedFd<'_>) -> io::Result<()> {
    set_bind_attributes(tree, true, Some(userns))
}

/// Makes the mount `tree` `nosuid` and `nodev`, read-only when
/// `read_only`, and idmapped through the user namespace `userns` when one
/// is given (only a detached mount can be).
pub fn set_bind_attributes(
    tree: BorrowedFd<'_>,
    read_only: bool,
    userns: Option<BorrowedFd<'_>>,
) -> io::Result<()> {
    let mut attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
    if read_only {
        attr_set |= MOUNT_ATTR_RDONLY;
    }
    if userns.is_some() {
        attr_set |= MOUNT_ATTR_IDMAP;
    }
    mount_setattr(
        tree,
        &MountAttr {
            attr_set,
            attr_clr: 0,
            propagation: 0,
            userns_fd: userns.map_or(0, |u| u.as_raw_fd() as u64),
        },
    )
}

/// Makes the attached mount `tree` private: nothing mounted later on
/// either side propagates to the other.
pub fn make_private(tree: BorrowedFd<'_>) -> io::Result<()> {
    mount_setattr(
        tree,
        &MountAttr {
            attr_set: 0,
            attr_clr: 0,
            propagation: MS_PRIVATE,
            userns_fd: 0,
        },
    )
}

/// `mount_setattr(2)` of `attr` on the mount `tree` itself.
fn mount_setattr(tree: BorrowedFd<'_>, attr: &MountAttr) -> io::Result<()> {
    // SAFETY: `tree` (and any user namespace named in `attr`) are open
    // descriptors borrowed for the call; the path is a valid empty C
    // string (with AT_EMPTY_PATH the call acts on `tree` itself); `attr` is
    // a valid `struct mount_attr` of the size passed, which the kernel only
    // reads.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            tree.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Forks a child that tries `unshare(CLONE_NEWUSER)` and exits with the
/// outcome: whether this process's user may make a user namespace.
pub fn probe_user_namespace() -> io::Result<bool> {
    // SAFETY: between fork and `_exit` the child only makes the raw
    // `unshare` and `_exit` system calls, which are async-signal-safe, so
    // no lock another thread held at the fork is ever needed.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: as above; `_exit` ends the child without running any
        // of the parent's exit handlers.
        unsafe {
            let ok = libc::unshare(libc::CLONE_NEWUSER) == 0;
            libc::_exit(if ok { 0 } else { 1 });
        }
    }
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    let child = rustix::process::Pid::from_raw(pid).ok_or_else(|| io::Error::other("fork"))?;
    loop {
        match rustix::process::waitpid(Some(child), rustix::process::WaitOptions::empty()) {
            Ok(Some((_, status))) => return Ok(status.exit_status() == Some(0)),
            Ok(None) => continue,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}
