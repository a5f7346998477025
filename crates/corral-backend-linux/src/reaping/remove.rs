//! Removing a sandbox's directory without ever crossing into a mount, and
//! without reading the mount table: each directory is opened (never
//! through a symlink) and checked to be no mount's root before anything in
//! it is removed. A directory still mounted on (a writable layer that was
//! not detached, a bind of a host directory below it) refuses the removal
//! with `EBUSY` naming it, before a single file of that mount is touched:
//! a removal never runs through a bind into the host's own directories.

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags, StatxAttributes, StatxFlags};
use rustix::io::Errno;

/// How a directory is opened to be emptied: never through a symlink.
const OPEN_DIR: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// Removes `dir` and everything in it, refusing (`EBUSY`, nothing of the
/// mount touched) where a directory at or below it is the root of a
/// mount. A missing `dir` is not an error; `dir` itself may sit on any
/// file system (it is the walk below it that must stay on `dir`'s own).
pub fn remove_within_mount(dir: &Path) -> io::Result<()> {
    let fd = match rustix::fs::open(dir, OPEN_DIR, Mode::empty()) {
        Err(Errno::NOENT) => return Ok(()),
        other => other?,
    };
    let dev = device_of(&fd)?;
    if is_mount_root(&fd, dev, true)? {
        return Err(still_mounted(dir, dir));
    }
    empty(&fd, dir, dir, dev)?;
    drop(fd);
    match std::fs::remove_dir(dir) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Removes everything in the directory `fd` (at `path`, below `top`),
/// whose file system is `dev`.
fn empty(fd: &OwnedFd, path: &Path, top: &Path, dev: u64) -> io::Result<()> {
    let mut names: Vec<(CString, FileType)> = Vec::new();
    for entry in Dir::read_from(fd)? {
        let entry = entry?;
        let name = entry.file_name();
        if name == c"." || name == c".." {
            continue;
        }
        names.push((name.to_owned(), entry.file_type()));
    }
    for (name, kind) in names {
        if matches!(kind, FileType::Directory | FileType::Unknown) {
            match rustix::fs::openat(fd, name.as_c_str(), OPEN_DIR, Mode::empty()) {
                Ok(sub) => {
                    let sub_path = path.join(display_name(&name));
                    if is_mount_root(&sub, dev, false)? {
                        return Err(still_mounted(&sub_path, top));
                    }
                    empty(&sub, &sub_path, top, dev)?;
                    drop(sub);
                    unlink(fd, &name, AtFlags::REMOVEDIR)?;
                    continue;
                }
                // Not a directory after all (a symlink is never followed).
                Err(Errno::NOTDIR | Errno::LOOP) => {}
                Err(Errno::NOENT) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        unlink(fd, &name, AtFlags::empty())?;
    }
    Ok(())
}

/// Unlinks `name` in `dir`; already gone is not an error.
fn unlink(dir: &OwnedFd, name: &CStr, flags: AtFlags) -> io::Result<()> {
    match rustix::fs::unlinkat(dir, name, flags) {
        Ok(()) | Err(Errno::NOENT) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// The device of the file system holding `fd`.
fn device_of(fd: &OwnedFd) -> io::Result<u64> {
    Ok(rustix::fs::fstat(fd)?.st_dev)
}

/// Whether the directory `fd` is the root of a mount: as the kernel says
/// (`STATX_ATTR_MOUNT_ROOT`, Linux 5.8), else by its device differing from
/// `parent_dev` (which misses a bind of the same file system: that kernel
/// reports it, older ones fall back). The `top` of a walk is compared with
/// the kernel's answer alone (its device is `parent_dev`).
fn is_mount_root(fd: &OwnedFd, parent_dev: u64, top: bool) -> io::Result<bool> {
    let st = match rustix::fs::statx(
        fd.as_fd(),
        c"",
        AtFlags::EMPTY_PATH,
        StatxFlags::BASIC_STATS,
    ) {
        Ok(st) => st,
        Err(Errno::NOSYS) => return Ok(!top && device_of(fd)? != parent_dev),
        Err(e) => return Err(e.into()),
    };
    if st.stx_attributes_mask.contains(StatxAttributes::MOUNT_ROOT) {
        return Ok(st.stx_attributes.contains(StatxAttributes::MOUNT_ROOT));
    }
    let dev = rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor);
    Ok(!top && dev != parent_dev)
}

/// A name read from a directory, for a path in a message.
fn display_name(name: &CStr) -> &Path {
    use std::os::unix::ffi::OsStrExt;
    Path::new(std::ffi::OsStr::from_bytes(name.to_bytes()))
}

/// The refusal: `point` is still mounted on, so `top` is left in place.
fn still_mounted(point: &Path, top: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::ResourceBusy,
        format!(
            "{} is still mounted; {} is left in place",
            point.display(),
            top.display()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_without_mounts_goes_whole_and_a_missing_one_is_fine() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("lnx-00000000000000aa");
        std::fs::create_dir_all(dir.join("fs/root/deep")).unwrap();
        std::fs::write(dir.join("disk.ext4"), b"x").unwrap();
        std::fs::write(dir.join("fs/root/deep/file"), b"y").unwrap();
        // A symlink out of the tree is removed, never followed.
        let outside = tmp.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("kept"), b"z").unwrap();
        std::os::unix::fs::symlink(&outside, dir.join("fs/escape")).unwrap();
        remove_within_mount(&dir).unwrap();
        assert!(!dir.exists());
        assert!(outside.join("kept").is_file(), "the link's target is kept");
        remove_within_mount(&dir).expect("a missing directory is removed already");
    }

    /// As root: a directory mounted on below the removed one refuses the
    /// removal, and not one file of that mount is removed.
    #[test]
    fn a_mount_below_refuses_the_removal_and_keeps_what_it_holds() {
        let test = "a_mount_below_refuses_the_removal_and_keeps_what_it_holds";
        if !rustix::process::geteuid().is_root() {
            println!("SKIP {test}: needs root to mount");
            return;
        }
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("lnx-00000000000000ab");
        let host = tmp.path().join("host-data");
        std::fs::create_dir_all(dir.join("fs")).unwrap();
        std::fs::create_dir(&host).unwrap();
        std::fs::write(host.join("precious"), b"p").unwrap();
        // A bind of a directory of the same file system: same device, so
        // only the kernel's mount-root attribute tells it apart.
        let bound = rustix::mount::mount_bind(&host, dir.join("fs"));
        if let Err(e) = bound {
            println!("SKIP {test}: cannot bind-mount here: {e}");
            return;
        }
        let refused = remove_within_mount(&dir);
        let _ = rustix::mount::unmount(dir.join("fs"), rustix::mount::UnmountFlags::DETACH);
        let err = refused.expect_err("the removal is refused");
        assert_eq!(err.kind(), io::ErrorKind::ResourceBusy, "{err}");
        assert!(err.to_string().contains("is still mounted"), "{err}");
        assert!(
            host.join("precious").is_file(),
            "nothing of the bind is removed"
        );
        remove_within_mount(&dir).expect("once detached, it goes");
        assert!(!dir.exists());
    }
}
