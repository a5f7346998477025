//! Snapshots: a sandbox's `root/` as a zstd-compressed tar archive.
//!
//! - **What is kept**: directories, regular files and fifos with their
//!   permission bits (setuid/setgid/sticky included) and modification
//!   times; symlinks as symlinks (never followed). Owners are recorded but
//!   not restored. Sockets and device nodes are skipped: a socket means
//!   nothing without its listener, and restoring device nodes from an
//!   archive would let a snapshot plant them. Hard links are stored as
//!   separate copies.
//! - **Storage**: `<state>/snapshots/<id>.tar.zst` and its record
//!   `<id>.json` ([`SnapshotInfo`]), written last. The id is
//!   `locsnap-<16 random hex>`; the content is *verified* by its digest
//!   (`sha256:<hex>` of the compressed bytes) rather than *named* by it, so
//!   that a clone — identical content by definition — has its own id and its
//!   own file, and deleting either leaves the other intact.
//! - **Restore** (`create` with `snapshot`) checks the digest before anything
//!   is allocated (a mismatch is `provider` and nothing is created), then
//!   unpacks into the new sandbox's fresh, empty `root/`, refusing any entry
//!   that is not a directory, regular file, symlink or fifo, any `..`, and
//!   any path through a symlink that leaves the root; it never overwrites.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

use corral_backend::snapshot_store::{Hashing, SnapshotStore, corrupt, digest_of};
use corral_backend::{
    BackendError, ErrorCode, Labels, Result, SnapshotInfo, labels_match, now_ms, validate_label,
};
use rustix::fd::AsFd;
use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use crate::beneath::SandboxRoot;
use crate::files::sandbox_root;
use crate::state::{
    SNAPSHOT_PREFIX, State, is_snapshot_id, random_hex, require_meta, state_error, write_atomic,
};
use corral_backend::contained::Resolution;
use corral_backend::contained_fs::{FileOp, Ownership, SandboxPath};
use corral_backend::walk::{self, Step, Visit};

/// The zstd level archives are written with.
const ZSTD_LEVEL: i32 = 3;

fn blob_path(state: &State, snap_id: &str) -> PathBuf {
    state.snapshots().join(format!("{snap_id}.tar.zst"))
}

fn record_path(state: &State, snap_id: &str) -> PathBuf {
    state.snapshots().join(format!("{snap_id}.json"))
}

/// The local backend's stored snapshots.
const STORE: SnapshotStore = SnapshotStore {
    prefix: SNAPSHOT_PREFIX,
    state_error: |what, err| state_error(what, err),
};

/// Creates a fresh temporary file in the snapshots directory.
fn temp_file(state: &State) -> std::io::Result<(PathBuf, File)> {
    let path = state.snapshots().join(format!(".tmp-{}", random_hex()?));
    let file = std::fs::OpenOptions::new()
        .write(true)
        .read(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)?;
    Ok((path, file))
}

/// How old a `.tmp-` file of the snapshots directory must be for the
/// sweep to remove it: far past any capture that is still writing it.
pub(crate) const TEMPORARY_GRACE: std::time::Duration = std::time::Duration::from_secs(600);

/// Removes the `.tmp-` files that interrupted captures left in the
/// snapshots directory, when last written more than `min_age` ago.
/// Returns how many were removed.
pub(crate) fn sweep_temporaries(state: &State, min_age: std::time::Duration) -> usize {
    let Ok(entries) = std::fs::read_dir(state.snapshots()) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| e.file_name().as_bytes().starts_with(b".tmp-"))
        .filter(|e| {
            e.metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age >= min_age)
        })
        .filter(|e| std::fs::remove_file(e.path()).is_ok())
        .count()
}

