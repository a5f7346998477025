//! Safe tar unpacking into a directory that nothing outside of it can be
//! written through.
//!
//! Every entry is placed relative to a directory file descriptor of the
//! destination: parents are resolved with `openat2(RESOLVE_IN_ROOT)`, so a
//! symlink in the archive (absolute or full of `..`) resolves *inside* the
//! destination, as it would inside the sandbox; final components are created
//! with `O_EXCL`/`O_NOFOLLOW`, never through a link. A `..` component refuses
//! the archive; a leading `/` is dropped (as tar does); device nodes are
//! skipped; a parent that is a dangling symlink refuses the archive.
//!
//! In [`Mode::Layer`], OCI whiteouts become overlayfs ones: `.wh.<name>` a
//! `0:0` character device, `.wh..wh..opq` the `trusted.overlay.opaque=y`
//! xattr on its directory (both need root); ownership and modes are kept.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;

use rustix::fs::{
    AtFlags, FileType, Gid, Mode as FsMode, OFlags, ResolveFlags, Timespec, Timestamps, Uid,
};
use rustix::io::Errno;
use std::os::fd::OwnedFd;

use super::error::ImageError;
use super::tar_head::printable;

/// The overlayfs xattr that makes a lower directory opaque.
pub const OPAQUE_XATTR: &str = "trusted.overlay.opaque";
const WHITEOUT_PREFIX: &[u8] = b".wh.";
const OPAQUE_MARKER: &[u8] = b".wh..wh..opq";

/// How to treat the entries of an archive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// An image layer: whiteouts converted, ownership kept.
    Layer,
    /// An outer archive (OCI layout or `docker save`): files only as data,
    /// owned by the caller, owner-readable.
    Plain,
}

/// What an unpack wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UnpackStats {
    /// Entries written (files, directories, links, whiteouts).
    pub entries: u64,
    /// Bytes of regular-file content written.
    pub bytes: u64,
    /// Device nodes skipped.
    pub skipped_devices: u64,
}

/// Unpacks the tar stream `reader` into the existing directory `dest`. A
/// stream that does not start with a tar header is refused with
/// [`NOT_TAR`](super::tar_head::NOT_TAR), and no message quotes the
/// archive's bytes raw.
pub fn unpack(reader: impl Read, dest: &Path, mode: Mode) -> Result<UnpackStats, ImageError> {
    let root = rustix::fs::open(
        dest,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        FsMode::empty(),
    )
    .map_err(|e| ImageError::io(format!("opening {}", dest.display()), e))?;
    let mut archive = tar::Archive::new(super::tar_head::checked(reader)?);
    let mut stats = UnpackStats::default();
    let tar_error = |e: io::Error| ImageError::archive(format!("reading tar: {}", printable(&e)));
    let entries = archive.entries().map_err(tar_error)?;
    for entry in entries {
        let mut entry = entry.map_err(tar_error)?;
        place(&root, &mut entry, mode, &mut stats)?;
    }
    Ok(stats)
}

/// Opens the regular file `rel` under `root`, resolving every symlink inside `root`.
pub fn open_in_root(root: &Path, rel: &str) -> Result<File, ImageError> {
    let dir = rustix::fs::open(
        root,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        FsMode::empty(),
    )
    .map_err(|e| ImageError::io(format!("opening {}", root.display()), e))?;
    let comps = components(rel.as_bytes(), rel)?;
    let fd = corral_backend::contained::openat2_retrying(
        &dir,
        join(&comps).as_os_str(),
        OFlags::RDONLY | OFlags::CLOEXEC,
        FsMode::empty(),
        resolve_flags(),
    )
    .map_err(|e| match e {
        Errno::NOENT => ImageError::archive(format!("{rel:?} is missing")),
        e => ImageError::io(format!("opening {rel:?}"), e),
    })?;
    let file = File::from(fd);
    let meta = file
        .metadata()
        .map_err(|e| ImageError::io(format!("reading {rel:?}"), e))?;
    if !meta.is_file() {
        return Err(ImageError::archive(format!(
            "{rel:?} is not a regular file"
        )));
    }
    Ok(file)
}

