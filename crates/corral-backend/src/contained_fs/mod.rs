//! The contained host-directory file system: the `files` primitives (and
//! `list_tree`) over a directory of the host that holds a sandbox's `/`.
//!
//! One implementation for every backend that keeps a sandbox's files in a
//! host directory; what differs between them is a parameter:
//!
//! - [`Resolution`]: whether a symlink or `..` that would leave the root is
//!   refused ([`Resolution::Beneath`]: the local backend, whose root is an
//!   ordinary host directory) or resolved inside it as the sandbox itself
//!   sees it ([`Resolution::InRoot`]: the linux backend, over its merged root);
//! - [`Ownership`]: who owns what is created.
//!
//! Every path is validated and normalized once ([`SplitPath`]), then
//! resolved by the kernel (or, without `openat2`, by a component walk with
//! the same rules) relative to a descriptor of the root, to an `O_PATH`
//! descriptor whose type is checked before anything is opened: a fifo never
//! blocks, a device's driver never runs. A name is then created, renamed or
//! unlinked relative to the resolved parent directory's descriptor, never
//! following a final symlink. Regular files are read through
//! [`ContainedRoot`] (the inode read is the inode checked).
//!
//! Failures are typed ([`FsError`]) and coded by one table ([`FsCause::code`]).
//! All calls are blocking system calls.

mod error;
mod file_ops;
mod list;
mod mkdir;
mod read;
mod remove;
mod sandbox_path;
mod stat;
mod write;

#[cfg(test)]
mod privileged_tests;
#[cfg(test)]
mod tests;

pub use error::{FileOp, FsCause, FsError, errno_code, reason_code};
pub use file_ops::ContainedFsSource;
pub use read::MAX_READ;
pub use sandbox_path::SplitPath;

use std::path::Path;

use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{Mode, OFlags, Stat};
use rustix::io::Errno;

use crate::contained::{ContainedRoot, ContainmentReason, FileKind, Resolution, Strategy};
use crate::error::{BackendError, Result};
use crate::files::FileType;

/// Who owns the files and directories the primitives create.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ownership {
    /// The calling process (the local backend: a sandbox is the caller's).
    Process,
    /// The owner of the root directory (the linux backend: its sandbox root
    /// is owned by the root of the sandbox's user namespace, so that root
    /// inside may change what the host wrote).
    RootOwner,
    /// An id of the sandbox's user namespace other than its root: the
    /// root directory owner's host ids plus `uid` and `gid` (the linux
    /// backend maps sandbox id `n` to host id `start + n`), e.g. the
    /// sandbox's unprivileged user.
    RootOwnerPlus {
        /// The uid inside the sandbox.
        uid: u32,
        /// The gid inside the sandbox.
        gid: u32,
    },
}

/// A sandbox's `/`, held open as a directory descriptor.
#[derive(Debug)]
pub struct ContainedFs {
    root: ContainedRoot,
    ownership: Ownership,
}

impl ContainedFs {
    /// Opens the host directory `host_dir` (trusted: it comes from the
    /// backend's state, not from the sandbox) as sandbox `id`'s `/`.
    ///
    /// # Errors
    ///
    /// `not_found` (the sandbox) when it is missing, `io` otherwise.
    pub fn open(
        host_dir: &Path,
        id: &str,
        resolution: Resolution,
        ownership: Ownership,
    ) -> Result<Self> {
        let fd = rustix::fs::open(
            host_dir,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| match e {
            Errno::NOENT | Errno::NOTDIR => BackendError::sandbox_not_found(id),
            e => BackendError::from_io(
                format_args!("opening the file system of sandbox {id}"),
                &std::io::Error::from(e),
            ),
        })?;
        Ok(Self::from_dir_fd(fd, resolution, ownership))
    }

    /// The file system on a directory descriptor the caller holds and trusts.
    #[must_use]
    pub fn from_dir_fd(fd: OwnedFd, resolution: Resolution, ownership: Ownership) -> Self {
        ContainedFs {
            root: ContainedRoot::from_dir_fd(fd).with_resolution(resolution),
            ownership,
        }
    }

