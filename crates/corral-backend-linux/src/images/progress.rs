//! [`ImportProgress`]: how an import goes, told to whoever shows it (the
//! command line's progress bar on a terminal), so that a large archive is
//! not a silent wait.

use std::io::{self, Read};

/// Told of an import as it goes. Every method has an empty default: a
/// watcher hears only what it asks for.
pub trait ImportProgress {
    /// The archive is being read: `total` bytes.
    fn reading(&self, total: u64) {
        let _ = total;
    }

    /// `bytes` more of the archive were read.
    fn read(&self, bytes: u64) {
        let _ = bytes;
    }

    /// Layer `index` (from 1) of `count`, uncompressed `diff_id`, is being
    /// verified and stored.
    fn layer(&self, index: usize, count: usize, diff_id: &str) {
        let _ = (index, count, diff_id);
    }
}

/// The watcher of an import nobody watches.
#[derive(Debug, Clone, Copy, Default)]
pub struct Unwatched;

impl ImportProgress for Unwatched {}

/// A reader that tells `progress` how much of it was read.
pub(crate) struct Counted<'a, R> {
    pub(crate) inner: R,
    pub(crate) progress: &'a dyn ImportProgress,
}

impl<R: Read> Read for Counted<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.progress.read(n as u64);
        Ok(n)
    }
}
