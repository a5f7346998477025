//! Snapshots: a sandbox's `root/` as a zstd-compressed tar archive, the
//! shared [`snapshot_archive`] format.
//!
//! - **What is kept**: directories, regular files (sparse ones sparsely)
//!   and fifos with their permission bits (setuid/setgid/sticky included)
//!   and modification times; symlinks as symlinks (never followed). Owners
//!   are recorded but not restored. Sockets and device nodes are skipped: a
//!   socket means nothing without its listener, and restoring device nodes
//!   from an archive would let a snapshot plant them. Hard links are stored
//!   as separate copies. A capture gives up after [`CAPTURE_DEADLINE`]
//!   (`timeout`).
//! - **Storage**: `<state>/snapshots/<id>.tar.zst` and its record
//!   `<id>.json` ([`SnapshotInfo`]), written last. The id is
//!   `locsnap-<16 random hex>`; the content is *verified* by its digest
//!   (`sha256:<hex>` of the compressed bytes) rather than *named* by it, so
//!   that a clone — identical content by definition — has its own id and its
//!   own file, and deleting either leaves the other intact.
//! - **Restore** (`create` with `snapshot`) checks the digest before anything
//!   is allocated (a mismatch is `provider` and nothing is created), then
//!   unpacks into the new sandbox's fresh, empty `root/`, resolved beneath
//!   it, refusing any entry that is not a directory, regular file, symlink
//!   or fifo, any `..`, any path through a symlink that leaves the root and
//!   any path appearing twice.

use std::fs::File;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use corral_backend::SandboxPath;
use corral_backend::contained::Resolution;
use corral_backend::contained_fs::{FileOp, SplitPath};
use corral_backend::snapshot_archive::{
    self, ApplyOptions, Budget, CAPTURE_DEADLINE, Layout, Owners, WriteOptions,
};
use corral_backend::snapshot_store::{SnapshotStore, corrupt, digest_of};
use corral_backend::{ErrorCode, Labels, Result, SnapshotInfo, labels_match, now_ms};
use rustix::fd::AsFd;

use crate::files::sandbox_root;
use crate::state::{
    SNAPSHOT_PREFIX, State, is_snapshot_id, random_hex, require_meta, state_error, write_atomic,
};

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

/// Captures sandbox `id`'s `root/`.
pub(crate) fn capture(state: &State, id: &str, labels: &Labels) -> Result<SnapshotInfo> {
    let meta = require_meta(state, id)?;
    let dir = sandbox_root(state, id)?
        .open_dir(FileOp::OpenDir, &SplitPath::from(&SandboxPath::root()))?;
    let snap_id = format!(
        "{SNAPSHOT_PREFIX}{}",
        random_hex().map_err(|e| state_error("random", &e))?
    );
    let (tmp, file) = temp_file(state).map_err(|e| state_error("creating a snapshot", &e))?;
    // The local backend enforces no disk limit: only the deadline bounds it.
    let options = WriteOptions {
        layout: Layout::Plain,
        skip_top: &[],
        budget: &Budget::new(u64::MAX, CAPTURE_DEADLINE),
    };
    let (digest, size_bytes) = match snapshot_archive::write_compressed(dir.as_fd(), &options, file)
    {
        Ok(w) => w,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(snapshot_archive::capture_error(id, &e));
        }
    };
    let mut all = meta.labels.clone();
    all.extend(labels);
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
    let options = ApplyOptions {
        layout: Layout::Plain,
        resolution: Resolution::Beneath,
        owners: Owners::Caller,
    };
    snapshot_archive::apply_compressed(snap_id, file, root, options)
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
            Err(e) if e.code() == ErrorCode::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    out.sort_by(|a, b| (a.created_at_ms, &a.id).cmp(&(b.created_at_ms, &b.id)));
    Ok(out)
}

/// A new snapshot with `snap_id`'s content (copied and checked against its
/// digest), a new id, and the source's labels plus `labels`.
pub(crate) fn clone(state: &State, snap_id: &str, labels: &Labels) -> Result<SnapshotInfo> {
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
    all.extend(labels);
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