/// Publishes a finished archive under `snap_id` with its record.
fn publish(state: &State, tmp: &Path, info: &SnapshotInfo) -> std::io::Result<()> {
    std::fs::rename(tmp, blob_path(state, &info.id))?;
    let json = serde_json::to_vec_pretty(info).map_err(std::io::Error::other)?;
    if let Err(e) = write_atomic(&record_path(state, &info.id), &json) {
        let _ = std::fs::remove_file(blob_path(state, &info.id));
        return Err(e);
    }
    Ok(())
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

/// Appends one walked entry to the archive.
fn append<W: Write>(b: &mut tar::Builder<W>, v: &Visit<'_>) -> std::io::Result<Step> {
    let path = Path::new(v.rel_os());
    match v.file_type() {
        FileType::Directory => {
            let mut h = header_for(v, tar::EntryType::Directory, 0);
            b.append_data(&mut h, path, std::io::empty())?;
            Ok(Step::Descend)
        }
        FileType::RegularFile => {
            let Some(file) = v.open_file()? else {
                return Ok(Step::Skip);
            };
            let size = file.metadata()?.len();
            let mut h = header_for(v, tar::EntryType::Regular, size);
            // Exactly `size` bytes whatever the file does meanwhile: a file
            // that shrinks is padded with zeros, one that grows is cut.
            let data = file.take(size).chain(std::io::repeat(0)).take(size);
            b.append_data(&mut h, path, data)?;
            Ok(Step::Skip)
        }
        FileType::Symlink => {
            let target = rustix::fs::readlinkat(v.dir, v.name.as_c_str(), Vec::new())?;
            let target = std::ffi::OsStr::from_bytes(target.as_bytes());
            let mut h = header_for(v, tar::EntryType::Symlink, 0);
            b.append_link(&mut h, path, target)?;
            Ok(Step::Skip)
        }
        FileType::Fifo => {
            let mut h = header_for(v, tar::EntryType::Fifo, 0);
            b.append_data(&mut h, path, std::io::empty())?;
            Ok(Step::Skip)
        }
        FileType::Socket
        | FileType::CharacterDevice
        | FileType::BlockDevice
        | FileType::Unknown => Ok(Step::Skip),
    }
}

/// Captures sandbox `id`'s `root/`.
pub(crate) fn capture(state: &State, id: &str, labels: &Labels) -> Result<SnapshotInfo> {
    for (k, v) in labels {
        validate_label(k, v)?;
    }
    let meta = require_meta(state, id)?;
    let root = sandbox_root(state, id)?;
    let dir = root
        .open_at(&[], OFlags::RDONLY | OFlags::DIRECTORY, true)
        .map_err(|e| crate::beneath::fs_error("snapshot", "/", e))?;
    let snap_id = format!(
        "{SNAPSHOT_PREFIX}{}",
        random_hex().map_err(|e| state_error("random", &e))?
    );
    let (tmp, file) = temp_file(state).map_err(|e| state_error("creating a snapshot", &e))?;
    let written = (|| -> std::io::Result<(String, u64)> {
        let sink = Hashing::new(BufWriter::new(file));
        let mut builder = tar::Builder::new(zstd::Encoder::new(sink, ZSTD_LEVEL)?);
        let mut visit = |v: &Visit<'_>| append(&mut builder, v);
        walk::walk(dir.as_fd(), &mut visit)?;
        let mut sink = builder.into_inner()?.finish()?;
        sink.flush()?;
        let (inner, digest, count) = sink.finish();
        let file = inner.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        Ok((digest, count))
    })();
    let (digest, size_bytes) = match written {
        Ok(w) => w,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(BackendError::from_io(format!("snapshot of {id}"), &e));
        }
    };
    let mut all = meta.labels.clone();
    all.extend(labels.iter().map(|(k, v)| (k.clone(), v.clone())));
    let info = SnapshotInfo {
        id: snap_id,
        source_sandbox_id: id.to_owned(),
        digest,
        size_bytes,
        created_at_ms: now_ms(),
        labels: all,
    };
    if let Err(e) = publish(state, &tmp, &info) {
        let _ = std::fs::remove_file(&tmp);
        return Err(state_error("publishing a snapshot", &e));
    }
    Ok(info)
}

/// The record of snapshot `snap_id`, or `not_found`.
pub(crate) fn load(state: &State, snap_id: &str) -> Result<SnapshotInfo> {
    STORE.read_record(snap_id, |id| record_path(state, id))
}

/// Opens snapshot `snap_id`'s archive after checking it against its digest;
/// the file is positioned at its start.
pub(crate) fn open_verified(state: &State, snap_id: &str) -> Result<(SnapshotInfo, File)> {
    let info = load(state, snap_id)?;
    let mut file = STORE.open_archive(snap_id, &blob_path(state, snap_id))?;
    STORE.verify_archive(snap_id, &mut file, &info.digest)?;
    Ok((info, file))
}