    /// The same file system, creating what it creates for `ownership`.
    #[must_use]
    pub fn with_ownership(mut self, ownership: Ownership) -> Self {
        self.ownership = ownership;
        self
    }

    /// Forces a resolution strategy (tests cover both; production uses the
    /// detected one).
    #[must_use]
    pub fn with_strategy(mut self, strategy: Strategy) -> Self {
        self.root = self.root.with_strategy(strategy);
        self
    }

    /// The contained-read root underneath.
    #[must_use]
    pub const fn root(&self) -> &ContainedRoot {
        &self.root
    }

    /// `p` resolved to an `O_PATH` descriptor and its `fstat` (a final
    /// symlink followed with `follow_final`).
    pub(crate) fn resolve(
        &self,
        op: FileOp,
        p: &SplitPath,
        follow_final: bool,
    ) -> std::result::Result<(OwnedFd, Stat), FsError> {
        self.root
            .resolve_stat(&p.relative(), follow_final)
            .map_err(|reason| self.refused(op, p, reason))
    }

    /// A resolution refused with `reason`, worded: `not_found` becomes
    /// `ENOTDIR` when a component on the way is not a directory (the
    /// resolution vocabulary holds both in one reason; the table does not).
    fn refused(&self, op: FileOp, p: &SplitPath, reason: ContainmentReason) -> FsError {
        if reason == ContainmentReason::NotFound {
            let comps = p.comps();
            for n in 1..comps.len() {
                let prefix = SplitPath::from_comps(comps[..n].to_vec());
                match self.root.resolve_stat(&prefix.relative(), true) {
                    Ok((_, st)) if FileKind::from_mode(st.st_mode) != FileKind::Directory => {
                        return FsError::new(op, prefix.shown(), FsCause::Os(Errno::NOTDIR));
                    }
                    Ok(_) => {}
                    Err(_) => break,
                }
            }
        }
        FsError::new(op, p.shown(), FsCause::Refused(reason))
    }

    /// The directory `p` as an `O_PATH` descriptor; `NotADirectory` for
    /// anything else.
    pub fn directory(&self, op: FileOp, p: &SplitPath) -> std::result::Result<OwnedFd, FsError> {
        let (fd, st) = self.resolve(op, p, true)?;
        if FileKind::from_mode(st.st_mode) != FileKind::Directory {
            return Err(FsError::new(op, p.shown(), FsCause::NotADirectory));
        }
        Ok(fd)
    }

    /// The directory `p` opened for reading its entries.
    ///
    /// # Errors
    ///
    /// As [`ContainedFs::directory`], or the failed open.
    pub fn open_dir(&self, op: FileOp, p: &SplitPath) -> std::result::Result<OwnedFd, FsError> {
        let dir = self.directory(op, p)?;
        // Reopening the pinned directory itself: no name is looked up again.
        rustix::fs::openat(
            &dir,
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| FsError::new(op, p.shown(), FsCause::Os(e)))
    }

