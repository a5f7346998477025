//! Regular files in a snapshot archive, stored by their data extents.
//!
//! A file with holes (fewer allocated bytes than its size) is described by
//! `SEEK_DATA`/`SEEK_HOLE` and written as a GNU sparse entry (type `S`):
//! the extents in the header and its extension blocks, only the data bytes
//! stored. `tar` reads such an entry back and restores it with seeks, so a
//! restore is as sparse as the capture. Every other file is one extent.
//!
//! Extents are widened to 512-byte boundaries (the archive's block size,
//! which GNU sparse entries require between extents); filesystems allocate
//! in blocks at least that large, so this stores no more than is allocated.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;

use rustix::fs::SeekFrom;
use rustix::io::Errno;

use super::budget::Budget;

/// The archive's block size.
const BLOCK: u64 = 512;
/// Extents held by the GNU header itself.
const IN_HEADER: usize = 4;
/// Extents held by one GNU extension block.
const IN_EXTENSION: usize = 21;

/// One run of data: `(offset, length)`.
pub(super) type Extent = (u64, u64);

/// The data extents of `file` (`size` bytes long, `allocated` bytes on
/// disk): one extent for a file without holes, otherwise what
/// `SEEK_DATA`/`SEEK_HOLE` report, widened to blocks and merged.
pub(super) fn extents(file: &File, size: u64, allocated: u64) -> std::io::Result<Vec<Extent>> {
    if size == 0 {
        return Ok(Vec::new());
    }
    if allocated >= size {
        return Ok(vec![(0, size)]);
    }
    let mut out: Vec<Extent> = Vec::new();
    let mut at = 0;
    while at < size {
        let start = match rustix::fs::seek(file, SeekFrom::Data(at)) {
            Ok(s) => s,
            Err(Errno::NXIO) => break,
            Err(Errno::INVAL | Errno::OPNOTSUPP) => return Ok(vec![(0, size)]),
            Err(e) => return Err(e.into()),
        };
        if start >= size {
            break;
        }
        let end = match rustix::fs::seek(file, SeekFrom::Hole(start)) {
            Ok(e) => e.min(size),
            Err(Errno::NXIO) => size,
            Err(e) => return Err(e.into()),
        };
        let (lo, hi) = (start / BLOCK * BLOCK, end.div_ceil(BLOCK) * BLOCK);
        let hi = hi.min(size);
        match out.last_mut() {
            Some(last) if last.0 + last.1 >= lo => last.1 = hi.max(last.0 + last.1) - last.0,
            _ => out.push((lo, hi - lo)),
        }
        at = end.max(start + 1);
    }
    Ok(out)
}

/// Whether `extents` describe all of a `size`-byte file.
pub(super) fn is_dense(extents: &[Extent], size: u64) -> bool {
    size == 0 || extents == [(0, size)]
}

/// Writes `v` into a numeric header field: octal when it fits, else GNU's
/// base-256 (high bit set, big-endian).
fn number_into(dst: &mut [u8; 12], v: u64) {
    if v < 8u64.pow(11) {
        let text = format!("{v:011o}\0");
        dst.copy_from_slice(text.as_bytes());
    } else {
        dst.fill(0);
        dst[0] = 0x80;
        dst[4..].copy_from_slice(&v.to_be_bytes());
    }
}

/// Makes `h` (a GNU header) a sparse entry of a `real`-byte file with
/// `extents`; returns the extension blocks that must follow the header,
/// before the data. A file ending in a hole gets a last empty extent at its
/// size, as GNU tar writes it.
pub(super) fn make_sparse(
    h: &mut tar::Header,
    real: u64,
    extents: &[Extent],
) -> std::io::Result<Vec<u8>> {
    let mut all = extents.to_vec();
    if all.last().is_none_or(|&(o, l)| o + l < real) {
        all.push((real, 0));
    }
    let stored: u64 = extents.iter().map(|e| e.1).sum();
    h.set_entry_type(tar::EntryType::GNUSparse);
    h.set_size(stored);
    let gnu = h
        .as_gnu_mut()
        .ok_or_else(|| std::io::Error::other("a sparse entry needs a GNU header"))?;
    number_into(&mut gnu.realsize, real);
    let (head, rest) = all.split_at(all.len().min(IN_HEADER));
    for (slot, &(off, len)) in gnu.sparse.iter_mut().zip(head) {
        number_into(&mut slot.offset, off);
        number_into(&mut slot.numbytes, len);
    }
    gnu.isextended[0] = u8::from(!rest.is_empty());
    let mut blocks = Vec::new();
    let chunks: Vec<&[Extent]> = rest.chunks(IN_EXTENSION).collect();
    for (i, chunk) in chunks.iter().enumerate() {
        let mut ext = tar::GnuExtSparseHeader::new();
        for (slot, &(off, len)) in ext.sparse.iter_mut().zip(chunk.iter()) {
            number_into(&mut slot.offset, off);
            number_into(&mut slot.numbytes, len);
        }
        ext.isextended[0] = u8::from(i + 1 < chunks.len());
        blocks.extend_from_slice(ext.as_bytes());
    }
    Ok(blocks)
}

/// Reads the extents of a file in order, exactly their length each (zeros
/// for what the file no longer has), charging `budget`'s deadline.
pub(super) struct ExtentReader<'a> {
    file: File,
    extents: Vec<Extent>,
    at: usize,
    done: u64,
    budget: &'a Budget,
}

impl<'a> ExtentReader<'a> {
    /// A reader of `extents` of `file`.
    pub(super) fn new(file: File, extents: Vec<Extent>, budget: &'a Budget) -> Self {
        ExtentReader {
            file,
            extents,
            at: 0,
            done: 0,
            budget,
        }
    }
}

impl Read for ExtentReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.budget.in_time()?;
        while let Some(&(off, len)) = self.extents.get(self.at) {
            if self.done == len {
                self.at += 1;
                self.done = 0;
                continue;
            }
            let want = usize::try_from(len - self.done).unwrap_or(usize::MAX);
            let n = want.min(buf.len());
            let got = self.file.read_at(&mut buf[..n], off + self.done)?;
            if got == 0 {
                buf[..n].fill(0);
                self.done += n as u64;
                return Ok(n);
            }
            self.done += got as u64;
            return Ok(got);
        }
        Ok(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn big_numbers_use_base_256_and_small_ones_octal() {
        let mut f = [0u8; 12];
        number_into(&mut f, 8);
        assert_eq!(&f, b"00000000010\0");
        number_into(&mut f, 1 << 62);
        assert_eq!(f[0], 0x80);
        assert_eq!(u64::from_be_bytes(f[4..].try_into().unwrap()), 1 << 62);
    }

    #[test]
    fn many_extents_spill_into_extension_blocks() {
        let extents: Vec<Extent> = (0..30).map(|i| (i * 4096, 512)).collect();
        let mut h = tar::Header::new_gnu();
        let blocks = make_sparse(&mut h, 1 << 20, &extents).unwrap();
        // 31 extents (one closing the hole at the end): 4 in the header, 27 in two blocks.
        assert_eq!(blocks.len(), 2 * 512);
        assert_eq!(h.entry_size().unwrap(), 30 * 512);
        assert_eq!(h.as_gnu().unwrap().real_size().unwrap(), 1 << 20);
    }
}