/// Unpacks a verified archive into the fresh, empty directory `root`.
pub(crate) fn unpack(snap_id: &str, file: File, root: &Path) -> Result<()> {
    let fail = |e: std::io::Error| {
        corrupt(
            snap_id,
            format!("it cannot be unpacked: {}", sandbox_view(&e, root)),
        )
    };
    let mut archive = tar::Archive::new(zstd::Decoder::new(file).map_err(fail)?);
    archive.set_preserve_permissions(true);
    archive.set_preserve_mtime(true);
    archive.set_preserve_ownerships(false);
    archive.set_unpack_xattrs(false);
    archive.set_overwrite(false);
    // Directories last and deepest first, so that a read-only directory does
    // not stop its own content from being unpacked (as `tar` itself does).
    let mut directories = Vec::new();
    for entry in archive.entries().map_err(fail)? {
        let mut entry = entry.map_err(fail)?;
        let kind = entry.header().entry_type();
        match kind {
            tar::EntryType::Directory => {
                directories.push(entry);
                continue;
            }
            tar::EntryType::Fifo => {
                // `tar` unpacks a fifo as a regular file; it is made here.
                make_fifo(snap_id, &entry, root)?;
                continue;
            }
            tar::EntryType::Regular | tar::EntryType::Continuous | tar::EntryType::Symlink => {}
            other => {
                return Err(corrupt(
                    snap_id,
                    format!("it holds an entry of type {other:?}, which is never restored"),
                ));
            }
        }
        if !entry.unpack_in(root).map_err(fail)? {
            return Err(corrupt(snap_id, "it holds a path that leaves its root"));
        }
    }
    directories.sort_by(|a, b| b.path_bytes().cmp(&a.path_bytes()));
    for mut dir in directories {
        if !dir.unpack_in(root).map_err(fail)? {
            return Err(corrupt(snap_id, "it holds a path that leaves its root"));
        }
    }
    Ok(())
}

/// The text of an unpacking error (with its cause) where host paths under
/// `root` are shown as sandbox paths: errors never reveal the host layout.
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

/// Creates the fifo `entry` describes beneath `root`, with its parents
/// (resolved beneath the root, never through a symlink out of it), its mode
/// and its modification time.
fn make_fifo<R: Read>(snap_id: &str, entry: &tar::Entry<'_, R>, root: &Path) -> Result<()> {
    let path = entry
        .path()
        .map_err(|e| corrupt(snap_id, format!("a fifo has a bad path: {e}")))?;
    let mut comps = Vec::new();
    for c in path.components() {
        match c {
            Component::Normal(n) => match n.to_str() {
                Some(n) => comps.push(n.to_owned()),
                None => return Err(corrupt(snap_id, "a fifo has a name that is not UTF-8")),
            },
            Component::CurDir | Component::RootDir => {}
            Component::ParentDir | Component::Prefix(_) => {
                return Err(corrupt(snap_id, "it holds a path that leaves its root"));
            }
        }
    }
    let Some((_, parents)) = comps.split_last() else {
        return Err(corrupt(snap_id, "a fifo has an empty path"));
    };
    let header = entry.header();
    let mode = header.mode().map_err(|e| corrupt(snap_id, e))? & 0o7777;
    let mtime = header.mtime().map_err(|e| corrupt(snap_id, e))?;
    let refused = |e: BackendError| corrupt(snap_id, format!("restoring a fifo: {}", e.message));
    let sroot = SandboxRoot::open(root, snap_id, Resolution::Beneath, Ownership::Process)
        .map_err(refused)?;
    let parent = SandboxPath::parse("path", &format!("/{}", parents.join("/"))).map_err(refused)?;
    sroot.mkdir(&parent, true).map_err(|e| refused(e.into()))?;
    let target = SandboxPath::parse("path", &format!("/{}", comps.join("/"))).map_err(refused)?;
    let shown = target.shown();
    let (dir, name) = sroot
        .parent(FileOp::Write, &target)
        .map_err(|e| refused(e.into()))?;
    let made = rustix::fs::mknodat(
        &dir,
        name,
        rustix::fs::FileType::Fifo,
        Mode::from_raw_mode(0o600),
        0,
    )
    .and_then(|()| rustix::fs::chmodat(&dir, name, Mode::from_raw_mode(mode), AtFlags::empty()))
    .and_then(|()| {
        let when = rustix::fs::Timespec {
            tv_sec: i64::try_from(mtime).unwrap_or(i64::MAX),
            tv_nsec: 0,
        };
        let times = rustix::fs::Timestamps {
            last_access: when,
            last_modification: when,
        };
        rustix::fs::utimensat(&dir, name, &times, AtFlags::SYMLINK_NOFOLLOW)
    });
    made.map_err(|e| corrupt(snap_id, format!("restoring fifo {shown}: {e}")))
}