fn resolve_flags() -> ResolveFlags {
    ResolveFlags::IN_ROOT | ResolveFlags::NO_MAGICLINKS | ResolveFlags::NO_XDEV
}

/// Splits an archive path into normal components: empty and `.` dropped
/// (so a leading `/` is too), `..` refused.
fn components<'a>(raw: &'a [u8], shown: &str) -> Result<Vec<&'a OsStr>, ImageError> {
    let mut out = Vec::new();
    for c in raw.split(|b| *b == b'/') {
        match c {
            b"" | b"." => {}
            b".." => {
                return Err(ImageError::UnsafeEntry {
                    path: shown.to_string(),
                    reason: "a .. component",
                });
            }
            c if c.contains(&0) => {
                return Err(ImageError::UnsafeEntry {
                    path: shown.to_string(),
                    reason: "a NUL byte",
                });
            }
            c => out.push(OsStr::from_bytes(c)),
        }
    }
    Ok(out)
}

fn join(comps: &[&OsStr]) -> OsString {
    if comps.is_empty() {
        return OsString::from(".");
    }
    let mut v = Vec::new();
    for (i, c) in comps.iter().enumerate() {
        if i > 0 {
            v.push(b'/');
        }
        v.extend_from_slice(c.as_bytes());
    }
    OsString::from_vec(v)
}

/// Opens (creating as needed) the directory `comps` under `root`.
fn open_dir(root: &OwnedFd, comps: &[&OsStr], shown: &str) -> Result<OwnedFd, ImageError> {
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let resolve = |upto: usize| {
        corral_backend::contained::openat2_retrying(
            root,
            join(&comps[..upto]).as_os_str(),
            flags,
            FsMode::empty(),
            resolve_flags(),
        )
    };
    let mut cur = resolve(0).map_err(|e| ImageError::io("opening the unpack root", e))?;
    for (i, comp) in comps.iter().enumerate() {
        let comp = *comp;
        cur = match resolve(i + 1) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => {
                match rustix::fs::mkdirat(&cur, comp, FsMode::from_raw_mode(0o755)) {
                    Ok(()) => {}
                    Err(Errno::EXIST) => {
                        return Err(ImageError::UnsafeEntry {
                            path: shown.to_string(),
                            reason: "a parent is a dangling symlink",
                        });
                    }
                    Err(e) => {
                        return Err(ImageError::io(format!("creating a parent of {shown:?}"), e));
                    }
                }
                rustix::fs::openat(&cur, comp, flags | OFlags::NOFOLLOW, FsMode::empty())
                    .map_err(|e| ImageError::io(format!("opening a parent of {shown:?}"), e))?
            }
            Err(Errno::NOTDIR) => {
                return Err(ImageError::archive(format!(
                    "entry {shown:?}: a parent is not a directory"
                )));
            }
            Err(Errno::XDEV | Errno::LOOP) => {
                return Err(ImageError::UnsafeEntry {
                    path: shown.to_string(),
                    reason: "a parent resolves through a mount or a symlink loop",
                });
            }
            Err(e) => {
                return Err(ImageError::io(
                    format!("resolving a parent of {shown:?}"),
                    e,
                ));
            }
        };
    }
    Ok(cur)
}

/// What is at `name` in `dir` now, without following links.
fn existing(dir: &OwnedFd, name: &OsStr) -> Option<FileType> {
    rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
        .ok()
        .map(|st| FileType::from_raw_mode(st.st_mode))
}

/// Removes a non-directory at `name` so that a later entry can replace it.
fn clear(dir: &OwnedFd, name: &OsStr, shown: &str) -> Result<(), ImageError> {
    match existing(dir, name) {
        None => Ok(()),
        Some(FileType::Directory) => Err(ImageError::archive(format!(
            "entry {shown:?} would replace a directory"
        ))),
        Some(_) => rustix::fs::unlinkat(dir, name, AtFlags::empty())
            .map_err(|e| ImageError::io(format!("replacing {shown:?}"), e)),
    }
}

