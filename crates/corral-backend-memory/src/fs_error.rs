//! Why an operation on the in-memory tree failed, as `errno` would say it,
//! and the shared file error each failure becomes.

use corral_backend::contained::{ContainmentReason, FileKind};
use corral_backend::contained_fs::{FileOp, FsCause, FsError as SharedFsError};
use corral_backend::{BackendError, ErrorCode};
use rustix::io::Errno;

/// Why a tree operation failed, as `errno` would say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FsError {
    NotFound,
    NotDir,
    IsDir,
    Exists,
    NotEmpty,
    Loop,
    NoSpace,
    NotRegular(FileKind),
    Root,
}

impl FsError {
    /// The `strerror` text a shell prints.
    pub(crate) fn strerror(self) -> &'static str {
        match self {
            FsError::NotFound => "No such file or directory",
            FsError::NotDir => "Not a directory",
            FsError::IsDir => "Is a directory",
            FsError::Exists => "File exists",
            FsError::NotEmpty => "Directory not empty",
            FsError::Loop => "Too many levels of symbolic links",
            FsError::NoSpace => "No space left on device",
            FsError::NotRegular(_) => "Not a regular file",
            FsError::Root => "Device or resource busy",
        }
    }

    fn code(self) -> ErrorCode {
        match self {
            FsError::NotFound => ErrorCode::NotFound,
            FsError::Exists | FsError::NotEmpty => ErrorCode::Conflict,
            FsError::NoSpace => ErrorCode::Quota,
            FsError::NotDir
            | FsError::IsDir
            | FsError::Loop
            | FsError::NotRegular(_)
            | FsError::Root => ErrorCode::InvalidInput,
        }
    }

    /// The shared file error's cause for this failure.
    fn cause(self) -> FsCause {
        match self {
            FsError::NotFound => FsCause::Os(Errno::NOENT),
            FsError::NotDir => FsCause::Os(Errno::NOTDIR),
            FsError::IsDir => FsCause::IsADirectory,
            FsError::Exists => FsCause::Os(Errno::EXIST),
            FsError::NotEmpty => FsCause::Os(Errno::NOTEMPTY),
            FsError::Loop => FsCause::Os(Errno::LOOP),
            FsError::NoSpace => FsCause::Os(Errno::NOSPC),
            FsError::NotRegular(kind) => {
                FsCause::Refused(ContainmentReason::NotRegularFile { kind })
            }
            FsError::Root => FsCause::RootItself,
        }
    }

    /// The backend error for this failure of `op` at `path`.
    pub(crate) fn at(self, op: FileOp, path: &str) -> BackendError {
        let e = SharedFsError::new(op, path, self.cause());
        debug_assert_eq!(e.code(), self.code(), "{self:?}");
        e.into()
    }
}

pub(crate) type FsResult<T> = Result<T, FsError>;
