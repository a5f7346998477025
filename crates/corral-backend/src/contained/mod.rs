//! Physically contained reads.
//!
//! A read under an `allowed_root` binds resolution and consumption together:
//! the path is resolved by the kernel *relative to a directory descriptor of
//! the root*, to a descriptor, and the bytes are read from the object that
//! descriptor pins. No path string is ever compared with another.
//!
//! # How a read works
//!
//! 1. [`ContainedRoot::open`] opens the host directory once, `O_PATH |
//!    O_DIRECTORY`. The host path is trusted and resolved only then; every
//!    later lookup is relative to the descriptor, so renaming or replacing the
//!    host path afterwards does not move the root.
//! 2. The sandbox path is resolved to an `O_PATH` descriptor, with one of two
//!    [`Resolution`]s (refusing an escape, the default, or clamping it to the
//!    root as `chroot` does) and by one of two [`Strategy`]s: a single `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`
//!    (see `openat2.rs`), or a component-by-component `O_NOFOLLOW` walk from the
//!    root descriptor (see `walk.rs`). Both refuse every escape — `..` above
//!    the root, absolute symlinks, relative symlinks climbing out, procfs magic
//!    links — as [`ContainmentReason::OutsideRoot`]. Neither opens the object.
//! 3. The type is read with `fstat` on that descriptor. Anything but a regular
//!    file is refused with [`ContainmentReason::NotRegularFile`] without ever
//!    being opened: a fifo cannot block the reader, a device driver's `open`
//!    never runs.
//! 4. The pinned regular file is opened for reading through our own
//!    descriptor's procfs link (see `reopen.rs`), and `(st_dev, st_ino)` of the
//!    readable descriptor must equal the checked one. The file read is the
//!    file checked; swapping names in the root at any moment cannot change
//!    that. Only where procfs is unusable is the contained lookup repeated
//!    instead, with the same identity check (`changed_during_read` on a
//!    mismatch); `reopen.rs` documents that fallback's one residual.
//! 5. At most `max_bytes + 1` bytes are read, whatever the file claims its size
//!    is, so a growing file cannot exceed the limit.
//!
//! # Path syntax
//!
//! Paths are relative to the root, or absolute within the sandbox: leading
//! slashes are dropped, so `/etc/hosts` means `<root>/etc/hosts`. `..` is
//! allowed while it stays beneath the root. Symlinks are followed while they
//! stay beneath the root; **absolute symlink targets are refused as
//! `outside_root`**, never re-rooted. Mount points inside the root are
//! crossed; procfs magic links found through them are refused.
//!
//! All calls are blocking system calls; async callers should run them on a
//! blocking thread.

mod error;
mod file;
mod kind;
mod openat2;
mod reopen;
mod resolution;
mod walk;

pub use error::{ContainedReadError, ContainmentReason};
pub use file::ContainedFile;
pub use kind::FileKind;
pub use resolution::Resolution;

use crate::path::SandboxPath;
use reopen::Reopen;
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{Mode, OFlags, Stat};
use std::fs::File;
use std::path::Path;
use std::sync::OnceLock;

/// Longest path accepted, in bytes (the kernel's `PATH_MAX` including its NUL).
const PATH_MAX: usize = 4096;

/// How paths are resolved beneath the root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// One `openat2(2)` call with `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`
    /// (Linux 5.6 and later, when not blocked by seccomp).
    Openat2,
    /// A component-by-component walk with `openat(O_PATH | O_NOFOLLOW)`,
    /// `readlinkat` on the link descriptors and a descriptor stack for `..`.
    NoFollowWalk,
}

impl Strategy {
    /// The best strategy this process can use, probed once and cached:
    /// [`Strategy::Openat2`] unless `openat2` is missing (`ENOSYS`), blocked
    /// (`EPERM`) or rejects the resolve flags.
    #[must_use]
    pub fn detect() -> Self {
        static DETECTED: OnceLock<Strategy> = OnceLock::new();
        *DETECTED.get_or_init(|| {
            if openat2::available() {
                Self::Openat2
            } else {
                Self::NoFollowWalk
            }
        })
    }

    /// A stable snake_case name, for logs.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Openat2 => "openat2",
            Self::NoFollowWalk => "no_follow_walk",
        }
    }
}

/// What a contained path resolved to, as seen through its descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContainedMetadata {
    /// The object's type.
    pub kind: FileKind,
    /// Its size in bytes as reported by `fstat` (procfs and some other
    /// pseudo-files report 0 and still have content).
    pub size: u64,
    /// Permission bits (`st_mode & 0o7777`).
    pub mode: u32,
}

