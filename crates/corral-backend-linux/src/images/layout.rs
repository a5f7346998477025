//! The on-disk layout of the store and its records.
//!
//! ```text
//! <dir>/blobs/sha256/<hex>    configs and layers, exactly as imported
//! <dir>/layers/<hex>/         a layer unpacked (hex of its diff_id)
//! <dir>/images/<hex>.json     an image record (hex of its config digest)
//! <dir>/tmp/                  staging; never read, emptied under the lock
//! <dir>/lock                  flock: held exclusively by import and remove
//! ```
//! Everything becomes visible by one `rename`, so an interrupted import
//! leaves only staging and unreferenced layers, which the next
//! [`Layout::sweep`] (run by `open` when no import is in flight) reclaims.

use std::collections::BTreeSet;
use std::fs::{self, File};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::FlockOperation;
use serde::{Deserialize, Serialize};

use super::digest::parse_digest;
use super::error::ImageError;

/// One layer of a record.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct LayerRecord {
    /// The `sha256:` digest of the uncompressed layer (names `layers/<hex>`).
    pub diff_id: String,
    /// The `sha256:` digest of the layer as imported (names `blobs/sha256/<hex>`).
    pub blob: String,
    /// The size of the blob in bytes.
    pub size: u64,
}

/// An image record: `images/<hex>.json`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Record {
    /// The name, or `None` once another image took it.
    pub name: Option<String>,
    /// Further names of the same image (an import of the same digest
    /// under another name adds one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also: Vec<String>,
    /// The `sha256:` digest of the image's config.
    pub digest: String,
    /// When it was (last) imported, ms since the epoch.
    pub created_at_ms: u64,
    /// The layers, base first.
    pub layers: Vec<LayerRecord>,
    /// The manifest as imported.
    pub manifest: serde_json::Value,
}

impl Record {
    /// Every name of the image, `name` first.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.name.iter().chain(self.also.iter()).map(String::as_str)
    }

    /// Whether `n` is one of its names.
    pub fn has_name(&self, n: &str) -> bool {
        self.names().any(|m| m == n)
    }

    /// Drops the name `n` (the next name, if any, becomes the first).
    pub fn drop_name(&mut self, n: &str) {
        let mut rest: Vec<String> = self
            .names()
            .filter(|m| *m != n)
            .map(str::to_string)
            .collect();
        self.name = (!rest.is_empty()).then(|| rest.remove(0));
        self.also = rest;
    }
}

/// Paths of a store directory.
#[derive(Debug, Clone)]
pub struct Layout {
    dir: PathBuf,
}

static STAGING_SEQ: AtomicU64 = AtomicU64::new(0);

/// A staging directory under `tmp/`, removed on drop.
#[derive(Debug)]
pub struct Staging {
    path: PathBuf,
}

impl Staging {
    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        // Best effort; what stays is swept by the next `open`.
        let _ = fs::remove_dir_all(&self.path);
    }
}

/// The exclusive store lock, released on drop.
#[derive(Debug)]
pub struct Lock {
    _file: File,
}

fn io_at(what: &str, path: &Path) -> impl FnOnce(std::io::Error) -> ImageError {
    let context = format!("{what} {}", path.display());
    move |e| ImageError::io(context, e)
}

impl Layout {
    /// Creates the directories of the layout under `dir`.
    pub fn create(dir: PathBuf) -> Result<Self, ImageError> {
        let layout = Layout { dir };
        for sub in [
            layout.blobs(),
            layout.layers(),
            layout.images(),
            layout.tmp(),
        ] {
            fs::create_dir_all(&sub).map_err(io_at("creating", &sub))?;
        }
        // Unpacked layers keep their owners and setuid bits: only the owner
        // of the store may reach them (as docker keeps its layer directory).
        for sub in [layout.layers(), layout.tmp()] {
            fs::set_permissions(&sub, fs::Permissions::from_mode(0o700))
                .map_err(io_at("restricting", &sub))?;
        }
        Ok(layout)
    }

