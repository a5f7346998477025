//! Small helpers for backends that keep their state in a host directory
//! (records, claims, markers): random ids, atomic writes, and the sandbox
//! records (`<sandboxes>/<id>/meta.json`) such a backend reads and lists.

use std::fmt;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

use crate::error::{BackendError, PlatformError, Result};

/// `N` bytes from the kernel's random source (`getrandom(2)`: no file to
/// open, so it works where `/dev` is missing or the descriptor limit is
/// reached). The one source of randomness of corral's ids, keys and names.
pub fn random_bytes<const N: usize>() -> std::io::Result<[u8; N]> {
    let mut buf = [0u8; N];
    getrandom::fill(&mut buf).map_err(std::io::Error::from)?;
    Ok(buf)
}

/// 16 random hex digits (8 random bytes), for ids and temporary names.
pub fn random_hex() -> std::io::Result<String> {
    random_hex_of(8)
}

/// `bytes` random bytes ([`random_bytes`]'s source) as lower-case hex
/// (twice as many digits), for ids and secrets.
pub fn random_hex_of(bytes: usize) -> std::io::Result<String> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).map_err(std::io::Error::from)?;
    Ok(hex::encode(buf))
}

/// Writes `bytes` to `path` atomically: a temporary file beside it (mode
/// 0600), flushed to disk, then renamed over `path`. A reader sees the old
/// content or the new, never a torn one; on failure the temporary file is
/// removed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_via_temporary(path, bytes, true)
}

/// [`write_atomic`] without the flush to disk, for records of runtime state
/// (processes, mounts) that a reboot makes meaningless anyway: still never
/// torn for a reader, nor when the writer is killed mid-write.
pub fn write_atomic_unsynced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_via_temporary(path, bytes, false)
}

/// Whether `s` is `prefix` followed by 16 lowercase hex digits (an id made
/// from [`random_hex`]). Anything else names no object and is never joined
/// into a path.
pub fn is_prefixed_id(s: &str, prefix: &str) -> bool {
    s.strip_prefix(prefix).is_some_and(|hex| {
        hex.len() == 16 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

/// A sandbox's on-disk record, as [`SandboxRecords`] reads and orders it.
pub trait SandboxRecord: DeserializeOwned {
    /// The id the record names (it must be the id it is stored under).
    fn id(&self) -> &str;
    /// Its creation time, epoch milliseconds: listings are oldest first.
    fn created_at_ms(&self) -> u64;
}

/// The sandbox records of one backend's state directory:
/// `<dir>/<id>/meta.json`, written last when a sandbox is created (so a
/// half-made sandbox has none), for ids of `prefix` and 16 hex digits.
#[derive(Debug, Clone)]
pub struct SandboxRecords {
    /// The backend's name, which starts every message about a bad record.
    pub backend: &'static str,
    /// What every sandbox id of the backend starts with.
    pub prefix: &'static str,
    /// Where the sandboxes' directories live.
    pub dir: PathBuf,
    /// The backend's error for a failure of its state directory, given what
    /// was being done.
    pub state_error: fn(&dyn fmt::Display, &std::io::Error) -> BackendError,
}

impl SandboxRecords {
    /// The record of sandbox `id`; `None` when `id` is not a well-formed id,
    /// or there is no such sandbox, or it was never completely created. A
    /// record that does not parse, or names another id, is `provider`.
    pub fn read<T: SandboxRecord>(&self, id: &str) -> Result<Option<T>> {
        if !is_prefixed_id(id, self.prefix) {
            return Ok(None);
        }
        let bytes = match std::fs::read(self.dir.join(id).join("meta.json")) {
            Ok(b) => b,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) =>
            {
                return Ok(None);
            }
            Err(e) => {
                return Err((self.state_error)(
                    &format_args!("reading sandbox {id}"),
                    &e,
                ));
            }
        };
        let backend = self.backend;
        let record: T = serde_json::from_slice(&bytes).map_err(|e| {
            BackendError::from(PlatformError::Malformed {
                what: format!("{backend} state: the record of sandbox {id} is malformed"),
                detail: e.to_string(),
            })
        })?;
        if record.id() != id {
            return Err(PlatformError::Malformed {
                what: format!("{backend} state: the record of sandbox {id}"),
                detail: format!("it names {:?}", record.id()),
            }
            .into());
        }
        Ok(Some(record))
    }

    /// What `read` makes of every well-formed sandbox id in the directory,
    /// oldest first (ties by id), leaving out the `None`s: sandboxes
    /// destroyed or half-created meanwhile are no sandboxes.
    pub fn list<T: SandboxRecord>(
        &self,
        mut read: impl FnMut(&str) -> Result<Option<T>>,
    ) -> Result<Vec<T>> {
        let listing_error = |e: &std::io::Error| (self.state_error)(&"listing sandboxes", e);
        let entries = std::fs::read_dir(&self.dir).map_err(|e| listing_error(&e))?;
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| listing_error(&e))?;
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            if !is_prefixed_id(&name, self.prefix) {
                continue;
            }
            if let Some(record) = read(&name)? {
                out.push(record);
            }
        }
        out.sort_by(|a, b| (a.created_at_ms(), a.id()).cmp(&(b.created_at_ms(), b.id())));
        Ok(out)
    }
}