    /// The directory holding the last component of `p` (an `O_PATH`
    /// descriptor) and that name; `RootItself` for `/`.
    ///
    /// # Errors
    ///
    /// As [`ContainedFs::directory`] for the parent.
    pub fn parent<'p>(
        &self,
        op: FileOp,
        p: &'p SplitPath,
    ) -> std::result::Result<(OwnedFd, &'p str), FsError> {
        let Some((parent, _)) = p.split_last() else {
            return Err(FsError::new(op, p.shown(), FsCause::RootItself));
        };
        let dir = self.directory(op, &parent).map_err(|e| match e.cause {
            FsCause::NotADirectory => FsError::new(op, e.path, FsCause::Os(Errno::NOTDIR)),
            _ => e,
        })?;
        let name = p.comps().last().map_or("", String::as_str);
        Ok((dir, name))
    }

    /// Resolves `comps` (normalized) and opens the result with `flags`, for
    /// callers that decide by `errno`: an `O_PATH` open returns the resolved
    /// descriptor (`ENOTDIR` when `O_DIRECTORY` asks for a directory and it
    /// is none); an `O_DIRECTORY` open reopens the resolved directory for
    /// reading. Regular files are read through [`ContainedFs::read`], never
    /// here (`EINVAL`).
    ///
    /// # Errors
    ///
    /// The `errno` of the refusal: `EXDEV` for a path leaving the root,
    /// `ENOENT`, `ELOOP`, `ENAMETOOLONG`, or the system call's own.
    pub fn open_at(
        &self,
        comps: &[String],
        flags: OFlags,
        follow_final: bool,
    ) -> std::result::Result<OwnedFd, Errno> {
        let p = SplitPath::from_comps(comps.to_vec());
        let (fd, st) = self
            .root
            .resolve_stat(&p.relative(), follow_final)
            .map_err(reason_errno)?;
        let is_dir = FileKind::from_mode(st.st_mode) == FileKind::Directory;
        if flags.contains(OFlags::DIRECTORY) && !is_dir {
            return Err(Errno::NOTDIR);
        }
        if flags.contains(OFlags::PATH) {
            return Ok(fd);
        }
        if !flags.contains(OFlags::DIRECTORY) {
            return Err(Errno::INVAL);
        }
        let keep = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        rustix::fs::openat(fd.as_fd(), ".", keep, Mode::empty())
    }

    /// Gives what the host just created in `dir` to the root's owner, when
    /// the ownership asks for it.
    fn give(&self, dir: &OwnedFd, name: &str) -> std::result::Result<(), Errno> {
        let (plus_uid, plus_gid) = match self.ownership {
            Ownership::Process => return Ok(()),
            Ownership::RootOwner => (0, 0),
            Ownership::RootOwnerPlus { uid, gid } => (uid, gid),
        };
        let st = rustix::fs::fstat(self.root.dir_fd())?;
        let uid = st.st_uid.checked_add(plus_uid).ok_or(Errno::OVERFLOW)?;
        let gid = st.st_gid.checked_add(plus_gid).ok_or(Errno::OVERFLOW)?;
        rustix::fs::chownat(
            dir,
            name,
            Some(rustix::fs::Uid::from_raw(uid)),
            Some(rustix::fs::Gid::from_raw(gid)),
            rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
        )
    }
}

/// The `errno` a refusal stands for, for [`ContainedFs::open_at`].
pub(crate) fn reason_errno(reason: ContainmentReason) -> Errno {
    match reason {
        ContainmentReason::OutsideRoot => Errno::XDEV,
        ContainmentReason::NotFound => Errno::NOENT,
        ContainmentReason::SymlinkLoop => Errno::LOOP,
        ContainmentReason::InvalidPath => Errno::NAMETOOLONG,
        ContainmentReason::ChangedDuringRead => Errno::AGAIN,
        ContainmentReason::TooLarge { .. } => Errno::FBIG,
        ContainmentReason::NotRegularFile { .. } => Errno::INVAL,
        ContainmentReason::RootUnavailable { errno } | ContainmentReason::Io { errno } => {
            Errno::from_raw_os_error(errno)
        }
    }
}

/// The primitives' file type of a raw `st_mode` (a kind the kernel adds
/// later is reported as a file, as it always was).
#[must_use]
pub fn file_type_of(st_mode: u32) -> FileType {
    match FileKind::from_mode(st_mode) {
        FileKind::Directory => FileType::Directory,
        FileKind::Symlink => FileType::Symlink,
        FileKind::Fifo => FileType::Fifo,
        FileKind::Socket => FileType::Socket,
        FileKind::CharDevice => FileType::CharDevice,
        FileKind::BlockDevice => FileType::BlockDevice,
        FileKind::Regular | FileKind::Other => FileType::File,
    }
}

/// Modification time of `st`, epoch milliseconds (0 before the epoch).
#[must_use]
pub fn mtime_ms(st: &Stat) -> u64 {
    #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
    let (secs, nanos) = (
        i128::from(st.st_mtime as i64),
        i128::from(st.st_mtime_nsec as i64),
    );
    let ms = secs * 1000 + nanos / 1_000_000;
    u64::try_from(ms.max(0)).unwrap_or(u64::MAX)
}

/// Size of `st` in bytes.
pub(crate) fn size_of(st: &Stat) -> u64 {
    u64::try_from(st.st_size).unwrap_or(0)
}