fn place<R: Read>(
    root: &OwnedFd,
    entry: &mut tar::Entry<'_, R>,
    mode: Mode,
    stats: &mut UnpackStats,
) -> Result<(), ImageError> {
    let raw = entry.path_bytes().into_owned();
    let shown = String::from_utf8_lossy(&raw).into_owned();
    let comps = components(&raw, &shown)?;
    let kind = entry.header().entry_type();
    let Some((name, parents)) = comps.split_last() else {
        return Ok(()); // the root itself: its mode stays the store's
    };
    let name = *name;
    let parent = open_dir(root, parents, &shown)?;
    let header = entry.header();
    let perm = header.mode().unwrap_or(0o644) & 0o7777;
    let owner = (header.uid().ok(), header.gid().ok());
    let mtime = header.mtime().ok();
    if mode == Mode::Layer && name.as_bytes().starts_with(WHITEOUT_PREFIX) {
        return whiteout(&parent, name, &shown, stats);
    }
    use tar::EntryType as T;
    match kind {
        T::Regular | T::Continuous => {
            clear(&parent, name, &shown)?;
            let fd = rustix::fs::openat(
                &parent,
                name,
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                FsMode::from_raw_mode(0o600),
            )
            .map_err(|e| ImageError::io(format!("creating {shown:?}"), e))?;
            let mut file = File::from(fd);
            let n = io::copy(entry, &mut file)
                .map_err(|e| ImageError::archive(format!("reading entry {shown:?}: {e}")))?;
            stats.bytes += n;
            if mode == Mode::Layer {
                chown(&parent, name, owner, &shown)?;
            }
            let perm = if mode == Mode::Plain {
                (perm & 0o777) | 0o600
            } else {
                perm
            };
            rustix::fs::fchmod(&file, FsMode::from_raw_mode(perm))
                .map_err(|e| ImageError::io(format!("setting the mode of {shown:?}"), e))?;
        }
        T::Directory => {
            match existing(&parent, name) {
                Some(FileType::Directory) => {}
                Some(_) => {
                    clear(&parent, name, &shown)?;
                    mkdir(&parent, name, &shown)?;
                }
                None => mkdir(&parent, name, &shown)?,
            }
            if mode == Mode::Layer {
                chown(&parent, name, owner, &shown)?;
            }
            let perm = if mode == Mode::Plain {
                (perm & 0o777) | 0o700
            } else {
                perm
            };
            rustix::fs::chmodat(&parent, name, FsMode::from_raw_mode(perm), AtFlags::empty())
                .map_err(|e| ImageError::io(format!("setting the mode of {shown:?}"), e))?;
            stats.entries += 1;
            return Ok(());
        }
        T::Symlink => {
            let target = entry
                .link_name_bytes()
                .filter(|t| !t.is_empty() && !t.contains(&0))
                .ok_or_else(|| ImageError::archive(format!("symlink {shown:?} has no target")))?
                .into_owned();
            clear(&parent, name, &shown)?;
            rustix::fs::symlinkat(OsStr::from_bytes(&target), &parent, name)
                .map_err(|e| ImageError::io(format!("creating symlink {shown:?}"), e))?;
            if mode == Mode::Layer {
                chown(&parent, name, owner, &shown)?;
            }
        }
        T::Link => {
            let target = entry
                .link_name_bytes()
                .ok_or_else(|| ImageError::archive(format!("hard link {shown:?} has no target")))?
                .into_owned();
            let target_shown = String::from_utf8_lossy(&target).into_owned();
            let tcomps = components(&target, &target_shown)?;
            let Some((tname, tparents)) = tcomps.split_last() else {
                return Err(ImageError::archive(format!(
                    "hard link {shown:?} to the root"
                )));
            };
            let tparent = open_dir(root, tparents, &target_shown)?;
            clear(&parent, name, &shown)?;
            rustix::fs::linkat(&tparent, *tname, &parent, name, AtFlags::empty()).map_err(|e| {
                ImageError::archive(format!("hard link {shown:?} to {target_shown:?}: {e}"))
            })?;
            stats.entries += 1;
            return Ok(());
        }
        T::Fifo => {
            clear(&parent, name, &shown)?;
            rustix::fs::mknodat(
                &parent,
                name,
                FileType::Fifo,
                FsMode::from_raw_mode(perm & 0o777),
                0,
            )
            .map_err(|e| ImageError::io(format!("creating fifo {shown:?}"), e))?;
        }
        T::Char | T::Block => {
            stats.skipped_devices += 1;
            return Ok(());
        }
        T::GNUSparse => {
            return Err(ImageError::archive(format!(
                "entry {shown:?} is a GNU sparse file, which is not supported"
            )));
        }
        _ => return Ok(()), // metadata-only entry kinds
    }
    if let Some(secs) = mtime {
        let t = Timespec {
            tv_sec: i64::try_from(secs).unwrap_or(0),
            tv_nsec: 0,
        };
        let times = Timestamps {
            last_access: t,
            last_modification: t,
        };
        // Best effort: an unset mtime changes no content.
        let _ = rustix::fs::utimensat(&parent, name, &times, AtFlags::SYMLINK_NOFOLLOW);
    }
    stats.entries += 1;
    Ok(())
}

