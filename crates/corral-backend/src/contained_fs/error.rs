//! Why a file primitive failed, typed, and the one table that turns it into
//! an [`ErrorCode`].
//!
//! Every backend serving a contained host directory reports the same code
//! for the same cause: the table is [`FsCause::code`], over
//! [`errno_code`] for system calls and [`reason_code`] for refused
//! resolutions. A message names the operation and the sandbox path, never
//! the host path behind it.

use std::fmt;

use rustix::io::Errno;

use crate::contained::ContainmentReason;
use crate::error::ErrorCode;

/// The file primitive that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileOp {
    /// `read`.
    Read,
    /// `read_range`.
    ReadRange,
    /// `write`.
    Write,
    /// `list`.
    List,
    /// `stat`.
    Stat,
    /// `remove`.
    Remove,
    /// `mkdir`.
    Mkdir,
    /// `list_tree`.
    ListTree,
    /// `write_batch`.
    WriteBatch,
    /// Opening a directory for a backend's own walk (usage, a snapshot, a
    /// working directory).
    OpenDir,
}

impl FileOp {
    /// The primitive's name, as messages show it.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::ReadRange => "read_range",
            Self::Write => "write",
            Self::List => "list",
            Self::Stat => "stat",
            Self::Remove => "remove",
            Self::Mkdir => "mkdir",
            Self::ListTree => "list_tree",
            Self::WriteBatch => "write_batch",
            Self::OpenDir => "open",
        }
    }
}

impl fmt::Display for FileOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What went wrong, before it is worded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsCause {
    /// Resolving the path was refused (it leaves the root, loops, is missing…).
    Refused(ContainmentReason),
    /// A system call on the resolved directory failed.
    Os(Errno),
    /// The operation needs a directory and the path names something else.
    NotADirectory,
    /// The operation needs a file and the path names a directory.
    IsADirectory,
    /// The operation is not possible on `/` itself.
    RootItself,
    /// `mkdir` with parents met something that is not a directory.
    ExistsNotDirectory,
    /// A mode with bits beyond `0o7777`.
    BadMode {
        /// The mode asked for.
        mode: u32,
    },
    /// A whole-file read of more than the backend returns at once.
    TooLarge {
        /// The largest whole read, in bytes.
        limit: u64,
    },
}

impl FsCause {
    /// The one table: the code every contained host-directory backend
    /// reports for this cause.
    #[must_use]
    pub const fn code(&self) -> ErrorCode {
        match self {
            Self::Refused(reason) => reason_code(reason),
            Self::Os(errno) => errno_code(*errno),
            Self::NotADirectory | Self::IsADirectory | Self::RootItself | Self::BadMode { .. } => {
                ErrorCode::InvalidInput
            }
            Self::ExistsNotDirectory => ErrorCode::Conflict,
            Self::TooLarge { .. } => ErrorCode::Quota,
        }
    }
}

/// The code of a failed system call of a file primitive.
///
/// `ENOTDIR` (a file used as a directory) is `invalid_input`, not
/// `not_found`: the SDK reads a `not_found` from `write` as "a parent is
/// missing" (an adapter may "create missing parents on a confirmed
/// not-found response, and retry the upload"), which cannot help when a
/// file is in the way.
#[must_use]
pub const fn errno_code(errno: Errno) -> ErrorCode {
    match errno {
        Errno::NOENT => ErrorCode::NotFound,
        Errno::NOTDIR
        | Errno::ISDIR
        | Errno::INVAL
        | Errno::LOOP
        | Errno::XDEV
        | Errno::NAMETOOLONG
        | Errno::ROFS => ErrorCode::InvalidInput,
        Errno::EXIST | Errno::NOTEMPTY => ErrorCode::Conflict,
        Errno::NOSPC | Errno::DQUOT | Errno::FBIG => ErrorCode::Quota,
        _ => ErrorCode::Io,
    }
}

/// The code of a refused contained resolution (or read).
#[must_use]
pub const fn reason_code(reason: &ContainmentReason) -> ErrorCode {
    match reason {
        ContainmentReason::NotFound | ContainmentReason::RootUnavailable { .. } => {
            ErrorCode::NotFound
        }
        ContainmentReason::OutsideRoot
        | ContainmentReason::NotRegularFile { .. }
        | ContainmentReason::SymlinkLoop
        | ContainmentReason::InvalidPath => ErrorCode::InvalidInput,
        ContainmentReason::TooLarge { .. } => ErrorCode::Quota,
        ContainmentReason::ChangedDuringRead => ErrorCode::Conflict,
        ContainmentReason::Io { errno } => errno_code(Errno::from_raw_os_error(*errno)),
    }
}

