//! Blobs fetched from a registry before an import takes them: the store's
//! `downloads/`, content-addressed like `blobs/`.
//!
//! ```text
//! <dir>/downloads/sha256/<hex>           a fetched blob, verified
//! <dir>/downloads/sha256/<hex>.partial   a fetch in progress or cut (locked while written)
//! <dir>/downloads/layouts/<pid>-<n>/     an OCI layout made for one import
//! ```
//!
//! A blob becomes `<hex>` by one `rename`, only after the sha256 of every
//! byte received equals the digest that names it and its length equals the
//! size its manifest declares; a blob that breaks either is refused and its
//! partial file removed, so nothing unverified is ever kept as a blob. A
//! blob already in the store (`blobs/`) or complete here is not fetched
//! again, and a transfer that was cut leaves its partial file: the next
//! fetch hashes the bytes it holds and asks the registry for the rest (an
//! HTTP range); a registry that answers with the whole blob instead starts
//! it again from zero. One fetch of a blob at a time: the partial file is
//! locked (flock) while it is written, and a second pull of the same blob
//! waits, then finds it complete. `downloads/` is outside what
//! [`super::ImageStore::reclaim`] sweeps, so a pull's blobs survive until
//! the import that needs them; that import removes them.

use std::fs::{self, File};
use std::io::{Read, Seek, SeekFrom, Write};
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
/// written (a resumed fetch's earlier bytes too); [`BlobDownload::finish`]
/// keeps it only when it is exactly what its digest and declared size
/// say. Refused, its partial file is removed; dropped otherwise (a cut
/// transfer), it stays for the next fetch to resume.
#[derive(Debug)]
pub struct BlobDownload {
    digest: String,
    declared: u64,
    received: u64,
    hasher: Sha256,
    file: Option<File>,
    partial: PathBuf,
    target: PathBuf,
    refused: bool,
}

/// What [`Downloads::begin`] found.
#[derive(Debug)]
pub enum Begun {
    /// The blob is complete (another pull finished it meanwhile).
    Complete(PathBuf),
    /// The blob is to be received, from [`BlobDownload::received`] on.
    Fetch(BlobDownload),
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
    /// `declared` bytes (at most [`MAX_BLOB_BYTES`]): resumes the bytes a
    /// cut fetch left, after waiting for any other pull receiving it.
    pub fn begin(&self, digest: &str, declared: u64) -> Result<Begun, ImageError> {
        let hex = checked_hex(digest)?;
        if declared > MAX_BLOB_BYTES {
            return Err(ImageError::BlobTooLarge {
                digest: digest.to_string(),
                declared,
                limit: MAX_BLOB_BYTES,
            });
        }
        let partial = self.dir.join(format!("{hex}.partial"));
        let mut file = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&partial)
            .map_err(io_at("opening", &partial))?;
        rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)
            .map_err(|e| ImageError::io(format!("locking {}", partial.display()), e))?;
        if let Some(done) = self.complete(digest) {
            return Ok(Begun::Complete(done));
        }
        let mut download = BlobDownload {
            digest: digest.to_string(),
            declared,
            received: 0,
            hasher: Sha256::new(),
            file: None,
            partial,
            target: self.dir.join(hex),
            refused: false,
        };
        let held = file
            .metadata()
            .map_err(io_at("reading", &download.partial))?
            .len();
        if held <= declared {
            // The bytes a cut fetch left count, and are hashed, again.
            let copied = std::io::copy(&mut (&file).take(held), &mut download.hasher)
                .map_err(io_at("reading", &download.partial))?;
            download.received = copied;
        }
        file.set_len(download.received)
            .map_err(io_at("truncating", &download.partial))?;
        file.seek(SeekFrom::Start(download.received))
            .map_err(io_at("seeking", &download.partial))?;
        download.file = Some(file);
        Ok(Begun::Fetch(download))
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

    /// How many bytes were received so far (a resumed fetch's included).
    pub fn received(&self) -> u64 {
        self.received
    }

    /// Drops what was received (the registry sends the whole blob again).
    pub fn restart(&mut self) -> Result<(), ImageError> {
        let file = self.file.as_mut().ok_or_else(|| {
            ImageError::io(
                "restarting a blob",
                std::io::Error::other("already finished"),
            )
        })?;
        file.set_len(0)
            .map_err(io_at("truncating", &self.partial))?;
        file.seek(SeekFrom::Start(0))
            .map_err(io_at("seeking", &self.partial))?;
        self.hasher = Sha256::new();
        self.received = 0;
        Ok(())
    }

    /// Appends `chunk`; more bytes than declared are refused at once.
    pub fn write(&mut self, chunk: &[u8]) -> Result<(), ImageError> {
        let received = self.received.saturating_add(chunk.len() as u64);
        if received > self.declared {
            self.refused = true;
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
            self.refused = true;
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
            self.refused = true;
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
        // Still locked here: no other pull writes it until the file closes.
        if self.refused {
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

    fn fetch(d: &Downloads, digest: &str, declared: u64) -> BlobDownload {
        match d.begin(digest, declared).unwrap() {
            Begun::Fetch(b) => b,
            Begun::Complete(p) => panic!("{} is complete", p.display()),
        }
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
        let mut b = fetch(&d, &digest, data.len() as u64);
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
            let mut b = fetch(&d, digest, declared);
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
    fn a_cut_fetch_resumes_from_the_bytes_it_left() {
        let (_t, d) = store();
        let data = b"0123456789abcdef";
        let digest = digest_of(data);
        let mut b = fetch(&d, &digest, 16);
        b.write(&data[..6]).unwrap();
        drop(b); // the transfer was cut
        let mut b = fetch(&d, &digest, 16);
        assert_eq!(b.received(), 6);
        b.write(&data[6..]).unwrap();
        b.finish().unwrap();
        assert!(matches!(d.begin(&digest, 16).unwrap(), Begun::Complete(_)));
        // A registry that sends the whole blob again: restart from zero.
        let other = b"fedcba9876543210";
        let digest = digest_of(other);
        let mut b = fetch(&d, &digest, 16);
        b.write(&other[..3]).unwrap();
        drop(b);
        let mut b = fetch(&d, &digest, 16);
        b.restart().unwrap();
        b.write(other).unwrap();
        b.finish().unwrap();
    }

    /// A partial file longer than the declared size (left by a lying
    /// registry, or by hand) is not resumed: the fetch starts from zero.
    #[test]
    fn a_partial_past_the_declared_size_starts_from_zero() {
        let (_t, d) = store();
        let data = b"abc";
        let digest = digest_of(data);
        let hex = parse_digest(&digest).unwrap();
        fs::write(d.dir.join(format!("{hex}.partial")), b"far too many bytes").unwrap();
        let mut b = fetch(&d, &digest, 3);
        assert_eq!(b.received(), 0);
        b.write(data).unwrap();
        b.finish().unwrap();
        assert_eq!(leftovers(&d), vec![hex.to_string()]);
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
