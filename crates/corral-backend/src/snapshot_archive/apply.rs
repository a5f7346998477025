//! The one snapshot tar reader: an archive applied onto a sandbox root,
//! every path of it resolved beneath the root the backend's way.

use std::collections::HashSet;
use std::ffi::{CString, OsString};
use std::io::Read;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path};

use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use super::{Layout, OPAQUE_PAX, bad};
use crate::contained::{ContainedRoot, Resolution};
use crate::error::BackendError;
use crate::snapshot_store::corrupt;
use crate::walk;

/// Whose owners restored entries get.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Owners {
    /// The owners the archive recorded (the sandbox's own ids, mapped).
    FromArchive,
    /// The calling process's (the recorded owners are ignored).
    Caller,
}

/// How an archive is applied.
#[derive(Debug, Clone, Copy)]
pub struct ApplyOptions {
    /// What tree the archive holds: whiteouts are refused in a plain one.
    pub layout: Layout,
    /// How the root resolves a symlink the archive (or the image) holds.
    pub resolution: Resolution,
    /// Whose owners restored entries get.
    pub owners: Owners,
}

/// The normal components of an archive path; `None` for `..`, an absolute
/// path or an empty one.
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

fn joined(comps: &[OsString]) -> Vec<u8> {
    comps
        .iter()
        .map(|c| c.as_bytes())
        .collect::<Vec<_>>()
        .join(&b'/')
}

fn cname(name: &OsString) -> std::io::Result<CString> {
    CString::new(name.clone().into_vec()).map_err(|_| bad("an entry's name holds a NUL byte"))
}

/// The sandbox root an archive is applied onto.
struct Target {
    root: ContainedRoot,
}

impl Target {
    /// The directory `comps` (an `O_PATH` descriptor), resolved beneath the root.
    fn dir(&self, comps: &[OsString]) -> std::io::Result<OwnedFd> {
        let path = if comps.is_empty() {
            b".".to_vec()
        } else {
            joined(comps)
        };
        let (fd, st) = self
            .root
            .resolve_stat_bytes(&path, true)
            .map_err(|r| std::io::Error::from(crate::contained_fs::reason_errno(r)))?;
        if FileType::from_raw_mode(st.st_mode) != FileType::Directory {
            return Err(Errno::NOTDIR.into());
        }
        Ok(fd)
    }

    /// The type of `comps`, not following a final symlink; `None` when absent.
    fn kind_at(&self, comps: &[OsString]) -> Option<FileType> {
        let (name, parents) = comps.split_last()?;
        let dir = self.dir(parents).ok()?;
        let st = rustix::fs::statat(&dir, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW).ok()?;
        Some(FileType::from_raw_mode(st.st_mode))
    }

