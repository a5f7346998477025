//! Snapshots of linux sandboxes: the writable content of a sandbox as a
//! zstd-compressed tar (the shared [`snapshot_archive`] format), stored
//! content-addressed.
//!
//! - **What is captured**: for the `host` image, the sandbox's tmpfs root
//!   minus the mount points (and symlinks) of the host directories bound
//!   read-only into it, and minus every top-level directory holding a
//!   bind of `CreateRequest::binds` (a snapshot never holds host files);
//!   for a layered image, the overlay's upper dir, with
//!   its whiteouts and opaque directories. The image is recorded, and a
//!   restore runs on the same image.
//! - **Storage**: `<state>/linux/snapshots/<id>/sha256-<hex>.tar.zst` (the
//!   archive, named by its digest) and `<id>/record.json` (its
//!   [`SnapshotInfo`], the image and its kind). A snapshot is built in a
//!   hidden directory and published by renaming it to its id, so a reader
//!   sees a complete snapshot or none; a crash leaves only a hidden `.tmp-`
//!   directory, which [`sweep`] removes. Ids are `lnxsnap-<16 hex>`.
//! - **Restore** (`create` with `snapshot`): the archive is read whole and
//!   checked against its digest before anything is allocated; a mismatch is
//!   `provider` and nothing is created. It is then applied onto the new
//!   sandbox's root before its PID 1 starts, resolved in that root, with
//!   the owners it recorded; whiteouts only for a layered image.
//! - **Bounds**: a capture stores at most the sandbox's disk limit of data
//!   (holes are not stored) and gives up after [`CAPTURE_DEADLINE`]:
//!   `quota` and `timeout`, naming the bound, and nothing is left behind.
//! - **Clone** copies the archive (verified on the way) under a new id.

use std::fs::File;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use corral_backend::contained::Resolution;
use corral_backend::snapshot_archive::{
    self, ApplyOptions, Budget, CAPTURE_DEADLINE, Layout, Owners, WriteOptions,
};
use corral_backend::snapshot_store::{SnapshotRecord, SnapshotStore, corrupt, digest_of};
use corral_backend::walk;
use corral_backend::{
    BackendError, ErrorCode, Labels, PlatformError, Result, SnapshotCloneOps, SnapshotInfo,
    SnapshotOps, labels_match, now_ms,
};
use rustix::fs::{Mode, OFlags};
use serde::{Deserialize, Serialize};

use crate::LinuxBackend;
use crate::images::ImageRoot;
use crate::state::{State, random_hex, require_meta, state_error, write_atomic};

/// The prefix of snapshot ids.
pub const SNAPSHOT_PREFIX: &str = "lnxsnap-";
/// The record's file name inside a snapshot's directory.
const RECORD: &str = "record.json";

/// What kind of root a snapshot was captured from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RootKind {
    /// The `host` image: a tmpfs root with host directories bound into it.
    Host,
    /// A layered image: an overlay whose upper dir was captured.
    Layered,
}

impl RootKind {
    /// What tree its archive holds.
    const fn layout(self) -> Layout {
        match self {
            Self::Host => Layout::Plain,
            Self::Layered => Layout::OverlayUpper,
        }
    }
}

/// A snapshot's stored record.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Record {
    #[serde(flatten)]
    info: SnapshotInfo,
    /// The image reference a restore runs on (`host` or `sha256:<hex>`).
    image: String,
    /// What was captured.
    root: RootKind,
}

impl SnapshotRecord for Record {
    fn info(&self) -> &SnapshotInfo {
        &self.info
    }
}

/// The linux backend's stored snapshots.
const STORE: SnapshotStore = SnapshotStore {
    prefix: SNAPSHOT_PREFIX,
    state_error: |what, err| state_error(what, err),
};

fn is_snapshot_id(s: &str) -> bool {
    STORE.is_id(s)
}

fn snapshots_dir(state: &State) -> PathBuf {
    state.dir().join("snapshots")
}

fn ensure_dir(state: &State) -> Result<PathBuf> {
    let dir = snapshots_dir(state);
    std::fs::create_dir_all(&dir).map_err(|e| state_error("creating the snapshot store", &e))?;
    Ok(dir)
}

fn blob_name(digest: &str) -> String {
    format!("{}.tar.zst", digest.replace(':', "-"))
}

/// A hidden directory a snapshot is built in; removed on drop unless published.
struct Building {
    dir: PathBuf,
    published: bool,
}

impl Building {
    fn new(state: &State) -> Result<Self> {
        let store = ensure_dir(state)?;
        let hex = random_hex().map_err(|e| state_error("random", &e))?;
        let dir = store.join(format!(".tmp-{hex}"));
        std::fs::create_dir(&dir).map_err(|e| state_error("creating a snapshot", &e))?;
        Ok(Building {
            dir,
            published: false,
        })
    }