fn mkdir(parent: &OwnedFd, name: &OsStr, shown: &str) -> Result<(), ImageError> {
    rustix::fs::mkdirat(parent, name, FsMode::from_raw_mode(0o755))
        .map_err(|e| ImageError::io(format!("creating directory {shown:?}"), e))
}

/// Keeps the archive's owner; only root can, so `EPERM` is tolerated.
fn chown(
    parent: &OwnedFd,
    name: &OsStr,
    (uid, gid): (Option<u64>, Option<u64>),
    shown: &str,
) -> Result<(), ImageError> {
    let uid = uid
        .and_then(|u| u32::try_from(u).ok())
        .filter(|u| *u != u32::MAX);
    let gid = gid
        .and_then(|g| u32::try_from(g).ok())
        .filter(|g| *g != u32::MAX);
    match rustix::fs::chownat(
        parent,
        name,
        uid.map(Uid::from_raw),
        gid.map(Gid::from_raw),
        AtFlags::SYMLINK_NOFOLLOW,
    ) {
        Ok(()) | Err(Errno::PERM) => Ok(()),
        Err(e) => Err(ImageError::io(format!("setting the owner of {shown:?}"), e)),
    }
}

fn whiteout(
    parent: &OwnedFd,
    name: &OsStr,
    shown: &str,
    stats: &mut UnpackStats,
) -> Result<(), ImageError> {
    let bytes = name.as_bytes();
    if bytes == OPAQUE_MARKER {
        let dir = rustix::fs::openat(
            parent,
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            FsMode::empty(),
        )
        .map_err(|e| ImageError::io(format!("opening the directory of {shown:?}"), e))?;
        rustix::fs::fsetxattr(&dir, OPAQUE_XATTR, b"y", rustix::fs::XattrFlags::empty()).map_err(
            |e| {
                ImageError::io(
                    format!("marking the directory of {shown:?} opaque (needs root)"),
                    e,
                )
            },
        )?;
        stats.entries += 1;
        return Ok(());
    }
    let target = &bytes[WHITEOUT_PREFIX.len()..];
    if target.starts_with(WHITEOUT_PREFIX) {
        return Ok(()); // other `.wh..wh.` metadata (aufs hard-link dirs): not content
    }
    if target.is_empty() || target == b"." || target == b".." {
        return Err(ImageError::UnsafeEntry {
            path: shown.to_string(),
            reason: "a whiteout of no file",
        });
    }
    let target = OsStr::from_bytes(target);
    clear(parent, target, shown)?;
    rustix::fs::mknodat(
        parent,
        target,
        FileType::CharacterDevice,
        FsMode::empty(),
        0,
    )
    .map_err(|e| ImageError::io(format!("creating whiteout {shown:?} (needs root)"), e))?;
    stats.entries += 1;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_drop_root_and_dots_and_refuse_dotdot() {
        let c = components(b"/a/./b//c", "x").unwrap();
        assert_eq!(c, vec![OsStr::new("a"), OsStr::new("b"), OsStr::new("c")]);
        let e = components(b"a/../../b", "a/../../b").unwrap_err();
        assert_eq!(e.code().as_str(), "invalid_input");
        assert_eq!(join(&[]), OsString::from("."));
    }
}
