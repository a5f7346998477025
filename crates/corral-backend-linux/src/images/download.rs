//! Blobs fetched from a registry before an import takes them: the store's
//! `downloads/`, content-addressed like `blobs/`.
//!
//! ```text
//! <dir>/downloads/sha256/<hex>                a fetched blob, verified
//! <dir>/downloads/sha256/<hex>.<pid>.partial  a fetch in progress
//! <dir>/downloads/layouts/<pid>-<n>/          an OCI layout made for one import
//! ```
//!
//! A blob becomes `<hex>` by one `rename`, only after the sha256 of every
//! byte received equals the digest that names it and its length equals the
//! size its manifest declares; anything else is refused and its partial
//! file removed, so nothing unverified is ever kept. A blob already in the
//! store (`blobs/`) or complete here is not fetched again: that is how an
//! interrupted pull resumes. A partial file is not resumed: its fetch
//! starts again from zero (the partial of a pull that died is removed by
//! the next fetch of the same blob). `downloads/` is outside what
//! [`super::ImageStore::reclaim`] sweeps, so a pull's verified blobs
//! survive until the import that needs them; that import removes them.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest as _, Sha256};

use super::digest::{SHA256_PREFIX, parse_digest};
use super::error::ImageError;
use super::store::ImageStore;

/// The largest blob a pull accepts (a layer as the registry serves it).
pub const MAX_BLOB_BYTES: u64 = 16 << 30;

static LAYOUT_SEQ: AtomicU64 = AtomicU64::new(0);

/// The `downloads/` directory of one store.
#[derive(Debug, Clone)]
pub struct Downloads {
    dir: PathBuf,
    layouts: PathBuf,
    store_blobs: PathBuf,
}

/// A blob being received: every byte is hashed and counted as it is
/// written; [`BlobDownload::finish`] keeps it only when it is exactly what
/// its digest and declared size say. Dropped unfinished, its partial file
/// is removed.
#[derive(Debug)]
pub struct BlobDownload {
    digest: String,
    declared: u64,
    received: u64,
    hasher: Sha256,
    file: Option<File>,
    partial: PathBuf,
    target: PathBuf,
}

fn io_at(what: &str, path: &Path) -> impl FnOnce(std::io::Error) -> ImageError {
    let context = format!("{what} {}", path.display());
    move |e| ImageError::io(context, e)
}

fn checked_hex(digest: &str) -> Result<&str, ImageError> {
    parse_digest(digest)
        .ok_or_else(|| ImageError::archive(format!("unsupported digest {digest:?}")))
}

impl ImageStore {
    /// The store's `downloads/` (created when missing).
    pub fn downloads(&self) -> Result<Downloads, ImageError> {
        let dir = self.dir().join("downloads/sha256");
        let layouts = self.dir().join("downloads/layouts");
        for d in [&dir, &layouts] {
            fs::create_dir_all(d).map_err(io_at("creating", d))?;
        }
        let downloads = Downloads {
            dir,
            layouts,
            store_blobs: self.dir().join("blobs/sha256"),
        };
        downloads.remove_dead_layouts();
        Ok(downloads)
    }
}

/// Whether the process that named a file `<pid>…` is gone.
fn dead(pid: &str) -> bool {
    !pid.is_empty()
        && pid.bytes().all(|b| b.is_ascii_digit())
        && !Path::new("/proc").join(pid).exists()
}

impl Downloads {
    /// Where a verified copy of `digest` already is: the store's own blob,
    /// else a complete download; `None` when it must be fetched.
    pub fn complete(&self, digest: &str) -> Option<PathBuf> {
        let hex = parse_digest(digest)?;
        [self.store_blobs.join(hex), self.dir.join(hex)]
            .into_iter()
            .find(|p| p.is_file())
    }

    /// Starts receiving the blob `digest`, whose manifest declares
    /// `declared` bytes (at most [`MAX_BLOB_BYTES`]).
    pub fn begin(&self, digest: &str, declared: u64) -> Result<BlobDownload, ImageError> {
        let hex = checked_hex(digest)?;
        if declared > MAX_BLOB_BYTES {
            return Err(ImageError::BlobTooLarge {
                digest: digest.to_string(),
                declared,
                limit: MAX_BLOB_BYTES,
            });
        }
        self.remove_stale_partials(hex);
        let partial = self
            .dir
            .join(format!("{hex}.{}.partial", std::process::id()));
        let file = File::create(&partial).map_err(io_at("creating", &partial))?;
        Ok(BlobDownload {
            digest: digest.to_string(),
            declared,
            received: 0,
            hasher: Sha256::new(),
            file: Some(file),
            partial,
            target: self.dir.join(hex),
        })
    }