    /// Writes the record last and renames the directory to the snapshot's id.
    fn publish(mut self, state: &State, record: &Record) -> Result<SnapshotInfo> {
        let json = serde_json::to_vec_pretty(record).map_err(|e| PlatformError::Defective {
            what: format!("encoding a snapshot record: {e}"),
        })?;
        write_atomic(&self.dir.join(RECORD), &json)
            .map_err(|e| state_error("writing a snapshot record", &e))?;
        std::fs::rename(&self.dir, snapshots_dir(state).join(&record.info.id))
            .map_err(|e| state_error("publishing a snapshot", &e))?;
        self.published = true;
        Ok(record.info.clone())
    }
}

impl Drop for Building {
    fn drop(&mut self) {
        if !self.published {
            let _ = walk::remove_host_tree(&self.dir);
        }
    }
}

fn new_id() -> Result<String> {
    Ok(format!(
        "{SNAPSHOT_PREFIX}{}",
        random_hex().map_err(|e| state_error("random", &e))?
    ))
}

/// The names at the top of a host-image root that are the host's (bound
/// read-only inside the sandbox, or symlinks to them): never captured.
fn host_names() -> Vec<String> {
    match crate::images::host_image().root {
        ImageRoot::Host(dirs) => dirs
            .iter()
            .map(|d| d.path.trim_start_matches('/').to_string())
            .collect(),
        ImageRoot::Layers(_) => Vec::new(),
    }
}

/// The names at the top of the host-image root `root` under which a host
/// directory is bound (`CreateRequest::binds`): never captured, so that
/// a snapshot holds the sandbox's own files and never the host's.
fn bound_names(root: &Path) -> std::io::Result<Vec<String>> {
    let root = std::fs::canonicalize(root)?;
    Ok(crate::rootfs::mounts_below(&root)?
        .iter()
        .filter_map(|m| m.strip_prefix(&root).ok()?.components().next())
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect())
}

/// Captures sandbox `id`'s writable content.
fn capture(state: &State, id: &str, labels: &Labels) -> Result<SnapshotInfo> {
    let meta = require_meta(state, id)?;
    let upper = state.fs_dir(id).join("upper");
    let (source, kind, skip, image) = if upper.is_dir() {
        (upper, RootKind::Layered, Vec::new(), meta.image.clone())
    } else {
        let host = crate::record::HOST_IMAGE.to_string();
        let root = state.root_dir(id);
        let mut skip = host_names();
        skip.extend(bound_names(&root).map_err(|e| state_error("listing the binds", &e))?);
        (root, RootKind::Host, skip, host)
    };
    let dir = rustix::fs::open(
        &source,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|_| BackendError::sandbox_not_found(id))?;
    let building = Building::new(state)?;
    let tmp = building.dir.join("archive.tmp");
    let options = WriteOptions {
        layout: kind.layout(),
        skip_top: &skip,
        budget: &Budget::new(meta.disk_bytes, CAPTURE_DEADLINE),
    };
    let (digest, size_bytes) = File::create_new(&tmp)
        .and_then(|file| snapshot_archive::write_compressed(dir.as_fd(), &options, file))
        .map_err(|e| snapshot_archive::capture_error(id, &e))?;
    std::fs::rename(&tmp, building.dir.join(blob_name(&digest)))
        .map_err(|e| state_error("storing a snapshot", &e))?;
    let mut all = meta.labels.clone();
    all.extend(labels);
    let record = Record {
        info: SnapshotInfo {
            id: new_id()?,
            source_sandbox_id: id.to_owned(),
            digest,
            size_bytes,
            created_at_ms: now_ms(),
            labels: all,
        },
        image,
        root: kind,
    };
    building.publish(state, &record)
}

/// The record of snapshot `snap_id`, or `not_found`.
fn load(state: &State, snap_id: &str) -> Result<Record> {
    STORE.read_record(snap_id, |id| snapshots_dir(state).join(id).join(RECORD))
}

fn blob_path(state: &State, record: &Record) -> PathBuf {
    snapshots_dir(state)
        .join(&record.info.id)
        .join(blob_name(&record.info.digest))
}

fn open_blob(state: &State, record: &Record) -> Result<File> {
    STORE.open_archive(&record.info.id, &blob_path(state, record))
}

/// A verified snapshot, ready to be applied by `create`.
#[derive(Debug)]
pub struct Restore {
    /// The snapshot's id.
    pub snapshot_id: String,
    /// The image reference the sandbox must run on.
    pub image: String,
    layout: Layout,
    file: File,
}

/// Opens snapshot `snap_id` for a restore after checking its archive
/// against its digest (before `create` allocates anything).
pub fn open_for_restore(state: &State, snap_id: &str) -> Result<Restore> {
    let record = load(state, snap_id)?;
    let mut file = open_blob(state, &record)?;
    STORE.verify_archive(snap_id, &mut file, &record.info.digest)?;
    Ok(Restore {
        snapshot_id: snap_id.to_string(),
        image: record.image,
        layout: record.root.layout(),
        file,
    })
}

