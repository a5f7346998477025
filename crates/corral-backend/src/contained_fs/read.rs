//! `read` and `read_range`: through the contained-read root, so the inode
//! read is the inode that passed the containment and type checks.

use super::{ContainedFs, FileOp, FsCause, FsError, SplitPath};
use crate::contained::{ContainedReadError, ContainmentReason};

/// The largest file `read` returns whole, and the most `read_range` returns
/// at once: `quota` beyond, never a silently short answer.
pub const MAX_READ: u64 = 1 << 30;

impl ContainedFs {
    fn read_refused(&self, op: FileOp, p: &SplitPath, e: ContainedReadError) -> FsError {
        match e.reason {
            ContainmentReason::TooLarge { .. } => {
                FsError::new(op, p.shown(), FsCause::TooLarge { limit: MAX_READ })
            }
            reason => self.refused(op, p, reason),
        }
    }

    /// The whole regular file `p`.
    ///
    /// # Errors
    ///
    /// Any refusal of the path; `invalid_input` for anything but a regular
    /// file (never opened); `quota` past [`MAX_READ`].
    pub fn read(&self, p: &SplitPath) -> Result<Vec<u8>, FsError> {
        self.root()
            .read(&p.relative(), MAX_READ)
            .map_err(|e| self.read_refused(FileOp::Read, p, e))
    }

    /// Up to `len` bytes of the regular file `p` from `offset`: all of them
    /// unless the file ends first.
    ///
    /// # Errors
    ///
    /// As [`ContainedFs::read`]; `quota` when more than [`MAX_READ`] bytes
    /// were asked for and the file holds them.
    pub fn read_range(&self, p: &SplitPath, offset: u64, len: u64) -> Result<Vec<u8>, FsError> {
        let op = FileOp::ReadRange;
        let file = self
            .root()
            .open_file(&p.relative())
            .map_err(|e| self.read_refused(op, p, e))?;
        let bytes = file
            .read_at(offset, len.min(MAX_READ.saturating_add(1)))
            .map_err(|e| self.read_refused(op, p, e))?;
        if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > MAX_READ {
            return Err(FsError::new(
                op,
                p.shown(),
                FsCause::TooLarge { limit: MAX_READ },
            ));
        }
        Ok(bytes)
    }
}