    /// The store directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn blobs(&self) -> PathBuf {
        self.dir.join("blobs/sha256")
    }
    fn layers(&self) -> PathBuf {
        self.dir.join("layers")
    }
    fn images(&self) -> PathBuf {
        self.dir.join("images")
    }
    fn tmp(&self) -> PathBuf {
        self.dir.join("tmp")
    }

    /// `blobs/sha256/<hex>` of a `sha256:` digest.
    pub fn blob(&self, digest: &str) -> PathBuf {
        self.blobs().join(hex_of(digest))
    }

    /// `layers/<hex>` of a `sha256:` diff_id.
    pub fn layer(&self, diff_id: &str) -> PathBuf {
        self.layers().join(hex_of(diff_id))
    }

    fn record_path(&self, digest: &str) -> PathBuf {
        self.images().join(format!("{}.json", hex_of(digest)))
    }

    /// Takes the exclusive lock (blocking) or, with `wait == false`, `None` if busy.
    pub fn lock(&self, wait: bool) -> Result<Option<Lock>, ImageError> {
        let path = self.dir.join("lock");
        let file = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(io_at("opening", &path))?;
        let op = if wait {
            FlockOperation::LockExclusive
        } else {
            FlockOperation::NonBlockingLockExclusive
        };
        match rustix::fs::flock(&file, op) {
            Ok(()) => Ok(Some(Lock { _file: file })),
            Err(rustix::io::Errno::WOULDBLOCK) if !wait => Ok(None),
            Err(e) => Err(ImageError::io(format!("locking {}", path.display()), e)),
        }
    }

    /// A fresh staging directory.
    pub fn staging(&self) -> Result<Staging, ImageError> {
        let seq = STAGING_SEQ.fetch_add(1, Ordering::Relaxed);
        let path = self.tmp().join(format!("{}-{seq}", std::process::id()));
        fs::create_dir(&path).map_err(io_at("creating", &path))?;
        Ok(Staging { path })
    }

    /// The record of `digest`, if stored.
    pub fn read(&self, digest: &str) -> Result<Option<Record>, ImageError> {
        let path = self.record_path(digest);
        match fs::read(&path) {
            Ok(bytes) => parse_record(&path, &bytes).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(ImageError::io(format!("reading {}", path.display()), e)),
        }
    }

    /// Every record, in no particular order.
    pub fn records(&self) -> Result<Vec<Record>, ImageError> {
        let dir = self.images();
        let mut out = Vec::new();
        for entry in fs::read_dir(&dir).map_err(io_at("listing", &dir))? {
            let entry = entry.map_err(io_at("listing", &dir))?;
            let name = entry.file_name();
            let Some(hex) = name.to_str().and_then(|n| n.strip_suffix(".json")) else {
                continue;
            };
            if parse_digest(&format!("sha256:{hex}")).is_none() {
                continue; // staging files of `write`
            }
            match self.read(&format!("sha256:{hex}"))? {
                Some(r) => out.push(r),
                None => continue, // removed meanwhile
            }
        }
        Ok(out)
    }

    /// Writes `record` atomically (temp file, fsync, rename).
    pub fn write(&self, record: &Record) -> Result<(), ImageError> {
        let path = self.record_path(&record.digest);
        let tmp = self
            .images()
            .join(format!(".{}.tmp", hex_of(&record.digest)));
        let json = serde_json::to_vec_pretty(record)
            .map_err(|e| ImageError::io("encoding an image record", std::io::Error::other(e)))?;
        let mut f = File::create(&tmp).map_err(io_at("creating", &tmp))?;
        f.write_all(&json).map_err(io_at("writing", &tmp))?;
        f.sync_all().map_err(io_at("syncing", &tmp))?;
        fs::rename(&tmp, &path).map_err(io_at("renaming into", &path))
    }

    /// Deletes the record of `digest`.
    pub fn delete(&self, digest: &str) -> Result<(), ImageError> {
        let path = self.record_path(digest);
        fs::remove_file(&path).map_err(io_at("removing", &path))
    }

    /// Moves `from` (a staged file or directory) to `to` unless `to` exists.
    pub fn commit(&self, from: &Path, to: &Path) -> Result<(), ImageError> {
        if to.exists() {
            return Ok(());
        }
        fs::rename(from, to).map_err(io_at("renaming into", to))
    }

    /// Empties `tmp/` and removes layers and blobs no record references.
    /// Call with the lock held.
    pub fn sweep(&self, _lock: &Lock) -> Result<(), ImageError> {
        let tmp = self.tmp();
        for entry in fs::read_dir(&tmp)
            .map_err(io_at("listing", &tmp))?
            .flatten()
        {
            remove_any(&entry.path())?;
        }
        let records = self.records()?;
        let mut keep = BTreeSet::new();
        for r in &records {
            keep.insert(hex_of(&r.digest).to_string());
            for l in &r.layers {
                keep.insert(hex_of(&l.diff_id).to_string());
                keep.insert(hex_of(&l.blob).to_string());
            }
        }
        for dir in [self.layers(), self.blobs()] {
            for entry in fs::read_dir(&dir)
                .map_err(io_at("listing", &dir))?
                .flatten()
            {
                let name = entry.file_name().to_string_lossy().into_owned();
                if keep.contains(&name) {
                    continue;
                }
                // Out of sight first (one rename), then deleted.
                let trash = tmp.join(format!("gc-{name}"));
                fs::rename(entry.path(), &trash).map_err(io_at("moving aside", &entry.path()))?;
                remove_any(&trash)?;
            }
        }
        Ok(())
    }
}

fn remove_any(path: &Path) -> Result<(), ImageError> {
    let meta = fs::symlink_metadata(path).map_err(io_at("inspecting", path))?;
    let res = if meta.is_dir() {
        fs::remove_dir_all(path)
    } else {
        fs::remove_file(path)
    };
    res.map_err(io_at("removing", path))
}

fn parse_record(path: &Path, bytes: &[u8]) -> Result<Record, ImageError> {
    let record: Record = serde_json::from_slice(bytes).map_err(|e| ImageError::CorruptRecord {
        path: path.display().to_string(),
        reason: e.to_string(),
    })?;
    let valid = parse_digest(&record.digest).is_some()
        && record
            .layers
            .iter()
            .all(|l| parse_digest(&l.diff_id).is_some() && parse_digest(&l.blob).is_some());
    if !valid {
        return Err(ImageError::CorruptRecord {
            path: path.display().to_string(),
            reason: "a digest is malformed".into(),
        });
    }
    Ok(record)
}

/// The hex part of a digest already checked by `parse_digest`.
fn hex_of(digest: &str) -> &str {
    digest.strip_prefix("sha256:").unwrap_or(digest)
}