    /// Removes `comps` (a directory with everything in it); absent is fine.
    fn remove(&self, comps: &[OsString]) -> std::io::Result<()> {
        let Some((name, parents)) = comps.split_last() else {
            return Ok(());
        };
        let dir = match self.dir(parents) {
            Ok(d) => d,
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR)) => {
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        match walk::remove_tree(dir.as_fd(), &cname(name)?) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Makes directory `comps` and its parents (mode 0700 until the
    /// archive's own mode is applied), resolving every step beneath the root.
    fn mkdir_all(&self, comps: &[OsString]) -> std::io::Result<()> {
        for i in 0..comps.len() {
            match self.dir(&comps[..=i]) {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
                    let parent = self.dir(&comps[..i])?;
                    match rustix::fs::mkdirat(&parent, comps[i].as_os_str(), Mode::RWXU) {
                        Ok(()) | Err(Errno::EXIST) => {}
                        Err(e) => return Err(e.into()),
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Makes the fifo `entry` describes at `comps`, with its parents, mode,
    /// modification time and (with [`Owners::FromArchive`]) owners.
    fn make_fifo<R: Read>(
        &self,
        comps: &[OsString],
        entry: &tar::Entry<'_, R>,
        owners: Owners,
    ) -> std::io::Result<()> {
        let Some((name, parents)) = comps.split_last() else {
            return Err(bad("a fifo has an empty path"));
        };
        let h = entry.header();
        let mode = h.mode()? & 0o7777;
        let when = rustix::fs::Timespec {
            tv_sec: i64::try_from(h.mtime()?).unwrap_or(i64::MAX),
            tv_nsec: 0,
        };
        self.mkdir_all(parents)?;
        let dir = self.dir(parents)?;
        let name = name.as_os_str();
        rustix::fs::mknodat(&dir, name, FileType::Fifo, Mode::from_raw_mode(0o600), 0)?;
        if owners == Owners::FromArchive {
            let (uid, gid) = (h.uid()?, h.gid()?);
            let id = |v: u64| u32::try_from(v).map_err(|_| bad("a fifo's owner is out of range"));
            rustix::fs::chownat(
                &dir,
                name,
                Some(rustix::fs::Uid::from_raw(id(uid)?)),
                Some(rustix::fs::Gid::from_raw(id(gid)?)),
                AtFlags::SYMLINK_NOFOLLOW,
            )?;
        }
        // After the owner: a change of owner may clear mode bits.
        rustix::fs::chmodat(&dir, name, Mode::from_raw_mode(mode), AtFlags::empty())?;
        let times = rustix::fs::Timestamps {
            last_access: when,
            last_modification: when,
        };
        rustix::fs::utimensat(&dir, name, &times, AtFlags::SYMLINK_NOFOLLOW)?;
        Ok(())
    }
}

fn is_opaque<R: Read>(entry: &mut tar::Entry<'_, R>) -> std::io::Result<bool> {
    Ok(entry
        .pax_extensions()?
        .map(|exts| {
            exts.flatten()
                .any(|e| e.key() == Ok(OPAQUE_PAX) && e.value_bytes() == b"y")
        })
        .unwrap_or(false))
}

/// Applies the tar archive `r` onto the directory `root` (a fresh sandbox
/// root, or for an overlay its merged view).
///
/// # Errors
///
/// `InvalidData` naming what the archive holds that is never restored (see
/// the module), or the failed write (`ENOSPC` included: see
/// [`super::out_of_space`]). What was applied before stays; the caller
/// discards the root.
pub fn apply(r: impl Read, root: &Path, options: ApplyOptions) -> std::io::Result<()> {
    let root_fd = rustix::fs::open(
        root,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let target = Target {
        root: ContainedRoot::from_dir_fd(root_fd).with_resolution(options.resolution),
    };
    let mut archive = tar::Archive::new(r);
    archive.set_preserve_permissions(true);
    archive.set_preserve_mtime(true);
    archive.set_preserve_ownerships(options.owners == Owners::FromArchive);
    archive.set_unpack_xattrs(false);
    archive.set_overwrite(true);
    let mut seen: HashSet<Vec<u8>> = HashSet::new();
    let mut directories = Vec::new();
    for entry in archive.entries()? {
        let mut entry = entry?;
        let path = entry.path()?.into_owned();
        let comps = components(&path).ok_or_else(|| bad("an entry's path leaves its root"))?;
        if !seen.insert(joined(&comps)) {
            return Err(bad("it holds one path twice"));
        }
        let kind = entry.header().entry_type();
        let existing = target.kind_at(&comps);
        match kind {
            tar::EntryType::Char if options.layout == Layout::OverlayUpper => {
                let h = entry.header();
                if h.device_major()? != Some(0) || h.device_minor()? != Some(0) {
                    return Err(bad("it holds a device node, which is never restored"));
                }
                // A whiteout: what the image has there is removed.
                target.remove(&comps)?;
                continue;
            }
            tar::EntryType::Directory => {
                let opaque = options.layout == Layout::OverlayUpper && is_opaque(&mut entry)?;
                if opaque || existing.is_some_and(|k| k != FileType::Directory) {
                    target.remove(&comps)?;
                }
                target.mkdir_all(&comps)?;
                directories.push(entry);
                continue;
            }
            tar::EntryType::Fifo => {
                if existing.is_some() {
                    target.remove(&comps)?;
                }
                // `tar` would unpack a fifo as a regular file: it is made here.
                target.make_fifo(&comps, &entry, options.owners)?;
                continue;
            }
            tar::EntryType::Regular
            | tar::EntryType::Continuous
            | tar::EntryType::GNUSparse
            | tar::EntryType::Symlink => {
                if existing.is_some() {
                    target.remove(&comps)?;
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
    // Directories' modes and times last, deepest first, so that a read-only
    // directory does not stop its own content from being unpacked.
    directories.sort_by(|a, b| b.path_bytes().cmp(&a.path_bytes()));
    for mut dir in directories {
        if !dir.unpack_in(root)? {
            return Err(bad("it holds a path that leaves its root"));
        }
    }
    Ok(())
}

/// Applies the zstd-compressed archive `file` of snapshot `snap_id` onto
/// `root`, as [`apply`].
///
/// # Errors
///
/// `quota` when it does not fit the sandbox's disk; `provider` (the
/// snapshot is corrupt) for anything else. The message shows host paths
/// under `root` as sandbox paths: errors never reveal the host layout.
pub fn apply_compressed(
    snap_id: &str,
    file: std::fs::File,
    root: &Path,
    options: ApplyOptions,
) -> crate::error::Result<()> {
    let applied = zstd::Decoder::new(file).and_then(|d| apply(d, root, options));
    applied.map_err(|e| {
        let text = sandbox_view(&e, root);
        if super::out_of_space(&e) {
            BackendError::from(crate::error::SnapshotError::OverBudget {
                what: format!("restoring snapshot {snap_id}"),
                detail: text,
            })
        } else {
            corrupt(snap_id, format!("it cannot be unpacked: {text}"))
        }
    })
}

/// The text of an unpacking error (with its cause) where host paths under
/// `root` are shown as sandbox paths.
fn sandbox_view(e: &std::io::Error, root: &Path) -> String {
    let mut text = e.to_string();
    if let Some(cause) = std::error::Error::source(e) {
        text = format!("{text}: {cause}");
    }
    let mut roots = vec![root.to_string_lossy().into_owned()];
    if let Ok(canonical) = root.canonicalize() {
        roots.push(canonical.to_string_lossy().into_owned());
    }
    for r in roots {
        text = text.replace(&format!("{r}/"), "/").replace(&r, "/");
    }
    text
}
