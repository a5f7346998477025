//! Host directories bound into a sandbox (`CreateRequest::binds`,
//! `corral run -v HOST:PATH[:ro]`), made by the host in its own mount
//! namespace before the go-ahead, like the `host` image's binds
//! ([`crate::rootfs::bind_host_dirs`]); the init copies them with the
//! whole root.
//!
//! - Each host directory is opened once, when `create` admits the request
//!   ([`open_sources`]): an `O_PATH` descriptor resolved with no symlink at
//!   all (the path was resolved where the bind was made), so a link swapped
//!   in later cannot redirect it. The mount is cloned from that descriptor.
//! - The mount point is made and opened inside the sandbox's root through
//!   the contained file system (resolved in the root, as the sandbox itself
//!   would), never by joining a host path, and the mount is moved onto
//!   that descriptor.
//! - Every bind is `nosuid` and `nodev`; `:ro` is read-only too. With a
//!   user namespace the init's copy is locked by the kernel, so root in the
//!   sandbox can neither make it writable nor lift those flags.
//! - Ownership: a read-only bind is idmapped through the sandbox's user
//!   namespace where the kernel can (the host's owners show as they are);
//!   a writable one never is, so what the sandbox writes is owned on the
//!   host by the sandbox's own unprivileged ids, never by a host user (a
//!   set-user-id file it made could otherwise run as host root).

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use corral_backend::contained::Resolution;
use corral_backend::contained_fs::{ContainedFs, Ownership, SplitPath};
use corral_backend::{BackendError, HostBind, HostBinds, Result};
use rustix::fs::{CWD, Mode, OFlags, ResolveFlags};
use rustix::mount::{MoveMountFlags, OpenTreeFlags};

use crate::sys::user_namespace::{make_private, set_bind_attributes};

/// A bind whose host directory is held open since `create` admitted it.
#[derive(Debug)]
pub struct OpenBind {
    /// The bind asked for.
    pub bind: HostBind,
    /// Its host directory, an `O_PATH` descriptor.
    pub dir: OwnedFd,
}

/// Opens the host directory of each of `binds`, refusing one that is no
/// longer the directory it was resolved to (a symlink now on its path).
///
/// # Errors
///
/// The failed open, naming the host path the caller gave.
pub fn open_sources(binds: &HostBinds) -> Result<Vec<OpenBind>> {
    binds
        .as_slice()
        .iter()
        .map(|bind| {
            let dir = rustix::fs::openat2(
                CWD,
                bind.source(),
                OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
                ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
            )
            .map_err(|e| {
                BackendError::from_io(
                    format_args!("opening the bind source {}", bind.source().display()),
                    &io::Error::from(e),
                )
            })?;
            Ok(OpenBind {
                bind: bind.clone(),
                dir,
            })
        })
        .collect()
}

/// Binds each of `binds` onto its target in the sandbox root `root` (its
/// mount point made inside the root where missing), read-only binds
/// idmapped through `userns` where the kernel allows it.
///
/// # Errors
///
/// The first failure, naming the sandbox path.
pub fn bind_all(root: &Path, binds: &[OpenBind], userns: Option<&File>) -> io::Result<()> {
    let fs = ContainedFs::open(root, "", Resolution::InRoot, Ownership::RootOwner)
        .map_err(|e| io::Error::other(e.to_string()))?;
    for open in binds {
        let target = open.bind.target();
        let failed = |what: &str, e: io::Error| {
            io::Error::new(e.kind(), format!("bind onto {target}: {what}: {e}"))
        };
        let path = SplitPath::from(target);
        fs.mkdir(&path, true)
            .map_err(|e| failed("making the mount point", io::Error::other(e.to_string())))?;
        let point = fs
            // A final symlink (an image's `/data -> /etc`) is refused: the
            // bind covers the directory its path names, nothing else.
            .open_at(path.comps(), OFlags::PATH | OFlags::DIRECTORY, false)
            .map_err(|e| failed("opening the mount point", e.into()))?;
        let userns = userns.filter(|_| open.bind.read_only());
        let tree = clone_with_attributes(&open.dir, open.bind.read_only(), userns)
            .map_err(|e| failed("cloning the host directory", e))?;
        rustix::mount::move_mount(
            tree.as_fd(),
            "",
            point.as_fd(),
            "",
            MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH | MoveMountFlags::MOVE_MOUNT_T_EMPTY_PATH,
        )
        .map_err(|e| failed("mounting", e.into()))?;
        make_private(tree.as_fd()).map_err(|e| failed("making it private", e))?;
    }
    Ok(())
}

