//! The archive of a snapshot, for every backend that keeps one as a file: a
//! zstd-compressed tar of a directory tree, written by one writer
//! ([`write()`]) and applied by one reader ([`apply()`]).
//!
//! - **Kept**: directories, regular files (permission bits, setuid/setgid/
//!   sticky included, owners and modification times), symlinks as symlinks
//!   (never followed), fifos. Names and link targets are bytes, as the
//!   kernel keeps them. Files with holes are stored sparsely (`sparse`);
//!   the data stored and the time taken are bounded ([`Budget`]). Hard links
//!   are stored as separate copies. Sockets and device nodes are skipped —
//!   except, for an overlay's upper dir ([`Layout::OverlayUpper`]), its
//!   *whiteouts* (character devices 0/0, stored as such) and *opaque*
//!   directories (stored with the PAX record
//!   `SCHILY.xattr.trusted.overlay.opaque=y`).
//! - **Applied** onto a sandbox root resolved the backend's way
//!   ([`Resolution`](crate::contained::Resolution)): only directories,
//!   regular files (sparse ones too), symlinks and fifos are restored, and
//!   for an overlay whiteouts and opaque directories; any other entry (a
//!   hard link, a device node, …), any `..` or absolute path, any path
//!   through a symlink leaving the root and any path appearing twice
//!   refuses the whole archive. An entry replaces what is at its path (an
//!   image's file, for an overlay), never what lies behind a symlink.
//!
//! The archives each backend wrote before this module existed are read
//! unchanged: they hold no entry kind outside these.

mod apply;
mod budget;
mod sparse;
mod write;

#[cfg(test)]
mod tests;

pub use apply::{ApplyOptions, Owners, apply, apply_compressed};
pub use budget::{Budget, CAPTURE_DEADLINE, Exceeded, exceeded};
pub use write::{WriteOptions, write, write_compressed};

use crate::error::{BackendError, SnapshotError};

/// The PAX record marking an opaque overlay directory.
const OPAQUE_PAX: &str = "SCHILY.xattr.trusted.overlay.opaque";
/// The overlay's opaque-directory attribute.
const OPAQUE_XATTR: &str = "trusted.overlay.opaque";
/// The zstd level archives are written with.
const ZSTD_LEVEL: i32 = 3;

/// What tree an archive holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Layout {
    /// A plain directory tree: a device node is never stored nor restored.
    Plain,
    /// An overlay's upper dir: its whiteouts and opaque directories are
    /// stored, and applied onto the merged overlay.
    OverlayUpper,
}

/// Why an archive could not be applied.
pub(crate) fn bad(why: impl Into<String>) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, why.into())
}

/// Whether `e` (or an error it wraps, as `tar` does) is `ENOSPC`/`EDQUOT`.
#[must_use]
pub fn out_of_space(e: &std::io::Error) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(io) = err.downcast_ref::<std::io::Error>()
            && matches!(io.raw_os_error(), Some(libc::ENOSPC | libc::EDQUOT))
        {
            return true;
        }
        cur = err.source();
    }
    false
}

/// A failed capture of sandbox `id` as a backend error: `quota` or
/// `timeout` naming the bound it passed, otherwise the I/O failure.
#[must_use]
pub fn capture_error(id: &str, e: &std::io::Error) -> BackendError {
    match exceeded(e) {
        Some(x @ Exceeded::Bytes { .. }) => SnapshotError::OverBudget {
            what: format!("snapshot of {id}"),
            detail: x.to_string(),
        }
        .into(),
        Some(x @ Exceeded::Time { .. }) => SnapshotError::TimedOut {
            what: format!("snapshot of {id}"),
            detail: x.to_string(),
        }
        .into(),
        None => BackendError::from_io(format!("snapshot of {id}"), e),
    }
}
