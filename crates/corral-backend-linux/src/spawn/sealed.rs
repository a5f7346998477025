//! The init binary as a sealed in-memory copy: every init runs from a
//! `memfd` holding the bytes of `corral-init`, sealed against any change
//! (`F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL`).
//!
//! A process inside the sandbox that reaches `/proc/<init>/exe` (or the
//! executable of a freshly forked child before its `execve`) then finds an
//! anonymous file, `/memfd:corral-init (deleted)`: it names no host path,
//! and no write, truncate or writable shared mapping of it succeeds, so the
//! overwrite of the runtime's binary behind CVE-2019-5736 has nothing to
//! hold on to.
//!
//! One copy is made per host process and binary path, on first use, and
//! kept open close-on-exec for the life of the process; an init is
//! started through its `/proc/self/fd/<n>` path, which the kernel resolves
//! at `execve` (before close-on-exec descriptors close), so the copy itself
//! never reaches the init's descriptor table.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rustix::fs::{MemfdFlags, SealFlags};

/// The name of the anonymous file (what `/proc/<init>/exe` shows, after
/// `/memfd:`).
const MEMFD_NAME: &str = "corral-init";

/// The seals every copy carries: no byte of it changes, ever.
const SEALS: SealFlags = SealFlags::WRITE
    .union(SealFlags::GROW)
    .union(SealFlags::SHRINK)
    .union(SealFlags::SEAL);

/// A sealed copy of one init binary.
#[derive(Debug)]
pub struct SealedInit {
    /// The binary it was copied from.
    source: PathBuf,
    memfd: OwnedFd,
}

impl SealedInit {
    /// The path that executes the copy from this process:
    /// `/proc/self/fd/<n>`.
    pub fn exec_path(&self) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}", self.memfd.as_raw_fd()))
    }
}

/// The sealed copy of `binary`, made on the first call for that path and
/// shared afterwards.
pub fn sealed(binary: &Path) -> io::Result<Arc<SealedInit>> {
    static CACHE: Mutex<Option<Arc<SealedInit>>> = Mutex::new(None);
    let mut cached = CACHE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(copy) = cached.as_ref().filter(|c| c.source == binary) {
        return Ok(Arc::clone(copy));
    }
    let copy = Arc::new(seal(binary)?);
    *cached = Some(Arc::clone(&copy));
    Ok(copy)
}

/// Copies `binary` into a new memfd and seals it.
fn seal(binary: &Path) -> io::Result<SealedInit> {
    let flags = MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING;
    // Where `vm.memfd_noexec` makes memfds non-executable by default, ask
    // for an executable one; kernels before 6.3 know no such flag.
    let memfd = match rustix::fs::memfd_create(MEMFD_NAME, flags | MemfdFlags::EXEC) {
        Err(rustix::io::Errno::INVAL) => rustix::fs::memfd_create(MEMFD_NAME, flags)?,
        // `vm.memfd_noexec = 2` forbids executable memfds: the init is not
        // started from its writable host path instead.
        Err(e @ (rustix::io::Errno::ACCESS | rustix::io::Errno::PERM)) => {
            return Err(io::Error::other(format!(
                "a sealed copy of {} needs an executable memfd, which this host \
                 refuses (vm.memfd_noexec): {e}",
                binary.display()
            )));
        }
        other => other?,
    };
    let mut file = File::from(memfd);
    let mut source = File::open(binary)?;
    let copied = io::copy(&mut source, &mut file)?;
    if copied != source.metadata()?.len() {
        return Err(io::Error::other(format!(
            "{} changed while it was copied",
            binary.display()
        )));
    }
    let memfd = OwnedFd::from(file);
    rustix::fs::fcntl_add_seals(&memfd, SEALS)?;
    Ok(SealedInit {
        source: binary.to_path_buf(),
        memfd,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_copy_is_sealed_and_shared() {
        let binary = std::env::current_exe().unwrap();
        let first = sealed(&binary).unwrap();
        let second = sealed(&binary).unwrap();
        assert!(Arc::ptr_eq(&first, &second), "one copy per binary");
        let seals = rustix::fs::fcntl_get_seals(&first.memfd).unwrap();
        assert!(seals.contains(SEALS), "{seals:?}");
        let link = std::fs::read_link(first.exec_path()).unwrap();
        assert!(
            link.to_string_lossy().starts_with("/memfd:corral-init"),
            "{}",
            link.display()
        );
        let mut writer = std::fs::OpenOptions::new()
            .write(true)
            .open(first.exec_path())
            .unwrap();
        let refused = std::io::Write::write(&mut writer, b"x").unwrap_err();
        assert_eq!(refused.raw_os_error(), Some(libc::EPERM));
    }
}
