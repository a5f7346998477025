//! `remove`: a file, a symlink (the link itself), or a directory tree,
//! unlinked relative to the resolved parent, never following a symlink.

use rustix::fd::AsFd;
use rustix::fs::AtFlags;

use super::{ContainedFs, FileOp, FsCause, FsError, SplitPath, file_type_of};
use crate::files::FileType;
use crate::walk;

impl ContainedFs {
    /// Removes what `p` names; a directory only when empty, unless
    /// `recursive`.
    ///
    /// # Errors
    ///
    /// `invalid_input` for `/`, `not_found` when nothing is there,
    /// `conflict` for a directory that is not empty.
    pub fn remove(&self, p: &SplitPath, recursive: bool) -> Result<(), FsError> {
        let op = FileOp::Remove;
        let (dir, name) = self.parent(op, p)?;
        let fail = |e| FsError::new(op, p.shown(), FsCause::Os(e));
        let st = rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW).map_err(fail)?;
        if file_type_of(st.st_mode) != FileType::Directory {
            return rustix::fs::unlinkat(&dir, name, AtFlags::empty()).map_err(fail);
        }
        if !recursive {
            return rustix::fs::unlinkat(&dir, name, AtFlags::REMOVEDIR).map_err(fail);
        }
        let name = std::ffi::CString::new(name).map_err(|_| {
            FsError::new(
                op,
                p.shown(),
                FsCause::Refused(crate::contained::ContainmentReason::InvalidPath),
            )
        })?;
        walk::remove_tree(dir.as_fd(), &name).map_err(fail)
    }
}
