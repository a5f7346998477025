//! `list` (one directory's entries) and `list_tree` (every leaf below a
//! directory), both through descriptors that never follow a symlink.

use rustix::fd::AsFd;
use rustix::fs::AtFlags;
use rustix::io::Errno;

use super::write::io_errno;
use super::{ContainedFs, FileOp, FsCause, FsError, SplitPath, file_type_of, size_of};
use crate::error::Result;
use crate::files::DirEntry;
use crate::tree::TreeListing;
use crate::walk;

impl ContainedFs {
    /// The entries of directory `p`, sorted by name; each is described
    /// itself (a symlink is a symlink). An entry removed meanwhile is left out.
    ///
    /// # Errors
    ///
    /// `invalid_input` when `p` is not a directory; any refusal of the path.
    pub fn list(&self, p: &SplitPath) -> std::result::Result<Vec<DirEntry>, FsError> {
        let op = FileOp::List;
        let fail = |e| FsError::new(op, p.shown(), FsCause::Os(e));
        let dir = self.open_dir(op, p)?;
        let names = walk::read_names(dir.as_fd()).map_err(|e| fail(io_errno(&e)))?;
        let mut out = Vec::with_capacity(names.len());
        for name in names {
            let st = match rustix::fs::statat(&dir, name.as_c_str(), AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => st,
                Err(Errno::NOENT) => continue,
                Err(e) => return Err(fail(e)),
            };
            let name = String::from_utf8_lossy(name.to_bytes()).into_owned();
            out.push(DirEntry {
                path: p.join(&name),
                name,
                file_type: file_type_of(st.st_mode),
                size: size_of(&st),
                mode: st.st_mode & 0o7777,
            });
        }
        Ok(out)
    }

    /// Every leaf under directory `p` (see [`crate::leaves::list_leaves`]),
    /// sorted by path; `complete: false` when it stopped at `max_entries`.
    ///
    /// # Errors
    ///
    /// `invalid_input` when `p` is not a directory; any refusal of the path.
    pub fn list_tree(&self, p: &SplitPath, max_entries: usize) -> Result<TreeListing> {
        let dir = self.open_dir(FileOp::ListTree, p)?;
        crate::leaves::list_leaves(dir.as_fd(), p.shown(), max_entries)
    }
}
