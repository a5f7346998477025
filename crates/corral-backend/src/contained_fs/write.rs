//! `write`: a new file staged beside its target and renamed over it, so a
//! reader sees the old bytes or the new, never a part.

use std::io::Write;

use rustix::fd::OwnedFd;
use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

use super::{ContainedFs, FileOp, FsCause, FsError, SplitPath, file_type_of};
use crate::files::FileType;
use crate::statefile::random_hex;

/// The mode a written file gets when none is asked for.
pub(crate) const DEFAULT_FILE_MODE: u32 = 0o644;

impl ContainedFs {
    /// Creates or replaces the file `p` with `bytes`, with exactly `mode`
    /// (default `0o644`; the umask does not apply). A final symlink is
    /// replaced itself, never followed; the parent must exist.
    ///
    /// # Errors
    ///
    /// `invalid_input` for a mode beyond `0o7777`, for `/` and for a
    /// directory; any refusal of the parent; the failed system call.
    pub fn write(&self, p: &SplitPath, bytes: &[u8], mode: Option<u32>) -> Result<(), FsError> {
        let op = FileOp::Write;
        let fail = |cause| FsError::new(op, p.shown(), cause);
        let mode = mode.unwrap_or(DEFAULT_FILE_MODE);
        if mode > 0o7777 {
            return Err(fail(FsCause::BadMode { mode }));
        }
        let (dir, name) = self.parent(op, p)?;
        match rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) if file_type_of(st.st_mode) == FileType::Directory => {
                return Err(fail(FsCause::IsADirectory));
            }
            Ok(_) | Err(Errno::NOENT) => {}
            Err(e) => return Err(fail(FsCause::Os(e))),
        }
        let tmp = format!(
            ".corral-write-{}",
            random_hex().map_err(|e| fail(FsCause::Os(io_errno(&e))))?
        );
        let result = self
            .write_new(&dir, &tmp, bytes, mode)
            .and_then(|()| rustix::fs::renameat(&dir, tmp.as_str(), &dir, name));
        if let Err(e) = result {
            let _ = rustix::fs::unlinkat(&dir, tmp.as_str(), AtFlags::empty());
            return Err(fail(FsCause::Os(e)));
        }
        Ok(())
    }

    /// Creates `tmp` in `dir` (it must not exist), fills it, gives it to its
    /// owner and sets `mode` exactly.
    fn write_new(&self, dir: &OwnedFd, tmp: &str, bytes: &[u8], mode: u32) -> Result<(), Errno> {
        let fd = rustix::fs::openat(
            dir,
            tmp,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )?;
        let mut file = std::fs::File::from(fd);
        file.write_all(bytes).map_err(|e| io_errno(&e))?;
        // Before the mode: a change of owner clears set-id bits.
        self.give(dir, tmp)?;
        // `fchmod` is not subject to the umask: the mode is exactly the one asked for.
        rustix::fs::fchmod(&file, Mode::from_raw_mode(mode))
    }
}

/// The `errno` of an I/O error (`EIO` when it has none).
pub(crate) fn io_errno(e: &std::io::Error) -> Errno {
    e.raw_os_error().map_or(Errno::IO, Errno::from_raw_os_error)
}