fn write_via_temporary(path: &Path, bytes: &[u8], sync: bool) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = dir.join(format!(".tmp-{}", random_hex()?));
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(bytes)?;
        if sync {
            f.sync_all()?;
        }
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    #[test]
    fn writes_whole_files_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("record.json");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
        assert_eq!(names.len(), 1, "no temporary file is left");
        let a = random_hex().unwrap();
        assert_eq!(a.len(), 16);
        assert_ne!(a, random_hex().unwrap());
    }

    #[test]
    fn prefixed_ids_are_strict() {
        assert!(is_prefixed_id("x-0123456789abcdef", "x-"));
        assert!(!is_prefixed_id("x-0123456789ABCDEF", "x-"));
        assert!(!is_prefixed_id("x-0123456789abcde", "x-"));
        assert!(!is_prefixed_id("x-0123456789abcdef0", "x-"));
        assert!(!is_prefixed_id("x-../../../etc/xx", "x-"));
        assert!(!is_prefixed_id("y-0123456789abcdef", "x-"));
        assert!(is_prefixed_id(
            &format!("x-{}", random_hex().unwrap()),
            "x-"
        ));
    }

    #[derive(Debug, serde::Deserialize)]
    struct Rec {
        id: String,
        created_at_ms: u64,
    }

    impl SandboxRecord for Rec {
        fn id(&self) -> &str {
            &self.id
        }
        fn created_at_ms(&self) -> u64 {
            self.created_at_ms
        }
    }

    fn records(dir: &Path) -> SandboxRecords {
        SandboxRecords {
            backend: "test",
            prefix: "t-",
            dir: dir.to_path_buf(),
            state_error: |what, e| BackendError::from_io(what, e),
        }
    }

    fn put(dir: &Path, id: &str, json: &str) {
        std::fs::create_dir_all(dir.join(id)).unwrap();
        std::fs::write(dir.join(id).join("meta.json"), json).unwrap();
    }

    #[test]
    fn records_are_read_checked_and_listed_oldest_first() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, c) = (
            "t-000000000000000a",
            "t-000000000000000b",
            "t-000000000000000c",
        );
        put(
            dir.path(),
            a,
            &format!(r#"{{"id":"{a}","created_at_ms":20}}"#),
        );
        put(
            dir.path(),
            b,
            &format!(r#"{{"id":"{b}","created_at_ms":10}}"#),
        );
        // Half-made: its directory without a record.
        std::fs::create_dir(dir.path().join(c)).unwrap();
        // Not an id: never read.
        put(dir.path(), "other", "not json");
        let records = records(dir.path());

        let r: Rec = records.read(a).unwrap().unwrap();
        assert_eq!((r.id.as_str(), r.created_at_ms), (a, 20));
        assert!(records.read::<Rec>(c).unwrap().is_none());
        assert!(records.read::<Rec>("t-0000000000000000").unwrap().is_none());
        assert!(records.read::<Rec>("other").unwrap().is_none());

        let listed: Vec<String> = records
            .list(|id| records.read::<Rec>(id))
            .unwrap()
            .into_iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(listed, [b, a]);
    }

    #[test]
    fn a_bad_record_is_a_provider_error() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = ("t-000000000000000a", "t-000000000000000b");
        put(dir.path(), a, "{");
        put(
            dir.path(),
            b,
            &format!(r#"{{"id":"{a}","created_at_ms":1}}"#),
        );
        let records = records(dir.path());
        let malformed = records.read::<Rec>(a).unwrap_err();
        assert_eq!(malformed.code(), ErrorCode::Provider);
        assert!(malformed.message().starts_with(&format!(
            "test state: the record of sandbox {a} is malformed"
        )));
        let renamed = records.read::<Rec>(b).unwrap_err();
        assert_eq!(renamed.code(), ErrorCode::Provider);
        assert_eq!(
            renamed.message(),
            format!("test state: the record of sandbox {b}: it names {a:?}")
        );
        assert_eq!(
            records
                .list(|id| records.read::<Rec>(id))
                .unwrap_err()
                .code(),
            ErrorCode::Provider
        );
    }
}
