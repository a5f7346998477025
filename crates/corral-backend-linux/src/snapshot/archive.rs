//! The archive format of a snapshot: a zstd-compressed tar of the sandbox's
//! writable content, and applying one onto a fresh sandbox root.
//!
//! - **Kept**: directories, regular files (permission bits, setuid/setgid/
//!   sticky included, owners and modification times), symlinks as symlinks.
//!   Names and link targets are bytes, as the kernel keeps them. Files with
//!   holes are stored sparsely ([`sparse`]); the data stored is bounded by
//!   the sandbox's disk limit and the capture by a deadline ([`Budget`]).
//!   Hard links are stored as separate copies. Sockets, fifos and device
//!   nodes are skipped — except, for layered images, the overlay's
//!   *whiteouts* (character devices 0/0, stored as such) and *opaque*
//!   directories (stored with the PAX record
//!   `SCHILY.xattr.trusted.overlay.opaque=y`).
//! - **Applied** onto the new sandbox's root (for layered images the merged
//!   overlay, so the kernel writes its own upper dir): a whiteout removes
//!   its path, an opaque directory replaces what the image has there, every
//!   other entry is unpacked by `tar` (which refuses `..` and any path
//!   through a symlink leaving the root), replacing an entry of another
//!   kind first.

use std::ffi::{CString, OsStr, OsString};
use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use super::budget::Budget;
use super::sparse::{self, ExtentReader};
use crate::contained::RESOLVE;
use corral_backend::walk::{self, Step, Visit};

/// The PAX record marking an opaque overlay directory.
const OPAQUE_PAX: &str = "SCHILY.xattr.trusted.overlay.opaque";
/// The overlay's opaque-directory attribute.
const OPAQUE_XATTR: &str = "trusted.overlay.opaque";

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

/// Writes the archive of the tree below `dir` into `out`; top-level names in
/// `skip` are left out; `layered` keeps whiteouts and opaque markers;
/// `budget` bounds the data stored and the time taken.
pub(crate) fn write<W: Write>(
    dir: &OwnedFd,
    skip: &[String],
    layered: bool,
    budget: &Budget,
    out: W,
) -> std::io::Result<W> {
    let mut b = tar::Builder::new(out);
    b.follow_symlinks(false);
    let mut visit = |v: &Visit<'_>| -> std::io::Result<Step> {
        budget.in_time()?;
        if !v.rel.contains(&b'/') && skip.iter().any(|s| s.as_bytes() == v.rel) {
            return Ok(Step::Skip);
        }
        let path = Path::new(v.rel_os());
        match v.file_type() {
            FileType::Directory => {
                if layered && is_opaque(v) {
                    b.append_pax_extensions([(OPAQUE_PAX, &b"y"[..])])?;
                }
                let mut h = header_for(v, tar::EntryType::Directory, 0);
                b.append_data(&mut h, path, std::io::empty())?;
                Ok(Step::Descend)
            }
            FileType::RegularFile => {
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
            FileType::CharacterDevice if layered && v.stat.st_rdev == 0 => {
                let mut h = header_for(v, tar::EntryType::Char, 0);
                h.set_device_major(0)?;
                h.set_device_minor(0)?;
                b.append_data(&mut h, path, std::io::empty())?;
                Ok(Step::Skip)
            }
            _ => Ok(Step::Skip),
        }
    };
    walk::walk(dir.as_fd(), &mut visit)?;
    b.into_inner()
}

/// The normal components of an archive path; `None` for `..` or anything
/// not a plain relative path.
fn components(p: &Path) -> Option<Vec<OsString>> {
    let mut out = Vec::new();
    for c in p.components() {
        match c {
            Component::Normal(n) => out.push(n.to_owned()),
            Component::CurDir => {}
            _ => return None,
        }
    }
    (!out.is_empty()).then_some(out)
}

/// Opens `comps` beneath `root` with `flags`, resolved inside it.
fn open_beneath(root: &OwnedFd, comps: &[OsString], flags: OFlags) -> Result<OwnedFd, Errno> {
    let rel: PathBuf = if comps.is_empty() {
        PathBuf::from(".")
    } else {
        comps.iter().collect()
    };
    corral_backend::contained::openat2_retrying(
        root,
        rel.as_path(),
        flags | OFlags::CLOEXEC,
        Mode::empty(),
        RESOLVE,
    )
}