/// Deletes snapshot `snap_id`; a missing one is not an error.
pub(crate) fn delete(state: &State, snap_id: &str) -> Result<()> {
    if !is_snapshot_id(snap_id) {
        return Ok(());
    }
    for path in [record_path(state, snap_id), blob_path(state, snap_id)] {
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(state_error(format_args!("deleting snapshot {snap_id}"), &e)),
        }
    }
    Ok(())
}

/// Snapshots whose labels hold every pair of `labels`, oldest first.
pub(crate) fn list(state: &State, labels: &Labels) -> Result<Vec<SnapshotInfo>> {
    let entries =
        std::fs::read_dir(state.snapshots()).map_err(|e| state_error("listing snapshots", &e))?;
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| state_error("listing snapshots", &e))?;
        let name = entry.file_name();
        let Some(snap_id) = name.to_str().and_then(|n| n.strip_suffix(".json")) else {
            continue;
        };
        if !is_snapshot_id(snap_id) {
            continue;
        }
        match load(state, snap_id) {
            Ok(info) if labels_match(&info.labels, labels) => out.push(info),
            Ok(_) => {}
            // Deleted meanwhile.
            Err(e) if e.code == ErrorCode::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    out.sort_by(|a, b| (a.created_at_ms, &a.id).cmp(&(b.created_at_ms, &b.id)));
    Ok(out)
}

/// A new snapshot with `snap_id`'s content (copied and checked against its
/// digest), a new id, and the source's labels plus `labels`.
pub(crate) fn clone(state: &State, snap_id: &str, labels: &Labels) -> Result<SnapshotInfo> {
    for (k, v) in labels {
        validate_label(k, v)?;
    }
    let source = load(state, snap_id)?;
    let mut src = STORE.open_archive(snap_id, &blob_path(state, snap_id))?;
    let new_id = format!(
        "{SNAPSHOT_PREFIX}{}",
        random_hex().map_err(|e| state_error("random", &e))?
    );
    let (tmp, mut out) = temp_file(state).map_err(|e| state_error("cloning a snapshot", &e))?;
    let copied = digest_of(&mut src, Some(&mut out)).and_then(|d| out.sync_all().map(|()| d));
    let (digest, size_bytes) = match copied {
        Ok(d) => d,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(state_error(format_args!("cloning snapshot {snap_id}"), &e));
        }
    };
    if digest != source.digest {
        let _ = std::fs::remove_file(&tmp);
        return Err(corrupt(snap_id, "its content does not match its digest"));
    }
    let mut all = source.labels.clone();
    all.extend(labels.iter().map(|(k, v)| (k.clone(), v.clone())));
    let info = SnapshotInfo {
        id: new_id,
        source_sandbox_id: source.source_sandbox_id,
        digest,
        size_bytes,
        created_at_ms: now_ms(),
        labels: all,
    };
    if let Err(e) = publish(state, &tmp, &info) {
        let _ = std::fs::remove_file(&tmp);
        return Err(state_error("publishing a snapshot clone", &e));
    }
    Ok(info)
}

#[cfg(test)]
mod temporaries {
    use super::*;

    /// Issue 12, item 16: a `.tmp-` file an interrupted capture left is
    /// swept once stale; a fresh one (perhaps being written) is kept.
    #[test]
    fn a_stale_temporary_is_swept_and_a_fresh_one_kept() {
        let dir = tempfile::tempdir().unwrap();
        let state = State::open(dir.path().to_path_buf()).unwrap();
        let (stale, fresh) = (temp_file(&state).unwrap(), temp_file(&state).unwrap());
        let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        stale.1.set_modified(hour_ago).unwrap();
        assert_eq!(sweep_temporaries(&state, TEMPORARY_GRACE), 1);
        assert!(!stale.0.exists());
        assert!(fresh.0.exists());
    }
}
