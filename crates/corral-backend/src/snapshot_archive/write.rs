//! The one snapshot tar writer: a directory tree walked through descriptors
//! (never following a symlink) into a tar stream.

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use rustix::fd::BorrowedFd;
use rustix::fs::FileType;

use super::budget::Budget;
use super::sparse::{self, ExtentReader};
use super::{Layout, OPAQUE_PAX, OPAQUE_XATTR};
use crate::walk::{self, Step, Visit};

/// What one capture writes: how the tree is read, what is left out, and
/// its bounds.
#[derive(Debug, Clone, Copy)]
pub struct WriteOptions<'a> {
    /// A plain tree, or an overlay's upper dir (whose whiteouts and opaque
    /// directories are kept).
    pub layout: Layout,
    /// Top-level names left out (directories the sandbox does not own).
    pub skip_top: &'a [String],
    /// The data bytes and the time the capture may take.
    pub budget: &'a Budget,
}

fn header_for(v: &Visit<'_>, kind: tar::EntryType, size: u64) -> tar::Header {
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(kind);
    h.set_size(size);
    h.set_mode(v.stat.st_mode & 0o7777);
    h.set_mtime(u64::try_from(v.stat.st_mtime).unwrap_or(0));
    h.set_uid(u64::from(v.stat.st_uid));
    h.set_gid(u64::from(v.stat.st_gid));
    h
}

fn is_opaque(v: &Visit<'_>) -> bool {
    let Ok(Some(dir)) = walk::open_dir_at(v.dir, v.name) else {
        return false;
    };
    let mut buf = [0u8; 4];
    matches!(rustix::fs::fgetxattr(&dir, OPAQUE_XATTR, &mut buf), Ok(1) if buf[0] == b'y')
}

/// Appends one walked entry.
fn append<W: Write>(
    b: &mut tar::Builder<W>,
    v: &Visit<'_>,
    options: &WriteOptions<'_>,
) -> std::io::Result<Step> {
    let budget = options.budget;
    budget.in_time()?;
    if !v.rel.contains(&b'/') && options.skip_top.iter().any(|s| s.as_bytes() == v.rel) {
        return Ok(Step::Skip);
    }
    let overlay = options.layout == Layout::OverlayUpper;
    let path = Path::new(v.rel_os());
    match v.file_type() {
        FileType::Directory => {
            if overlay && is_opaque(v) {
                b.append_pax_extensions([(OPAQUE_PAX, &b"y"[..])])?;
            }
            let mut h = header_for(v, tar::EntryType::Directory, 0);
            b.append_data(&mut h, path, std::io::empty())?;
            Ok(Step::Descend)
        }
        FileType::RegularFile => {
            // A hard link is stored as one more copy: nothing links across
            // entries, so nothing can link out of the root on restore.
            let Some(file) = v.open_file()? else {
                return Ok(Step::Skip);
            };
            let meta = file.metadata()?;
            let size = meta.len();
            let extents = sparse::extents(&file, size, meta.blocks().saturating_mul(512))?;
            budget.charge(extents.iter().map(|e| e.1).sum())?;
            let mut h = header_for(v, tar::EntryType::Regular, size);
            let blocks = if sparse::is_dense(&extents, size) {
                Vec::new()
            } else {
                sparse::make_sparse(&mut h, size, &extents)?
            };
            // Exactly the extents' bytes whatever the file does meanwhile.
            let data = ExtentReader::new(file, extents, budget);
            b.append_data(&mut h, path, blocks.as_slice().chain(data))?;
            Ok(Step::Skip)
        }
        FileType::Symlink => {
            let target = rustix::fs::readlinkat(v.dir, v.name.as_c_str(), Vec::new())?;
            let target = OsStr::from_bytes(target.as_bytes());
            let mut h = header_for(v, tar::EntryType::Symlink, 0);
            b.append_link(&mut h, path, target)?;
            Ok(Step::Skip)
        }
        FileType::Fifo => {
            let mut h = header_for(v, tar::EntryType::Fifo, 0);
            b.append_data(&mut h, path, std::io::empty())?;
            Ok(Step::Skip)
        }
        // An overlay whiteout: the character device 0/0.
        FileType::CharacterDevice if overlay && v.stat.st_rdev == 0 => {
            let mut h = header_for(v, tar::EntryType::Char, 0);
            h.set_device_major(0)?;
            h.set_device_minor(0)?;
            b.append_data(&mut h, path, std::io::empty())?;
            Ok(Step::Skip)
        }
        // A socket means nothing without its listener; a device node would
        // let a snapshot plant one.
        FileType::Socket
        | FileType::CharacterDevice
        | FileType::BlockDevice
        | FileType::Unknown => Ok(Step::Skip),
    }
}

/// Writes the archive of the tree below `dir` (open for reading) into `out`.
///
/// # Errors
///
/// The failed read or write; a bound of `options.budget` passed (see
/// [`super::exceeded`]).
pub fn write<W: Write>(
    dir: BorrowedFd<'_>,
    options: &WriteOptions<'_>,
    out: W,
) -> std::io::Result<W> {
    let mut b = tar::Builder::new(out);
    b.follow_symlinks(false);
    let mut visit = |v: &Visit<'_>| append(&mut b, v, options);
    walk::walk(dir, &mut visit)?;
    b.into_inner()
}

/// Writes the zstd-compressed archive of `dir` into `file` and syncs it;
/// returns its digest (`sha256:<hex>` of the compressed bytes) and size.
///
/// # Errors
///
/// As [`write()`].
pub fn write_compressed(
    dir: BorrowedFd<'_>,
    options: &WriteOptions<'_>,
    file: std::fs::File,
) -> std::io::Result<(String, u64)> {
    let sink = crate::snapshot_store::Hashing::new(std::io::BufWriter::new(file));
    let encoder = zstd::Encoder::new(sink, super::ZSTD_LEVEL)?;
    let mut sink = write(dir, options, encoder)?.finish()?;
    sink.flush()?;
    let (inner, digest, count) = sink.finish();
    let file = inner.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()?;
    Ok((digest, count))
}
