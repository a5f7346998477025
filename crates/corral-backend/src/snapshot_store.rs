//! What backends share that keep snapshots as files of a host directory:
//! a compressed archive whose `sha256:<hex>` digest verifies it, and a JSON
//! record ([`SnapshotInfo`], or a record holding one) written last.
//!
//! How the files are laid out and what the archive holds is each backend's
//! own; what is here is how a record is read, an archive opened and
//! checked, and what their failures are called.

use std::fmt;
use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::Path;

use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};

use crate::error::{BackendError, Result, SnapshotError};
use crate::snapshot::SnapshotInfo;
use crate::statefile::is_prefixed_id;

/// `not_found` for a snapshot id.
pub fn not_found(snap_id: &str) -> BackendError {
    SnapshotError::NotFound {
        snapshot: snap_id.into(),
    }
    .into()
}

/// `provider`: the stored snapshot `snap_id` is damaged, saying `why`.
pub fn corrupt(snap_id: &str, why: impl fmt::Display) -> BackendError {
    SnapshotError::Corrupted {
        snapshot: snap_id.into(),
        why: why.to_string(),
    }
    .into()
}

/// A writer that hashes (SHA-256) and counts what passes through it to
/// `inner`: an archive's digest and size as it is written.
#[derive(Debug)]
pub struct Hashing<W> {
    inner: W,
    hasher: Sha256,
    count: u64,
}

impl<W> Hashing<W> {
    /// Hashes what is written to `inner`.
    pub fn new(inner: W) -> Self {
        Hashing {
            inner,
            hasher: Sha256::new(),
            count: 0,
        }
    }

    /// The inner writer, the digest (`sha256:<hex>`) of everything written
    /// and its length in bytes.
    pub fn finish(self) -> (W, String, u64) {
        let digest = format!("sha256:{}", hex::encode(self.hasher.finalize()));
        (self.inner, digest, self.count)
    }
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.count += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// The digest (`sha256:<hex>`) and length of everything `r` yields,
/// copying it to `out` if given.
pub fn digest_of(r: &mut impl Read, mut out: Option<&mut File>) -> std::io::Result<(String, u64)> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut count = 0u64;
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&buf[..n]);
        if let Some(out) = out.as_deref_mut() {
            out.write_all(&buf[..n])?;
        }
        count += n as u64;
    }
    Ok((format!("sha256:{}", hex::encode(hasher.finalize())), count))
}

/// A snapshot's stored record: its [`SnapshotInfo`], alone or with what
/// else the backend keeps beside it.
pub trait SnapshotRecord: DeserializeOwned {
    /// The snapshot as the `Backend` trait reports it.
    fn info(&self) -> &SnapshotInfo;
}

impl SnapshotRecord for SnapshotInfo {
    fn info(&self) -> &SnapshotInfo {
        self
    }
}

/// One backend's stored snapshots: their ids, and how a failure of its
/// state directory is reported.
#[derive(Debug, Clone, Copy)]
pub struct SnapshotStore {
    /// What every snapshot id of the backend starts with (then 16 hex
    /// digits).
    pub prefix: &'static str,
    /// The backend's error for a failure of its state directory, given what
    /// was being done.
    pub state_error: fn(&dyn fmt::Display, &std::io::Error) -> BackendError,
}

impl SnapshotStore {
    /// Whether `s` is a well-formed snapshot id; nothing else is ever
    /// joined into a path.
    pub fn is_id(&self, s: &str) -> bool {
        is_prefixed_id(s, self.prefix)
    }

