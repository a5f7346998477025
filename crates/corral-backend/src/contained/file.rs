//! A contained regular file, open for reading: the very inode that passed
//! the containment and type checks.

use super::{ContainedMetadata, ContainedReadError, ContainmentReason};
use rustix::fd::{AsFd, BorrowedFd};
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;

/// A contained regular file, open for reading.
///
/// It is the very inode that passed the containment and type checks. Reading
/// through [`Read`] streams from the current position without any limit; use
/// [`ContainedFile::read_to_end_limited`] for a bounded read.
#[derive(Debug)]
pub struct ContainedFile {
    pub(super) file: File,
    pub(super) metadata: ContainedMetadata,
    pub(super) path: String,
}

impl ContainedFile {
    /// The file's metadata, taken from the readable descriptor when opened.
    #[must_use]
    pub const fn metadata(&self) -> &ContainedMetadata {
        &self.metadata
    }

    /// The sandbox path it was opened by.
    #[must_use]
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Reads from the current position to the end, at most `max_bytes` bytes.
    ///
    /// # Errors
    ///
    /// [`ContainmentReason::TooLarge`] if the reported size or the bytes
    /// actually present exceed `max_bytes` (at most `max_bytes + 1` bytes are
    /// read to find out); [`ContainmentReason::Io`] on a read error.
    pub fn read_to_end_limited(&mut self, max_bytes: u64) -> Result<Vec<u8>, ContainedReadError> {
        let too_large = |actual: u64| {
            ContainedReadError::new(
                ContainmentReason::TooLarge {
                    limit: max_bytes,
                    actual,
                },
                self.path.clone(),
            )
        };
        if self.metadata.size > max_bytes {
            return Err(too_large(self.metadata.size));
        }
        let probe = max_bytes.saturating_add(1);
        // Trust the reported size only as an allocation hint, capped: one
        // allocation for any file up to 64 MiB (no regrowth and copy), and
        // never more than the caller allowed.
        const HINT_CEILING: u64 = 64 << 20;
        let hint = self
            .metadata
            .size
            .saturating_add(1)
            .min(probe)
            .min(HINT_CEILING);
        let mut buf = Vec::with_capacity(usize::try_from(hint).unwrap_or(0));
        (&self.file)
            .take(probe)
            .read_to_end(&mut buf)
            .map_err(|e| ContainedReadError::new(ContainmentReason::from_io(&e), &self.path))?;
        let seen = u64::try_from(buf.len()).unwrap_or(u64::MAX);
        if seen > max_bytes {
            let now = rustix::fs::fstat(&self.file)
                .map_or(0, |st| u64::try_from(st.st_size).unwrap_or(0));
            return Err(too_large(seen.max(now)));
        }
        Ok(buf)
    }

    /// Reads up to `len` bytes at `offset` (positional; the stream position
    /// is unchanged). Returns fewer bytes, possibly none, at end of file.
    /// Memory grows with the bytes actually read, not with `len`.
    ///
    /// # Errors
    ///
    /// [`ContainmentReason::Io`] on a read error.
    pub fn read_at(&self, offset: u64, len: u64) -> Result<Vec<u8>, ContainedReadError> {
        const CHUNK: u64 = 64 * 1024;
        // No file extends past `i64::MAX` (the kernel's `loff_t`); clamping
        // turns an absurd range into "past end of file" instead of `EINVAL`.
        const MAX_OFFSET: u64 = i64::MAX as u64;
        let end = offset.saturating_add(len).min(MAX_OFFSET);
        let mut out = Vec::new();
        let mut pos = offset;
        while pos < end {
            let want = usize::try_from((end - pos).min(CHUNK)).unwrap_or(0);
            let filled = out.len();
            out.resize(filled + want, 0);
            match self.file.read_at(&mut out[filled..], pos) {
                Ok(0) => {
                    out.truncate(filled);
                    break;
                }
                Ok(n) => {
                    out.truncate(filled + n);
                    pos += u64::try_from(n).unwrap_or(u64::MAX);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => out.truncate(filled),
                Err(e) => {
                    return Err(ContainedReadError::new(
                        ContainmentReason::from_io(&e),
                        &self.path,
                    ));
                }
            }
        }
        Ok(out)
    }

    /// Gives up the wrapper and returns the open file.
    #[must_use]
    pub fn into_file(self) -> File {
        self.file
    }
}

impl Read for ContainedFile {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.file.read(buf)
    }
}

impl AsFd for ContainedFile {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }
}
