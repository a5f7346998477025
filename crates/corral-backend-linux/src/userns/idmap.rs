//! The `host` image's read-only binds, made by the host in its own mount
//! namespace before the go-ahead: an idmapped mount through the sandbox's
//! user namespace where the kernel has them (host root's files show as
//! root inside, and stay read-only), a plain read-only bind otherwise
//! (they show as `nobody`, and stay readable).
//!
//! Made by the host because an idmapped mount of a host file system needs
//! privilege over it, which the sandbox's namespace does not have. The init
//! finds them in place when it copies the mount table into its own
//! namespace, where the kernel locks them (read-only, `nosuid`, `nodev`,
//! and not separable from their parent) since that namespace is owned by a
//! less privileged user namespace.

use std::fs::File;
use std::io;
use std::os::fd::AsFd;
use std::path::Path;

use rustix::fs::CWD;
use rustix::mount::{MountFlags, MoveMountFlags, OpenTreeFlags, mount_bind, mount_remount};

/// How a host directory was bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// An idmapped mount: owners show as they are on the host.
    Idmapped,
    /// A plain bind: host owners outside the range show as `nobody`.
    Plain,
}

/// Binds host directory `source` read-only onto `target`, idmapped through
/// the user namespace `userns` when the kernel allows it.
pub fn bind_read_only(source: &Path, target: &Path, userns: &File) -> io::Result<Bound> {
    match bind_idmapped(source, target, userns) {
        Ok(()) => return Ok(Bound::Idmapped),
        // Too old a kernel, or a file system without idmapped mounts.
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::EINVAL | libc::ENOSYS | libc::EPERM | libc::EOPNOTSUPP)
            ) => {}
        Err(e) => return Err(e),
    }
    mount_bind(source, target)?;
    mount_remount(
        target,
        MountFlags::BIND | MountFlags::RDONLY | MountFlags::NOSUID | MountFlags::NODEV,
        "",
    )?;
    Ok(Bound::Plain)
}

fn bind_idmapped(source: &Path, target: &Path, userns: &File) -> io::Result<()> {
    let tree = rustix::mount::open_tree(
        CWD,
        source,
        OpenTreeFlags::OPEN_TREE_CLONE | OpenTreeFlags::OPEN_TREE_CLOEXEC,
    )?;
    crate::sys::user_namespace::set_read_only_idmapped(tree.as_fd(), userns.as_fd())?;
    rustix::mount::move_mount(
        tree.as_fd(),
        "",
        CWD,
        target,
        MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH,
    )?;
    Ok(())
}

/// A layered image's root again, on idmapped layers: detaches the overlay
/// at `root`, binds each of `layers` (topmost first) read-only beneath
/// `lower` (idmapped where the kernel allows), and mounts the overlay of
/// those binds with the same `upper` (its work directory beside it). The
/// image's files then show with their owners inside, and what root inside
/// copies up lands in `upper` owned by the range. Returns whether every
/// layer is idmapped.
pub fn remount_overlay(
    root: &Path,
    layers: &[std::path::PathBuf],
    lower: &Path,
    upper: &Path,
    userns: &File,
) -> io::Result<bool> {
    crate::rootfs::unmount_all(root)?;
    std::fs::create_dir_all(lower)?;
    let mut binds = Vec::with_capacity(layers.len());
    let mut all = true;
    for (i, layer) in layers.iter().enumerate() {
        let target = lower.join(i.to_string());
        std::fs::create_dir(&target)?;
        all &= bind_read_only(layer, &target, userns)? == Bound::Idmapped;
        binds.push(target);
    }
    crate::rootfs::overlay(root, &binds, upper, &upper.with_file_name("work"))?;
    Ok(all)
}
