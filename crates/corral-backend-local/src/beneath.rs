//! The local backend's sandbox root as the shared contained file system
//! ([`corral_backend::contained_fs`]), resolving
//! [`beneath`](corral_backend::contained::Resolution::Beneath) its host
//! directory: a `..`, an absolute symlink or a relative symlink climbing out
//! of the root is refused (`EXDEV`, `invalid_input`), never followed.

use corral_backend::BackendError;
use corral_backend::contained_fs::{ContainedFs, FileOp, FsError};
use rustix::io::Errno;

/// A sandbox's `root/`, held open as a directory descriptor.
pub(crate) type SandboxRoot = ContainedFs;

/// A failed system call of a file primitive as a backend error, naming the
/// sandbox path (never the host path behind it), coded by the shared table.
pub(crate) fn fs_error(op: FileOp, shown: &str, errno: Errno) -> BackendError {
    FsError::os(op, shown, errno).into()
}
