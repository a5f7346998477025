//! The state file: what the service must remember of its sandboxes across
//! a restart of `corral serve` (template, metadata, creation order, start
//! and end times), written atomically after every change, read once at
//! start ([`crate::E2bService::restore`]). It holds no token: a sandbox's
//! envd access token is derived again from the API key and its id
//! ([`crate::access_token`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::control::create::{metadata_labels, template_image};

/// The state file's format version.
pub const VERSION: u32 = 1;

/// The largest state file read, in bytes: far more than any number of
/// sandboxes one server holds, and a bound on a tampered one.
pub const MAX_STATE_BYTES: u64 = 64 * 1024 * 1024;

/// The longest sandbox id taken from the state file.
const MAX_ID_BYTES: usize = 128;

/// One sandbox as the state file keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Saved {
    /// The backend's id, E2B's `sandboxID`.
    pub id: String,
    /// The template it was made from.
    pub template: String,
    /// Creation order, for listing and paging.
    pub seq: u64,
    /// Creation time, epoch milliseconds.
    pub started_at_ms: u64,
    /// When it is destroyed, epoch milliseconds.
    pub end_at_ms: u64,
    /// E2B's metadata.
    pub metadata: BTreeMap<String, String>,
}

/// The whole file.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StateFile {
    version: u32,
    sandboxes: Vec<Saved>,
}

/// Why a state file was not taken.
#[derive(Debug, thiserror::Error)]
pub enum StateFileError {
    /// It could not be read.
    #[error("reading the E2B state file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// It is not a state file this version writes, or a record in it is
    /// not one it would write.
    #[error("the E2B state file {path} is not valid ({detail}): its records are dropped")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        detail: String,
    },
    /// It could not be written.
    #[error("writing the E2B state file {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

/// The state file of a server of `backend` admitting `api_key`, in the
/// state directory `dir`: `dir/e2b/<backend>-<16 hex digits of the key's
/// SHA-256>.json`, so that a server restarted with the same token file
/// finds its records, and servers with other keys keep theirs apart.
pub fn file_in(dir: &Path, backend: &str, api_key: &corral_wire::Token) -> PathBuf {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(api_key.header_value().as_bytes());
    let key = hex::encode(&digest[..8]);
    dir.join("e2b").join(format!("{backend}-{key}.json"))
}

/// Reads the records of `path`; a file that does not exist holds none.
/// Each record is checked as create checks what it is made from.
pub fn load(path: &Path) -> Result<Vec<Saved>, StateFileError> {
    let invalid = |detail: String| StateFileError::Invalid {
        path: path.to_path_buf(),
        detail,
    };
    let read = |source| StateFileError::Read {
        path: path.to_path_buf(),
        source,
    };
    let bytes = match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(read(e)),
        Ok(meta) if meta.len() > MAX_STATE_BYTES => {
            return Err(invalid(format!("larger than {MAX_STATE_BYTES} bytes")));
        }
        Ok(_) => std::fs::read(path).map_err(read)?,
    };
    let file: StateFile = serde_json::from_slice(&bytes).map_err(|e| invalid(e.to_string()))?;
    if file.version != VERSION {
        return Err(invalid(format!(
            "version {} is not {VERSION}",
            file.version
        )));
    }
    for saved in &file.sandboxes {
        check(saved).map_err(|e| invalid(format!("sandbox {:?}: {e}", saved.id)))?;
    }
    Ok(file.sandboxes)
}

/// Whether a record is one create could have made.
fn check(saved: &Saved) -> Result<(), String> {
    let id_ok = !saved.id.is_empty()
        && saved.id.len() <= MAX_ID_BYTES
        && saved
            .id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !id_ok {
        return Err("the id is not a sandbox id".into());
    }
    template_image(&saved.template).map_err(|e| e.to_string())?;
    metadata_labels(&saved.metadata).map_err(|e| e.to_string())?;
    Ok(())
}

/// Writes `sandboxes` to `path` atomically (a reader, or a restart, sees
/// the old file or the new one), making its directory where missing; with
/// no sandboxes, removes it (a server started with a fresh key each time
/// leaves no file behind once its sandboxes are gone).
pub fn store(path: &Path, sandboxes: Vec<Saved>) -> Result<(), StateFileError> {
    let write = |source| StateFileError::Write {
        path: path.to_path_buf(),
        source,
    };
    if sandboxes.is_empty() {
        return match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(write(e)),
            _ => Ok(()),
        };
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(write)?;
    }
    let file = StateFile {
        version: VERSION,
        sandboxes,
    };
    let bytes = serde_json::to_vec(&file).map_err(|e| write(std::io::Error::other(e)))?;
    corral_backend::statefile::write_atomic_unsynced(path, &bytes).map_err(write)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn saved(id: &str) -> Saved {
        Saved {
            id: id.into(),
            template: "base".into(),
            seq: 3,
            started_at_ms: 1,
            end_at_ms: 2,
            metadata: BTreeMap::from([("k".into(), "v".into())]),
        }
    }

    #[test]
    fn a_stored_file_loads_as_it_was_and_a_missing_one_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("e2b/state.json");
        assert!(load(&path).unwrap().is_empty());
        store(&path, vec![saved("sb-1"), saved("sb-2")]).unwrap();
        assert_eq!(load(&path).unwrap(), vec![saved("sb-1"), saved("sb-2")]);
        store(&path, Vec::new()).unwrap();
        assert!(!path.exists(), "an empty state is no file");
        store(&path, Vec::new()).unwrap();
    }

    /// A tampered file: what it holds, and what the refusal names.
    #[test]
    fn a_tampered_file_is_refused_in_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        let bad_id = serde_json::to_string(&StateFile {
            version: VERSION,
            sandboxes: vec![saved("../../etc")],
        })
        .unwrap();
        let mut bad_template = saved("sb-1");
        bad_template.template = "\u{7}".into();
        let bad_template = serde_json::to_string(&StateFile {
            version: VERSION,
            sandboxes: vec![bad_template],
        })
        .unwrap();
        let rows: [(&[u8], &str); 6] = [
            (b"\x00\xffgarbage", "is not valid"),
            (b"", "EOF while parsing"),
            (br#"{"version":2,"sandboxes":[]}"#, "version 2 is not 1"),
            (
                br#"{"version":1,"sandboxes":[],"token":"x"}"#,
                "unknown field",
            ),
            (bad_id.as_bytes(), "the id is not a sandbox id"),
            (bad_template.as_bytes(), "templateID"),
        ];
        for (bytes, says) in rows {
            std::fs::write(&path, bytes).unwrap();
            let e = load(&path).unwrap_err().to_string();
            assert!(e.contains(says), "{e:?} does not say {says:?}");
            assert!(!e.contains('\n'), "{e:?} is more than one line");
        }
    }
}