impl fmt::Display for FsCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Refused(ContainmentReason::OutsideRoot) | Self::Os(Errno::XDEV) => f.write_str(
                "the path resolves outside the sandbox (a symlink or `..` leaves its root)",
            ),
            Self::Refused(ContainmentReason::NotFound) | Self::Os(Errno::NOENT) => {
                f.write_str("no such file or directory")
            }
            Self::Refused(ContainmentReason::NotRegularFile { kind }) => {
                write!(f, "it is a {kind}, not a regular file")
            }
            Self::Refused(ContainmentReason::ChangedDuringRead) => {
                f.write_str("the file was replaced while it was being opened")
            }
            Self::Refused(ContainmentReason::RootUnavailable { .. }) => {
                f.write_str("the sandbox's file system is gone")
            }
            Self::Refused(ContainmentReason::Io { errno }) => {
                write!(f, "{}", std::io::Error::from_raw_os_error(*errno))
            }
            Self::Refused(other) => write!(f, "{other}"),
            Self::Os(Errno::NOTDIR) => f.write_str("a component of the path is not a directory"),
            Self::Os(Errno::ROFS) => {
                f.write_str("the path is read-only (a read-only part of the sandbox)")
            }
            Self::Os(errno) => write!(f, "{}", std::io::Error::from(*errno)),
            Self::NotADirectory => f.write_str("not a directory"),
            Self::IsADirectory => f.write_str("it is a directory"),
            Self::RootItself => f.write_str("not possible on /"),
            Self::ExistsNotDirectory => f.write_str("it exists and is not a directory"),
            Self::BadMode { mode } => write!(f, "mode {mode:#o} has bits beyond 0o7777"),
            Self::TooLarge { limit } => write!(f, "it is larger than {limit} bytes"),
        }
    }
}

/// A failed file primitive: the operation, the sandbox path it was about,
/// and the cause.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{op} {path}: {cause}")]
pub struct FsError {
    /// The primitive.
    pub op: FileOp,
    /// The sandbox path (the one that failed, perhaps a parent of the one asked).
    pub path: String,
    /// What went wrong.
    pub cause: FsCause,
}

impl FsError {
    /// `cause` of `op` on `path`.
    #[must_use]
    pub fn new(op: FileOp, path: impl Into<String>, cause: FsCause) -> Self {
        FsError {
            op,
            path: path.into(),
            cause,
        }
    }

    /// A failed system call of `op` on `path`: the cause [`FsCause::Os`].
    #[must_use]
    pub fn os(op: FileOp, path: impl Into<String>, errno: Errno) -> Self {
        Self::new(op, path, FsCause::Os(errno))
    }

    /// The code the table gives its cause.
    #[must_use]
    pub const fn code(&self) -> ErrorCode {
        self.cause.code()
    }
}

#[cfg(test)]
mod tests {
    use super::{FileOp, FsCause, FsError, errno_code, reason_code};
    use crate::contained::{ContainmentReason, FileKind};
    use crate::error::{BackendError, ErrorCode};
    use rustix::io::Errno;