/// Removes `comps` beneath `root` (a directory with everything in it); a
/// missing entry is not an error.
fn remove_beneath(root: &OwnedFd, comps: &[OsString]) -> std::io::Result<()> {
    let Some((name, parents)) = comps.split_last() else {
        return Ok(());
    };
    let dir = match open_beneath(root, parents, OFlags::PATH | OFlags::DIRECTORY) {
        Ok(d) => d,
        Err(Errno::NOENT | Errno::NOTDIR) => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    let name = CString::new(name.as_bytes()).map_err(std::io::Error::other)?;
    match walk::remove_tree(dir.as_fd(), &name) {
        Ok(()) | Err(Errno::NOENT) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// The type of `comps` beneath `root`, not following a final symlink.
fn kind_at(root: &OwnedFd, comps: &[OsString]) -> Option<FileType> {
    let (name, parents) = comps.split_last()?;
    let dir = open_beneath(root, parents, OFlags::PATH | OFlags::DIRECTORY).ok()?;
    let st = rustix::fs::statat(&dir, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW).ok()?;
    Some(FileType::from_raw_mode(st.st_mode))
}

/// Makes directory `comps` and its parents beneath `root` (mode 0700 until
/// the archive's own mode is applied), resolving every step inside `root`.
fn mkdir_beneath(root: &OwnedFd, comps: &[OsString]) -> std::io::Result<()> {
    for i in 0..comps.len() {
        match open_beneath(root, &comps[..=i], OFlags::PATH | OFlags::DIRECTORY) {
            Ok(_) => {}
            Err(Errno::NOENT) => {
                let parent = open_beneath(root, &comps[..i], OFlags::PATH | OFlags::DIRECTORY)?;
                match rustix::fs::mkdirat(&parent, comps[i].as_os_str(), Mode::RWXU) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Why an archive could not be applied.
pub(crate) fn bad(why: impl Into<String>) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, why.into())
}

/// Applies the archive `r` onto the directory `root` (a fresh sandbox root).
pub(crate) fn apply(r: impl Read, root: &Path) -> std::io::Result<()> {
    let root_fd = rustix::fs::open(
        root,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let mut archive = tar::Archive::new(r);
    archive.set_preserve_permissions(true);
    archive.set_preserve_mtime(true);
    archive.set_preserve_ownerships(true);
    archive.set_unpack_xattrs(false);
    archive.set_overwrite(true);
    let mut directories = Vec::new();
    for entry in archive.entries()? {
        let mut entry = entry?;
        let path = entry.path()?.into_owned();
        let comps = components(&path).ok_or_else(|| bad("an entry's path leaves its root"))?;
        let kind = entry.header().entry_type();
        let existing = kind_at(&root_fd, &comps);
        match kind {
            tar::EntryType::Char => {
                let h = entry.header();
                if h.device_major()? != Some(0) || h.device_minor()? != Some(0) {
                    return Err(bad("it holds a device node, which is never restored"));
                }
                remove_beneath(&root_fd, &comps)?;
                continue;
            }
            tar::EntryType::Directory => {
                let opaque = entry
                    .pax_extensions()?
                    .map(|exts| {
                        exts.flatten()
                            .any(|e| e.key() == Ok(OPAQUE_PAX) && e.value_bytes() == b"y")
                    })
                    .unwrap_or(false);
                if opaque || existing.is_some_and(|k| k != FileType::Directory) {
                    remove_beneath(&root_fd, &comps)?;
                }
                mkdir_beneath(&root_fd, &comps)?;
                directories.push(entry);
                continue;
            }
            tar::EntryType::Regular
            | tar::EntryType::Continuous
            | tar::EntryType::GNUSparse
            | tar::EntryType::Symlink => {
                if existing.is_some() {
                    remove_beneath(&root_fd, &comps)?;
                }
            }
            other => {
                return Err(bad(format!(
                    "it holds an entry of type {other:?}, which is never restored"
                )));
            }
        }
        if !entry.unpack_in(root)? {
            return Err(bad("it holds a path that leaves its root"));
        }
    }
    // Directories' modes and times last, deepest first.
    directories.sort_by(|a, b| b.path_bytes().cmp(&a.path_bytes()));
    for mut dir in directories {
        if !dir.unpack_in(root)? {
            return Err(bad("it holds a path that leaves its root"));
        }
    }
    Ok(())
}
