//! The curated `/etc` of the `host` image: made per sandbox, on the
//! sandbox's own root, instead of binding the host's `/etc`.
//!
//! What it holds:
//! - the sandbox's identity (`identity.rs`): `passwd` and `group` with
//!   `root` and an unprivileged `user` (1000:1000, home `/home/user`, which
//!   is made and owned by that user);
//! - its names (`names.rs`): `hostname`, `hosts`, `resolv.conf`,
//!   `nsswitch.conf`, and `mtab` (a link to the sandbox's own mount table);
//! - what programs need from the host ([`FROM_HOST`]): small files copied
//!   (`ld.so.cache`, `os-release`, `services`, …) and directories bound
//!   read-only (`ssl/certs`, `alternatives`, …), nothing else — never
//!   `shadow`, `ssh`, `ssl/private` or a service's keys.
//!
//! The whole `/etc` is then read-only: it is bound onto itself read-only in
//! the host's mount namespace, so the host-side file primitives and the
//! commands see the same tree ([`crate::rootfs::bind_read_only`]).

mod from_host;
mod identity;
mod names;

use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

pub use crate::sandbox_user::{USER_GID, USER_HOME, USER_NAME, USER_UID};
pub use from_host::{FROM_HOST, FromHost, Kind};
pub use identity::chown_inside;

/// A step of making the curated `/etc` that failed: the sandbox path and
/// the OS error.
#[derive(Debug, thiserror::Error)]
#[error("making the sandbox's {path}: {error}")]
pub struct EtcError {
    /// The sandbox path, e.g. `/etc/passwd`.
    pub path: String,
    /// What the OS said.
    pub error: io::Error,
}

/// Where the curated `/etc` is written: the sandbox root, with every path
/// relative to it.
pub(crate) struct EtcRoot<'a> {
    root: &'a Path,
}

impl EtcRoot<'_> {
    /// The host path of sandbox path `rel` (`etc/passwd`).
    fn host(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    fn err(rel: &str) -> impl FnOnce(io::Error) -> EtcError + '_ {
        move |error| EtcError {
            path: format!("/{rel}"),
            error,
        }
    }

    /// Makes directory `rel` (mode 0755) and its parents; an existing one
    /// is kept.
    fn dir(&self, rel: &str) -> Result<(), EtcError> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(self.host(rel))
            .map_err(Self::err(rel))
    }

    /// Writes file `rel` with `bytes`, mode 0644, replacing what is there.
    fn file(&self, rel: &str, bytes: &[u8]) -> Result<(), EtcError> {
        use std::io::Write;
        let path = self.host(rel);
        match std::fs::symlink_metadata(&path) {
            Ok(_) => std::fs::remove_file(&path).map_err(Self::err(rel))?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(Self::err(rel)(e)),
        }
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .map_err(Self::err(rel))?;
        f.write_all(bytes).map_err(Self::err(rel))?;
        // The umask may have narrowed the mode.
        f.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644))
            .map_err(Self::err(rel))
    }

    /// Makes `rel` a symlink to `target`, replacing what is there.
    fn symlink(&self, rel: &str, target: &Path) -> Result<(), EtcError> {
        let path = self.host(rel);
        if std::fs::symlink_metadata(&path).is_ok() {
            std::fs::remove_file(&path).map_err(Self::err(rel))?;
        }
        std::os::unix::fs::symlink(target, &path).map_err(Self::err(rel))
    }
}

/// Host side: writes the curated `/etc` into `root` (the sandbox root, on
/// its writable layer, before the init enters it) for the sandbox named
/// `hostname`, makes `/home/user`, then binds `/etc` read-only with the
/// host directories of [`FROM_HOST`] read-only beneath it. Everything it
/// mounts lies under `root`, so the sandbox's teardown detaches it.
pub fn make(root: &Path, hostname: &str) -> Result<(), EtcError> {
    let at = EtcRoot { root };
    // A restored snapshot never holds `/etc` (it is the image's), but a
    // stray entry of another kind is replaced, never followed.
    let etc = root.join("etc");
    if std::fs::symlink_metadata(&etc).is_ok_and(|m| !m.is_dir()) {
        std::fs::remove_file(&etc).map_err(EtcRoot::err("etc"))?;
    }
    at.dir("etc")?;
    identity::write(&at)?;
    names::write(&at, hostname)?;
    // The mount table is the sandbox's own, never a copy of the host's.
    at.symlink("etc/mtab", Path::new("/proc/self/mounts"))?;
    let binds = from_host::write(&at, Path::new("/etc"))?;
    crate::rootfs::bind_read_only(&etc, &etc).map_err(EtcRoot::err("etc"))?;
    for (source, rel) in binds {
        crate::rootfs::bind_read_only(&source, &at.host(&rel)).map_err(EtcRoot::err(&rel))?;
    }
    Ok(())
}