    /// The one errno table. The linux and the local copies it replaces
    /// disagreed on five rows (`was` names their codes, linux / local);
    /// each is decided by the SDK specification (`003`, "Write a provider"):
    ///
    /// - "Map the service's failures to `SandboxError` codes such as `auth`,
    ///   `not_found`, `quota`, and `unavailable`": a limit of the platform
    ///   (`EFBIG`, like `ENOSPC`/`EDQUOT`) is `quota`, not `io`;
    /// - "create missing parents on a confirmed not-found response, and
    ///   retry the upload": `not_found` means something creatable is
    ///   missing, so `ENOTDIR` (a file in the way) is `invalid_input`, as a
    ///   malformed request (`EINVAL`, `ENAMETOOLONG`, a write into the
    ///   sandbox's read-only image, `EROFS`) is, never `io`.
    #[test]
    fn errnos_map_to_one_code_each() {
        use ErrorCode::{Conflict, InvalidInput, Io, NotFound, Quota};
        /// The codes the linux and the local copies gave, where they differed.
        type Was = Option<(ErrorCode, ErrorCode)>;
        let table: [(Errno, ErrorCode, Was); 18] = [
            (Errno::NOENT, NotFound, None),
            (Errno::NOTDIR, InvalidInput, Some((InvalidInput, NotFound))),
            (Errno::ISDIR, InvalidInput, None),
            (Errno::INVAL, InvalidInput, Some((InvalidInput, Io))),
            (Errno::LOOP, InvalidInput, None),
            (Errno::XDEV, InvalidInput, None),
            (Errno::NAMETOOLONG, InvalidInput, Some((Io, InvalidInput))),
            (Errno::ROFS, InvalidInput, Some((InvalidInput, Io))),
            (Errno::EXIST, Conflict, None),
            (Errno::NOTEMPTY, Conflict, None),
            (Errno::NOSPC, Quota, None),
            (Errno::DQUOT, Quota, None),
            (Errno::FBIG, Quota, Some((Quota, Io))),
            (Errno::ACCESS, Io, None),
            (Errno::PERM, Io, None),
            (Errno::IO, Io, None),
            (Errno::BUSY, Io, None),
            (Errno::AGAIN, Io, None),
        ];
        for (errno, code, was) in table {
            assert_eq!(errno_code(errno), code, "{errno:?} (was {was:?})");
            let e = crate::error::BackendError::from(FsError::os(FileOp::Write, "/x", errno));
            assert_eq!(e.code(), code, "{errno:?}");
            assert!(e.message().starts_with("write /x: "), "{e}");
        }
    }

    /// Refused resolutions and reads: the local copy made `too_large`
    /// `invalid_input`, the linux one (its own size limit) `quota`; the
    /// specification's "`quota`" for the platform's limits decides.
    #[test]
    fn reasons_map_to_one_code_each() {
        use ErrorCode::{Conflict, InvalidInput, Io, NotFound, Quota};
        let table = [
            (ContainmentReason::OutsideRoot, InvalidInput),
            (ContainmentReason::NotFound, NotFound),
            (
                ContainmentReason::NotRegularFile {
                    kind: FileKind::Fifo,
                },
                InvalidInput,
            ),
            (ContainmentReason::SymlinkLoop, InvalidInput),
            (
                ContainmentReason::TooLarge {
                    limit: 1,
                    actual: 2,
                },
                Quota,
            ),
            (ContainmentReason::InvalidPath, InvalidInput),
            (ContainmentReason::ChangedDuringRead, Conflict),
            (ContainmentReason::RootUnavailable { errno: 2 }, NotFound),
            (ContainmentReason::Io { errno: 5 }, Io),
            (ContainmentReason::Io { errno: 28 }, Quota),
        ];
        for (reason, code) in table {
            assert_eq!(reason_code(&reason), code, "{reason:?}");
            assert_eq!(FsCause::Refused(reason).code(), code, "{reason:?}");
        }
    }

    #[test]
    fn messages_name_the_operation_and_the_sandbox_path_on_one_line() {
        let table = [
            (
                FsCause::NotADirectory,
                ErrorCode::InvalidInput,
                "not a directory",
            ),
            (
                FsCause::IsADirectory,
                ErrorCode::InvalidInput,
                "it is a directory",
            ),
            (
                FsCause::RootItself,
                ErrorCode::InvalidInput,
                "not possible on /",
            ),
            (
                FsCause::ExistsNotDirectory,
                ErrorCode::Conflict,
                "is not a directory",
            ),
            (
                FsCause::BadMode { mode: 0o10000 },
                ErrorCode::InvalidInput,
                "0o10000",
            ),
            (
                FsCause::TooLarge { limit: 8 },
                ErrorCode::Quota,
                "larger than 8 bytes",
            ),
            (
                FsCause::Os(Errno::ROFS),
                ErrorCode::InvalidInput,
                "read-only",
            ),
            (
                FsCause::Refused(ContainmentReason::OutsideRoot),
                ErrorCode::InvalidInput,
                "outside the sandbox",
            ),
        ];
        for (cause, code, text) in table {
            let e = BackendError::from(FsError::new(FileOp::Mkdir, "/a/\nb", cause));
            assert_eq!(e.code(), code, "{cause:?}");
            assert!(e.message().starts_with("mkdir /a/"), "{e}");
            assert!(
                e.message().contains(text) && !e.message().contains('\n'),
                "{e}"
            );
        }
    }
}
