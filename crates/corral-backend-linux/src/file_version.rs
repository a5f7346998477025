//! What a result derived from a file is kept by: the version of the file
//! it was derived from, so the work is done again only when the file
//! changed.

use std::os::unix::fs::MetadataExt;

/// One version of a file: its device and inode, size, and modification
/// and change times to the nanosecond. Replacing the file (a rename over
/// it) gives another inode; writing it in place changes its change time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileVersion {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl FileVersion {
    /// The version `meta` describes.
    pub(crate) fn of(meta: &std::fs::Metadata) -> Self {
        FileVersion {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }

    /// The version of the file at `path` (following symlinks), `None`
    /// when there is none.
    pub(crate) fn at(path: &std::path::Path) -> Option<Self> {
        std::fs::metadata(path).ok().map(|m| Self::of(&m))
    }

    /// The version of `path` itself (a symlink is not followed), `None`
    /// when there is none.
    pub(crate) fn of_link(path: &std::path::Path) -> Option<Self> {
        std::fs::symlink_metadata(path).ok().map(|m| Self::of(&m))
    }
}