    /// Partial files of `hex` whose process is gone.
    fn remove_stale_partials(&self, hex: &str) {
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(pid) = name
                .strip_prefix(hex)
                .and_then(|rest| rest.strip_prefix('.'))
                .and_then(|rest| rest.strip_suffix(".partial"))
            else {
                continue;
            };
            if dead(pid) {
                let _ = fs::remove_file(entry.path());
            }
        }
    }

    /// Layouts a pull that died left (they hold links to blobs).
    fn remove_dead_layouts(&self) {
        let Ok(entries) = fs::read_dir(&self.layouts) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.split('-').next().is_some_and(dead) {
                let _ = fs::remove_dir_all(entry.path());
            }
        }
    }

    /// Removes the downloaded copy of `digest`, if any (the store's own
    /// blob is not touched).
    pub fn discard(&self, digest: &str) {
        if let Some(hex) = parse_digest(digest) {
            let _ = fs::remove_file(self.dir.join(hex));
        }
    }

    /// Makes an OCI image layout of one image for [`ImageStore::import`]:
    /// `index.json` naming `manifest` (its bytes exactly as the registry
    /// sent them, of media type `media_type`), and the config and layers,
    /// linked from their verified copies ([`Self::complete`]). Removed
    /// when the returned value is dropped.
    pub fn layout(
        &self,
        manifest: &[u8],
        media_type: &str,
        blobs: &[String],
    ) -> Result<PulledLayout, ImageError> {
        let seq = LAYOUT_SEQ.fetch_add(1, Ordering::Relaxed);
        let root = self.layouts.join(format!("{}-{seq}", std::process::id()));
        let layout = PulledLayout { root };
        let blob_dir = layout.root.join("blobs/sha256");
        fs::create_dir_all(&blob_dir).map_err(io_at("creating", &blob_dir))?;
        let manifest_digest = super::digest::digest_of(manifest);
        let write = |rel: &str, bytes: &[u8]| {
            let path = layout.root.join(rel);
            fs::write(&path, bytes).map_err(io_at("writing", &path))
        };
        write(
            &format!("blobs/sha256/{}", checked_hex(&manifest_digest)?),
            manifest,
        )?;
        for digest in blobs {
            let hex = checked_hex(digest)?;
            let from = self.complete(digest).ok_or_else(|| ImageError::NotFound {
                reference: digest.clone(),
            })?;
            let to = blob_dir.join(hex);
            if to.exists() {
                continue; // a blob the manifest names twice
            }
            if fs::hard_link(&from, &to).is_err() {
                fs::copy(&from, &to).map_err(io_at("copying", &from))?;
            }
        }
        let index = serde_json::json!({
            "schemaVersion": 2,
            "manifests": [{
                "mediaType": media_type,
                "digest": manifest_digest,
                "size": manifest.len(),
            }],
        });
        write("index.json", index.to_string().as_bytes())?;
        write("oci-layout", br#"{"imageLayoutVersion":"1.0.0"}"#)?;
        Ok(layout)
    }
}

/// An OCI layout made by [`Downloads::layout`], removed on drop.
#[derive(Debug)]
pub struct PulledLayout {
    root: PathBuf,
}

impl PulledLayout {
    /// The layout's directory.
    pub fn path(&self) -> &Path {
        &self.root
    }
}

impl Drop for PulledLayout {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.root);
    }
}

impl BlobDownload {
    /// The digest being received.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// How many bytes were received so far.
    pub fn received(&self) -> u64 {
        self.received
    }

    /// Appends `chunk`; more bytes than declared are refused at once.
    pub fn write(&mut self, chunk: &[u8]) -> Result<(), ImageError> {
        let received = self.received.saturating_add(chunk.len() as u64);
        if received > self.declared {
            return Err(ImageError::BlobOversize {
                digest: self.digest.clone(),
                declared: self.declared,
            });
        }
        let file = self.file.as_mut().ok_or_else(|| {
            ImageError::io("writing a blob", std::io::Error::other("already finished"))
        })?;
        file.write_all(chunk)
            .map_err(io_at("writing", &self.partial))?;
        self.hasher.update(chunk);
        self.received = received;
        Ok(())
    }