    /// The record of snapshot `snap_id`, stored at `path(snap_id)`:
    /// `not_found` for a malformed id or a missing record; corrupt when it
    /// does not parse or names another id.
    pub fn read_record<T: SnapshotRecord>(
        &self,
        snap_id: &str,
        path: impl FnOnce(&str) -> std::path::PathBuf,
    ) -> Result<T> {
        if !self.is_id(snap_id) {
            return Err(not_found(snap_id));
        }
        let bytes = match std::fs::read(path(snap_id)) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(not_found(snap_id)),
            Err(e) => {
                return Err((self.state_error)(
                    &format_args!("reading snapshot {snap_id}"),
                    &e,
                ));
            }
        };
        let record: T = serde_json::from_slice(&bytes)
            .map_err(|e| corrupt(snap_id, format!("bad record: {e}")))?;
        if record.info().id != snap_id {
            return Err(corrupt(snap_id, "its record names another id"));
        }
        Ok(record)
    }

    /// Opens the archive of snapshot `snap_id` at `path`; a missing one is
    /// corrupt (its record says it exists).
    pub fn open_archive(&self, snap_id: &str, path: &Path) -> Result<File> {
        match File::open(path) {
            Ok(f) => Ok(f),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Err(corrupt(snap_id, "its archive is missing"))
            }
            Err(e) => Err((self.state_error)(
                &format_args!("opening snapshot {snap_id}"),
                &e,
            )),
        }
    }

    /// Checks the archive `file` of snapshot `snap_id` against `digest`,
    /// leaving it positioned at its start: corrupt when it does not match.
    pub fn verify_archive(&self, snap_id: &str, file: &mut File, digest: &str) -> Result<()> {
        let reading =
            |e: &std::io::Error| (self.state_error)(&format_args!("reading snapshot {snap_id}"), e);
        let (actual, _) = digest_of(file, None).map_err(|e| reading(&e))?;
        if actual != digest {
            return Err(corrupt(snap_id, "its content does not match its digest"));
        }
        file.rewind().map_err(|e| reading(&e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    fn store() -> SnapshotStore {
        SnapshotStore {
            prefix: "s-",
            state_error: |what, e| BackendError::from_io(what, e),
        }
    }

    fn info(id: &str, digest: &str) -> SnapshotInfo {
        SnapshotInfo {
            id: id.to_owned(),
            source_sandbox_id: "sandbox".to_owned(),
            digest: digest.to_owned(),
            size_bytes: 0,
            created_at_ms: 1,
            labels: Default::default(),
        }
    }

    #[test]
    fn hashing_and_digest_of_agree() {
        let mut sink = Hashing::new(Vec::new());
        sink.write_all(b"archive bytes").unwrap();
        let (written, digest, count) = sink.finish();
        assert_eq!(written, b"archive bytes");
        assert_eq!(count, 13);
        assert_eq!(
            digest,
            format!("sha256:{}", hex::encode(Sha256::digest(b"archive bytes")))
        );
        let dir = tempfile::tempdir().unwrap();
        let mut copy = File::create(dir.path().join("copy")).unwrap();
        let read = digest_of(&mut &written[..], Some(&mut copy)).unwrap();
        assert_eq!(read, (digest, 13));
        assert_eq!(std::fs::read(dir.path().join("copy")).unwrap(), written);
    }

    #[test]
    fn records_are_found_checked_or_not_found() {
        let dir = tempfile::tempdir().unwrap();
        let path = |id: &str| dir.path().join(format!("{id}.json"));
        let (a, b) = ("s-000000000000000a", "s-000000000000000b");
        std::fs::write(path(a), serde_json::to_vec(&info(a, "d")).unwrap()).unwrap();
        std::fs::write(path(b), serde_json::to_vec(&info(a, "d")).unwrap()).unwrap();
        let store = store();

        let found: SnapshotInfo = store.read_record(a, path).unwrap();
        assert_eq!(found.id, a);
        let renamed = store.read_record::<SnapshotInfo>(b, path).unwrap_err();
        assert_eq!(renamed.code(), ErrorCode::Provider);
        assert!(renamed.message().contains("its record names another id"));
        for missing in ["s-000000000000000c", "../s-000000000000000a"] {
            let e = store
                .read_record::<SnapshotInfo>(missing, path)
                .unwrap_err();
            assert_eq!(e, not_found(missing));
        }
        std::fs::write(path(b), b"{").unwrap();
        let malformed = store.read_record::<SnapshotInfo>(b, path).unwrap_err();
        assert_eq!(malformed.code(), ErrorCode::Provider);
        assert!(malformed.message().contains("bad record"));
    }

    #[test]
    fn archives_are_verified_or_corrupt() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.tar.zst");
        let store = store();
        let id = "s-000000000000000a";
        let missing = store.open_archive(id, &path).unwrap_err();
        assert_eq!(missing, corrupt(id, "its archive is missing"));

        std::fs::write(&path, b"content").unwrap();
        let digest = format!("sha256:{}", hex::encode(Sha256::digest(b"content")));
        let mut file = store.open_archive(id, &path).unwrap();
        store.verify_archive(id, &mut file, &digest).unwrap();
        let mut again = Vec::new();
        file.read_to_end(&mut again).unwrap();
        assert_eq!(again, b"content", "verified and back at its start");

        let mut file = store.open_archive(id, &path).unwrap();
        let e = store
            .verify_archive(id, &mut file, "sha256:00")
            .unwrap_err();
        assert_eq!(e, corrupt(id, "its content does not match its digest"));
    }
}