impl ContainedMetadata {
    fn from_stat(st: &Stat) -> Self {
        Self {
            kind: FileKind::from_mode(st.st_mode),
            size: u64::try_from(st.st_size).unwrap_or(0),
            mode: st.st_mode & 0o7777,
        }
    }
}

/// `st_dev` as `u64` on every architecture.
#[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
fn dev(st: &Stat) -> u64 {
    st.st_dev as u64
}

/// `st_ino` as `u64` on every architecture.
#[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
fn ino(st: &Stat) -> u64 {
    st.st_ino as u64
}

fn fstat(fd: BorrowedFd<'_>) -> Result<Stat, ContainmentReason> {
    rustix::fs::fstat(fd).map_err(|e| ContainmentReason::Io {
        errno: e.raw_os_error(),
    })
}

/// Validates a sandbox path and makes it relative to the root.
fn relative(path: &str) -> Result<&str, ContainmentReason> {
    let rel = relative_bytes(path.as_bytes())?;
    // Only leading `/` bytes were dropped, or the whole became `.`.
    Ok(std::str::from_utf8(rel).unwrap_or("."))
}

/// [`relative`] for a path of raw bytes (names need not be UTF-8).
fn relative_bytes(path: &[u8]) -> Result<&[u8], ContainmentReason> {
    if path.is_empty() || path.len() >= PATH_MAX || path.contains(&0) {
        return Err(ContainmentReason::InvalidPath);
    }
    let start = path.iter().position(|&b| b != b'/').unwrap_or(path.len());
    let rel = &path[start..];
    Ok(if rel.is_empty() { b"." } else { rel })
}

/// A resolved `O_PATH` descriptor and how to look the same name up again.
struct Resolved {
    fd: OwnedFd,
    /// For the walk: the pinned parent directory and the final name.
    parent: Option<(OwnedFd, Vec<u8>)>,
}

/// A directory that contained reads are confined to.
///
/// Cheap to share across threads (`Send + Sync`); every call is independent.
#[derive(Debug)]
pub struct ContainedRoot {
    fd: OwnedFd,
    strategy: Strategy,
    reopen: Reopen,
    resolution: Resolution,
}

impl ContainedRoot {
    /// Opens `host_dir` as a root, with the [detected](Strategy::detect) strategy.
    ///
    /// `host_dir` is trusted (it comes from the runtime, not the sandbox) and
    /// is resolved exactly once, here.
    ///
    /// # Errors
    ///
    /// [`ContainmentReason::RootUnavailable`] if it cannot be opened as a
    /// directory; the error's `path` is `host_dir`.
    pub fn open(host_dir: &Path) -> Result<Self, ContainedReadError> {
        let fd = rustix::fs::open(
            host_dir,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| {
            ContainedReadError::new(
                ContainmentReason::RootUnavailable {
                    errno: e.raw_os_error(),
                },
                host_dir.display().to_string(),
            )
        })?;
        Ok(Self::from_dir_fd(fd))
    }

    /// A root on a directory descriptor the caller already holds and trusts
    /// (a sandbox's root it opened itself), with the detected strategy.
    pub fn from_dir_fd(fd: OwnedFd) -> Self {
        Self {
            fd,
            strategy: Strategy::detect(),
            reopen: Reopen::detect(),
            resolution: Resolution::Beneath,
        }
    }

    /// The directory `path` beneath this root, resolved the same contained
    /// way, as a root of its own. Holding its descriptor pins it: nothing can
    /// swap the directory between this call and later reads.
    ///
    /// # Errors
    ///
    /// Any resolution reason; [`ContainmentReason::NotFound`] when `path` is
    /// not a directory.
    pub fn subroot(&self, path: &str) -> Result<Self, ContainedReadError> {
        let inner = || -> Result<Self, ContainmentReason> {
            let resolved = self.resolve(relative(path)?.as_bytes(), true)?;
            let st = fstat(resolved.fd.as_fd())?;
            if FileKind::from_mode(st.st_mode) != FileKind::Directory {
                return Err(ContainmentReason::NotFound);
            }
            Ok(Self {
                fd: resolved.fd,
                strategy: self.strategy,
                reopen: self.reopen,
                resolution: self.resolution,
            })
        };
        inner().map_err(|reason| ContainedReadError::new(reason, path))
    }