    /// Keeps the blob when its length is the declared size and its sha256
    /// the digest that names it; otherwise refuses it and keeps nothing.
    pub fn finish(mut self) -> Result<PathBuf, ImageError> {
        if self.received != self.declared {
            return Err(ImageError::BlobTruncated {
                digest: self.digest.clone(),
                declared: self.declared,
                received: self.received,
            });
        }
        let actual = format!(
            "{SHA256_PREFIX}{}",
            hex::encode(std::mem::take(&mut self.hasher).finalize())
        );
        if actual != self.digest {
            return Err(ImageError::DigestMismatch {
                what: format!("blob {}", self.digest),
                expected: self.digest.clone(),
                actual,
            });
        }
        let file = self.file.take().ok_or_else(|| {
            ImageError::io(
                "finishing a blob",
                std::io::Error::other("already finished"),
            )
        })?;
        file.sync_all().map_err(io_at("syncing", &self.partial))?;
        fs::rename(&self.partial, &self.target).map_err(io_at("renaming into", &self.target))?;
        Ok(self.target.clone())
    }
}

impl Drop for BlobDownload {
    fn drop(&mut self) {
        if self.partial.exists() {
            let _ = fs::remove_file(&self.partial);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::images::digest::digest_of;

    fn store() -> (tempfile::TempDir, Downloads) {
        let dir = tempfile::tempdir().unwrap();
        let store = ImageStore::open(dir.path().join("images")).unwrap();
        let downloads = store.downloads().unwrap();
        (dir, downloads)
    }

    fn leftovers(d: &Downloads) -> Vec<String> {
        fs::read_dir(&d.dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn a_verified_blob_is_kept_and_found_complete() {
        let (_t, d) = store();
        let data = b"layer bytes";
        let digest = digest_of(data);
        assert!(d.complete(&digest).is_none());
        let mut b = d.begin(&digest, data.len() as u64).unwrap();
        b.write(&data[..5]).unwrap();
        b.write(&data[5..]).unwrap();
        let kept = b.finish().unwrap();
        assert_eq!(fs::read(&kept).unwrap(), data);
        assert_eq!(d.complete(&digest), Some(kept));
        d.discard(&digest);
        assert!(d.complete(&digest).is_none());
    }

    /// Hostile blobs: each is refused in one line and nothing of it stays.
    #[test]
    fn lying_blobs_are_refused_and_nothing_is_kept() {
        let data = b"what the registry sends";
        let right = digest_of(data);
        let other = digest_of(b"something else");
        let n = data.len() as u64;
        // (attack, digest named, declared size, expected refusal)
        let rows: [(&str, &str, u64, &str); 3] = [
            ("digest lies", &other, n, "digest mismatch for blob"),
            ("larger than declared", &right, n - 1, "larger than the"),
            (
                "shorter than declared",
                &right,
                n + 1,
                &format!("after {n} bytes"),
            ),
        ];
        for (attack, digest, declared, refusal) in rows {
            let (_t, d) = store();
            let mut b = d.begin(digest, declared).unwrap();
            let err = match b.write(data) {
                Err(e) => {
                    drop(b); // as a failed pull drops it
                    e
                }
                Ok(()) => b.finish().unwrap_err(),
            };
            let line = err.to_string();
            assert!(line.contains(refusal), "{attack}: {line}");
            assert!(!line.contains('\n'), "{attack}: {line}");
            assert_eq!(err.code().as_str(), "invalid_input", "{attack}");
            assert!(leftovers(&d).is_empty(), "{attack}: {:?}", leftovers(&d));
            assert!(d.complete(digest).is_none(), "{attack}");
        }
    }

    #[test]
    fn a_declared_size_past_the_bound_is_refused_before_any_byte() {
        let (_t, d) = store();
        let e = d.begin(&digest_of(b"x"), MAX_BLOB_BYTES + 1).unwrap_err();
        assert!(e.to_string().contains("more than the limit"), "{e}");
    }

    #[test]
    fn a_dead_pulls_partial_is_removed_by_the_next_fetch() {
        let (_t, d) = store();
        let digest = digest_of(b"x");
        let hex = parse_digest(&digest).unwrap();
        // No process has pid 4294967295 (above any pid_max).
        fs::write(d.dir.join(format!("{hex}.4294967295.partial")), b"half").unwrap();
        let b = d.begin(&digest, 1).unwrap();
        assert_eq!(
            leftovers(&d),
            vec![format!("{hex}.{}.partial", std::process::id())]
        );
        drop(b);
        assert!(leftovers(&d).is_empty());
    }

    #[test]
    fn a_dead_pulls_layout_is_removed_when_downloads_open_again() {
        let dir = tempfile::tempdir().unwrap();
        let store = ImageStore::open(dir.path().join("images")).unwrap();
        let d = store.downloads().unwrap();
        let dead = d.layouts.join("4294967295-0");
        let live = d.layouts.join(format!("{}-0", std::process::id()));
        for l in [&dead, &live] {
            fs::create_dir_all(l.join("blobs")).unwrap();
        }
        store.downloads().unwrap();
        assert!(!dead.exists() && live.exists());
    }
}
