//! `stat`: what a path names, a final symlink described, never followed.

use super::{ContainedFs, FileOp, FsError, SplitPath, file_type_of, mtime_ms, size_of};
use crate::files::FileStat;

impl ContainedFs {
    /// Metadata of `p` itself (a final symlink is a symlink); every
    /// component before it is resolved beneath the root.
    ///
    /// # Errors
    ///
    /// Any refusal of the path.
    pub fn stat(&self, p: &SplitPath) -> Result<FileStat, FsError> {
        let (_, st) = self.resolve(FileOp::Stat, p, false)?;
        Ok(FileStat {
            path: p.shown().to_owned(),
            file_type: file_type_of(st.st_mode),
            size: size_of(&st),
            mode: st.st_mode & 0o7777,
            modified_at_ms: mtime_ms(&st),
        })
    }
}