/// A detached clone of the mount of `dir`, `nosuid`, `nodev`, read-only
/// when `read_only`, idmapped through `userns` when given and the kernel
/// can (a plain clone otherwise).
fn clone_with_attributes(
    dir: &OwnedFd,
    read_only: bool,
    userns: Option<&File>,
) -> io::Result<OwnedFd> {
    let tree = rustix::mount::open_tree(
        dir.as_fd(),
        "",
        OpenTreeFlags::OPEN_TREE_CLONE
            | OpenTreeFlags::OPEN_TREE_CLOEXEC
            | OpenTreeFlags::AT_EMPTY_PATH,
    )?;
    if let Some(userns) = userns {
        match set_bind_attributes(tree.as_fd(), read_only, Some(userns.as_fd())) {
            Ok(()) => return Ok(tree),
            // Too old a kernel, or a file system without idmapped mounts.
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EINVAL | libc::ENOSYS | libc::EPERM | libc::EOPNOTSUPP)
                ) => {}
            Err(e) => return Err(e),
        }
    }
    set_bind_attributes(tree.as_fd(), read_only, None)?;
    Ok(tree)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bind of `source` at `/data`, read-only when `read_only`.
    fn binds(source: &Path, read_only: bool) -> HostBinds {
        let target = corral_backend::sandbox_path("bind", "/data").unwrap();
        HostBinds::new(vec![HostBind::new(source, target, read_only).unwrap()]).unwrap()
    }

    /// A symlink swapped in after the bind was made (its path resolved) is
    /// refused when create opens it, not followed.
    #[test]
    fn a_link_swapped_in_before_create_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::create_dir(&real).unwrap();
        let asked = binds(&real, true);
        std::fs::rename(&real, dir.path().join("moved")).unwrap();
        std::os::unix::fs::symlink("/etc", &real).unwrap();
        let err = open_sources(&asked).unwrap_err();
        assert!(err.to_string().contains("real"), "{err}");
    }

    /// As root: the bind is of the directory opened at create, whatever its
    /// path names by the time it is mounted; `:ro` refuses writes.
    #[test]
    fn the_directory_opened_is_the_one_bound() {
        if !rustix::process::geteuid().is_root() {
            println!("SKIP the_directory_opened_is_the_one_bound: mounting needs root");
            return;
        }
        let host = tempfile::tempdir().unwrap();
        let real = host.path().join("real");
        std::fs::create_dir(&real).unwrap();
        std::fs::write(real.join("f"), "opened\n").unwrap();
        let opened = open_sources(&binds(&real, true)).unwrap();
        // Swapped after the open: a link to another directory.
        std::fs::rename(&real, host.path().join("moved")).unwrap();
        let decoy = host.path().join("decoy");
        std::fs::create_dir(&decoy).unwrap();
        std::fs::write(decoy.join("f"), "decoy\n").unwrap();
        std::os::unix::fs::symlink(&decoy, &real).unwrap();
        let root = tempfile::tempdir().unwrap();
        let bound = bind_all(root.path(), &opened, None);
        let data = root.path().join("data");
        let seen = std::fs::read_to_string(data.join("f"));
        let write = std::fs::write(data.join("x"), "x");
        let _ = rustix::mount::unmount(&data, rustix::mount::UnmountFlags::DETACH);
        bound.unwrap();
        assert_eq!(seen.unwrap(), "opened\n");
        assert_eq!(
            write.unwrap_err().raw_os_error(),
            Some(libc::EROFS),
            "a :ro bind refuses writes"
        );
    }
}