impl Restore {
    /// Its verified archive and the layout of the tree it holds, for
    /// [`apply`].
    pub fn into_archive(self) -> (File, Layout) {
        (self.file, self.layout)
    }
}

/// Applies the verified `archive` of snapshot `snapshot_id` (a tree of
/// `layout`) onto the fresh sandbox root `root`: `quota` when it does not
/// fit the sandbox's disk limit.
pub fn apply(snapshot_id: &str, archive: File, layout: Layout, root: &Path) -> Result<()> {
    let options = ApplyOptions {
        layout,
        resolution: Resolution::InRoot,
        owners: Owners::FromArchive,
    };
    snapshot_archive::apply_compressed(snapshot_id, archive, root, options)
}

fn delete(state: &State, snap_id: &str) -> Result<()> {
    if !is_snapshot_id(snap_id) {
        return Ok(());
    }
    walk::remove_host_tree(&snapshots_dir(state).join(snap_id))
        .map_err(|e| state_error(format_args!("deleting snapshot {snap_id}"), &e))
}

fn list(state: &State, labels: &Labels) -> Result<Vec<SnapshotInfo>> {
    let entries = match std::fs::read_dir(snapshots_dir(state)) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(state_error("listing snapshots", &e)),
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !is_snapshot_id(&name) {
            continue;
        }
        match load(state, &name) {
            Ok(r) if labels_match(&r.info.labels, labels) => out.push(r.info),
            Ok(_) => {}
            Err(e) if e.code() == ErrorCode::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    out.sort_by(|a, b| (a.created_at_ms, &a.id).cmp(&(b.created_at_ms, &b.id)));
    Ok(out)
}

fn clone(state: &State, snap_id: &str, labels: &Labels) -> Result<SnapshotInfo> {
    let source = load(state, snap_id)?;
    let mut from = open_blob(state, &source)?;
    let building = Building::new(state)?;
    let mut record = source.clone();
    let copied = (|| -> std::io::Result<String> {
        let mut to = File::create_new(building.dir.join(blob_name(&source.info.digest)))?;
        let (digest, _) = digest_of(&mut from, Some(&mut to))?;
        to.sync_all()?;
        Ok(digest)
    })()
    .map_err(|e| state_error(format_args!("cloning snapshot {snap_id}"), &e))?;
    if copied != source.info.digest {
        return Err(corrupt(snap_id, "its content does not match its digest"));
    }
    record.info.id = new_id()?;
    record.info.created_at_ms = now_ms();
    record.info.labels.extend(labels);
    building.publish(state, &record)
}

/// How old a hidden `.tmp-` directory must be for `gc` to remove it: past
/// any capture's deadline, so never one still being written.
pub const TEMPORARY_GRACE: std::time::Duration =
    CAPTURE_DEADLINE.saturating_add(std::time::Duration::from_secs(60));

/// Removes snapshots half-built by a crashed process: hidden `.tmp-`
/// directories of the store last changed more than `min_age` ago (younger
/// ones may be in progress). Returns how many were removed.
pub fn sweep(state: &State, min_age: std::time::Duration) -> usize {
    let Ok(entries) = std::fs::read_dir(snapshots_dir(state)) else {
        return 0;
    };
    let old = |e: &std::fs::DirEntry| {
        e.metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age >= min_age)
    };
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(".tmp-") && old(e))
        .filter(|e| walk::remove_host_tree(&e.path()).is_ok())
        .count()
}

#[async_trait]
impl SnapshotOps for LinuxBackend {
    async fn snapshot(&self, id: &str, labels: &Labels) -> Result<SnapshotInfo> {
        let (state, id, labels) = (self.state().clone(), id.to_owned(), labels.clone());
        crate::blocking::blocking(move || capture(&state, &id, &labels)).await
    }

    async fn delete_snapshot(&self, snapshot_id: &str) -> Result<()> {
        let (state, id) = (self.state().clone(), snapshot_id.to_owned());
        crate::blocking::blocking(move || delete(&state, &id)).await
    }

    async fn list_snapshots(&self, labels: &Labels) -> Result<Vec<SnapshotInfo>> {
        let (state, labels) = (self.state().clone(), labels.clone());
        crate::blocking::blocking(move || list(&state, &labels)).await
    }
}

#[async_trait]
impl SnapshotCloneOps for LinuxBackend {
    async fn clone_snapshot(&self, snapshot_id: &str, labels: &Labels) -> Result<SnapshotInfo> {
        let (state, id, labels) = (self.state().clone(), snapshot_id.to_owned(), labels.clone());
        crate::blocking::blocking(move || clone(&state, &id, &labels)).await
    }
}
