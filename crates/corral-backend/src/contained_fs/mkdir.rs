//! `mkdir`: one directory, or (with parents) every missing one on the way.

use rustix::fs::Mode;
use rustix::io::Errno;

use super::{ContainedFs, FileOp, FsCause, FsError, SplitPath};

/// The mode directories are created with (before the umask).
pub(crate) const DIR_MODE: u32 = 0o755;

impl ContainedFs {
    /// Creates directory `p`; with `parents`, its missing ancestors too,
    /// and no error when it exists. A symlink met on the way is followed
    /// only as the root's [`Resolution`](crate::contained::Resolution) allows.
    ///
    /// # Errors
    ///
    /// `conflict` when it exists (without `parents`) or when something that
    /// is not a directory is in the way; `not_found` for a missing parent
    /// (without `parents`); any refusal of the path.
    pub fn mkdir(&self, p: &SplitPath, parents: bool) -> Result<(), FsError> {
        if !parents {
            if p.is_root() {
                return Err(FsError::new(FileOp::Mkdir, "/", FsCause::Os(Errno::EXIST)));
            }
            return self.mkdir_one(p);
        }
        let comps = p.comps();
        for n in 1..=comps.len() {
            let prefix = SplitPath::from_comps(comps[..n].to_vec());
            match self.directory(FileOp::Mkdir, &prefix) {
                Ok(_) => continue,
                Err(e) if e.cause == FsCause::NotADirectory => {
                    return Err(FsError::new(
                        FileOp::Mkdir,
                        prefix.shown(),
                        FsCause::ExistsNotDirectory,
                    ));
                }
                Err(e) if e.code() == crate::ErrorCode::NotFound => {}
                Err(e) => return Err(e),
            }
            match self.mkdir_one(&prefix) {
                Ok(()) => {}
                // Made meanwhile, or a dangling symlink: decided by resolving again.
                Err(e) if e.cause == FsCause::Os(Errno::EXIST) => {
                    if self.directory(FileOp::Mkdir, &prefix).is_err() {
                        return Err(FsError::new(
                            FileOp::Mkdir,
                            prefix.shown(),
                            FsCause::ExistsNotDirectory,
                        ));
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Creates the one directory `p` in its resolved parent.
    fn mkdir_one(&self, p: &SplitPath) -> Result<(), FsError> {
        let (dir, name) = self.parent(FileOp::Mkdir, p)?;
        let fail = |e| FsError::new(FileOp::Mkdir, p.shown(), FsCause::Os(e));
        rustix::fs::mkdirat(&dir, name, Mode::from_raw_mode(DIR_MODE)).map_err(fail)?;
        self.give(&dir, name).map_err(fail)
    }
}