    /// The contract's contained read: `path` must lie under `allowed_root`
    /// (both sandbox paths, resolved against this root), and is then
    /// resolved by the kernel beneath a pinned descriptor of
    /// `allowed_root`, so neither a symlink nor `..` takes it outside.
    ///
    /// # Errors
    ///
    /// [`ContainmentReason::OutsideRoot`] for a path not under
    /// `allowed_root`, and every reason of [`ContainedRoot::read`].
    pub fn read_under(
        &self,
        allowed_root: &SandboxPath,
        path: &SandboxPath,
        max_bytes: u64,
    ) -> Result<Vec<u8>, ContainedReadError> {
        let Some(rest) = path.strip_prefix(allowed_root) else {
            return Err(ContainedReadError::new(
                ContainmentReason::OutsideRoot,
                path.as_str(),
            ));
        };
        let sub = self
            .subroot(allowed_root.as_str())
            .map_err(|e| ContainedReadError::new(e.reason, path.as_str()))?;
        sub.read(if rest.is_empty() { "." } else { rest }, max_bytes)
            .map_err(|e| ContainedReadError::new(e.reason, path.as_str()))
    }

    /// Forces a strategy (tests cover both; production uses the detected one).
    ///
    /// Forcing [`Strategy::Openat2`] where the kernel lacks it makes every
    /// call fail with [`ContainmentReason::Io`] (`ENOSYS` or `EPERM`): it fails
    /// closed, never open.
    #[must_use]
    pub fn with_strategy(mut self, strategy: Strategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// The strategy this root resolves paths with.
    #[must_use]
    pub const fn strategy(&self) -> Strategy {
        self.strategy
    }

    /// Resolves paths the given way ([`Resolution::Beneath`] unless told).
    #[must_use]
    pub fn with_resolution(mut self, resolution: Resolution) -> Self {
        self.resolution = resolution;
        self
    }

    /// How this root resolves what would leave it.
    #[must_use]
    pub const fn resolution(&self) -> Resolution {
        self.resolution
    }

    /// The root's own directory descriptor (`O_PATH`).
    pub(crate) fn dir_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// `path` resolved to an `O_PATH` descriptor (a final symlink followed
    /// with `follow_final`) and its `fstat`; nothing is opened.
    pub(crate) fn resolve_stat(
        &self,
        path: &str,
        follow_final: bool,
    ) -> Result<(OwnedFd, Stat), ContainmentReason> {
        self.resolve_stat_bytes(path.as_bytes(), follow_final)
    }

    /// [`ContainedRoot::resolve_stat`] for a path of raw bytes.
    pub(crate) fn resolve_stat_bytes(
        &self,
        path: &[u8],
        follow_final: bool,
    ) -> Result<(OwnedFd, Stat), ContainmentReason> {
        let resolved = self.resolve(relative_bytes(path)?, follow_final)?;
        let st = fstat(resolved.fd.as_fd())?;
        Ok((resolved.fd, st))
    }

    /// Reads the whole regular file at `path`, at most `max_bytes` bytes.
    ///
    /// # Errors
    ///
    /// Any [`ContainmentReason`]; [`ContainmentReason::TooLarge`] when the file
    /// holds more than `max_bytes` bytes (detected by reading at most
    /// `max_bytes + 1`, never by trusting the reported size alone).
    pub fn read(&self, path: &str, max_bytes: u64) -> Result<Vec<u8>, ContainedReadError> {
        self.open_file(path)?.read_to_end_limited(max_bytes)
    }

    /// Reads up to `len` bytes of the regular file at `path` from `offset`;
    /// fewer (possibly none) when the file ends first.
    ///
    /// # Errors
    ///
    /// Any [`ContainmentReason`] but [`ContainmentReason::TooLarge`].
    pub fn read_range(
        &self,
        path: &str,
        offset: u64,
        len: u64,
    ) -> Result<Vec<u8>, ContainedReadError> {
        self.open_file(path)?.read_at(offset, len)
    }

    /// Opens the regular file at `path` for reading, for callers that stream.
    ///
    /// # Errors
    ///
    /// Any [`ContainmentReason`] but [`ContainmentReason::TooLarge`].
    pub fn open_file(&self, path: &str) -> Result<ContainedFile, ContainedReadError> {
        self.open_file_inner(path)
            .map_err(|reason| ContainedReadError::new(reason, path))
    }

    /// Describes what `path` resolves to, following symlinks that stay
    /// beneath the root (a final symlink pointing out is `outside_root`).
    /// Never opens the object.
    ///
    /// # Errors
    ///
    /// Any resolution reason: [`ContainmentReason::OutsideRoot`],
    /// [`ContainmentReason::NotFound`], [`ContainmentReason::SymlinkLoop`],
    /// [`ContainmentReason::InvalidPath`], [`ContainmentReason::Io`].
    pub fn stat(&self, path: &str) -> Result<ContainedMetadata, ContainedReadError> {
        self.metadata_inner(path, true)
            .map_err(|reason| ContainedReadError::new(reason, path))
    }

    /// Like [`ContainedRoot::stat`], but a final symlink is described itself
    /// ([`FileKind::Symlink`]) instead of being followed. Intermediate
    /// components are still resolved beneath the root.
    ///
    /// # Errors
    ///
    /// As [`ContainedRoot::stat`].
    pub fn symlink_metadata(&self, path: &str) -> Result<ContainedMetadata, ContainedReadError> {
        self.metadata_inner(path, false)
            .map_err(|reason| ContainedReadError::new(reason, path))
    }

    fn resolve(&self, rel: &[u8], follow_final: bool) -> Result<Resolved, ContainmentReason> {
        match self.strategy {
            Strategy::Openat2 => Ok(Resolved {
                fd: openat2::resolve(self.fd.as_fd(), rel, follow_final, self.resolution)?,
                parent: None,
            }),
            Strategy::NoFollowWalk => {
                let walked = walk::resolve(self.fd.as_fd(), rel, follow_final, self.resolution)?;
                Ok(Resolved {
                    fd: walked.fd,
                    parent: walked.parent,
                })
            }
        }
    }

    fn metadata_inner(
        &self,
        path: &str,
        follow_final: bool,
    ) -> Result<ContainedMetadata, ContainmentReason> {
        let rel = relative(path)?.as_bytes();
        let resolved = self.resolve(rel, follow_final)?;
        Ok(ContainedMetadata::from_stat(&fstat(resolved.fd.as_fd())?))
    }

    fn open_file_inner(&self, path: &str) -> Result<ContainedFile, ContainmentReason> {
        let rel = relative(path)?.as_bytes();
        let resolved = self.resolve(rel, true)?;
        let (readable, opened) = self.open_resolved(rel, &resolved)?;
        Ok(ContainedFile {
            file: File::from(readable),
            metadata: ContainedMetadata::from_stat(&opened),
            path: path.to_owned(),
        })
    }

    /// Type-checks the resolved `O_PATH` descriptor, opens the same inode for
    /// reading and proves it is the same inode.
    fn open_resolved(
        &self,
        rel: &[u8],
        resolved: &Resolved,
    ) -> Result<(OwnedFd, Stat), ContainmentReason> {
        let checked = fstat(resolved.fd.as_fd())?;
        let kind = FileKind::from_mode(checked.st_mode);
        if kind != FileKind::Regular {
            return Err(ContainmentReason::NotRegularFile { kind });
        }
        let readable = self.reopen_for_read(rel, resolved)?;
        let opened = fstat(readable.as_fd())?;
        if (dev(&opened), ino(&opened)) != (dev(&checked), ino(&checked)) {
            return Err(ContainmentReason::ChangedDuringRead);
        }
        // Same inode, so still a regular file; checked again for robustness.
        let kind = FileKind::from_mode(opened.st_mode);
        if kind != FileKind::Regular {
            return Err(ContainmentReason::NotRegularFile { kind });
        }
        Ok((readable, opened))
    }

    /// Opens the checked regular file for reading (see `reopen.rs`).
    fn reopen_for_read(
        &self,
        rel: &[u8],
        resolved: &Resolved,
    ) -> Result<OwnedFd, ContainmentReason> {
        if self.reopen == Reopen::Procfs
            && let Some(opened) = reopen::via_procfs(resolved.fd.as_fd())
        {
            return opened;
        }
        match (self.strategy, &resolved.parent) {
            (Strategy::Openat2, _) => openat2::open_for_read(self.fd.as_fd(), rel, self.resolution),
            (Strategy::NoFollowWalk, Some((dir, name))) => walk::open_for_read(dir.as_fd(), name),
            // A walk ending in `.`/`..` yields a directory, refused earlier.
            (Strategy::NoFollowWalk, None) => Err(ContainmentReason::ChangedDuringRead),
        }
    }
}

/// How often [`openat2_retrying`] retries when the kernel reports `EAGAIN`.
pub const EAGAIN_RETRIES: usize = 64;

/// `openat2` that retries when the kernel answers `EAGAIN`: under
/// `RESOLVE_BENEATH` or `RESOLVE_IN_ROOT` a `..` step fails that way when a
/// rename or a mount anywhere on the system raced the lookup, which a busy
/// host (parallel sandboxes mounting and unmounting) makes common. Every
/// contained lookup in corral goes through this, so none fails spuriously.
pub fn openat2_retrying<Fd: std::os::fd::AsFd, P: rustix::path::Arg + Copy>(
    dirfd: Fd,
    path: P,
    flags: rustix::fs::OFlags,
    mode: rustix::fs::Mode,
    resolve: rustix::fs::ResolveFlags,
) -> Result<std::os::fd::OwnedFd, rustix::io::Errno> {
    let mut attempts = 0;
    loop {
        match rustix::fs::openat2(dirfd.as_fd(), path, flags, mode, resolve) {
            Err(rustix::io::Errno::AGAIN) if attempts < EAGAIN_RETRIES => attempts += 1,
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests;
