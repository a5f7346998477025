//! The state directory: where sandboxes, snapshots and key claims live, and
//! the small on-disk records that describe them.
//!
//! ```text
//! <state>/sandboxes/<id>/meta.json   the sandbox record, written last (the commit point)
//! <state>/sandboxes/<id>/claim       hex sha-256 of its key, when it has one
//! <state>/sandboxes/<id>/root/       the sandbox's file system view
//! <state>/keys/<hex sha-256 of key>  the key claim, holding the owning sandbox id
//! <state>/snapshots/<id>.tar.zst     a snapshot's archive
//! <state>/snapshots/<id>.json        its record, written last (the commit point)
//! ```
//!
//! Every record is read from disk on every call: another process using the
//! same state directory sees the same sandboxes.

use std::path::{Path, PathBuf};

pub(crate) use corral_backend::statefile::{random_hex, write_atomic};

use corral_backend::statefile::{SandboxRecord, SandboxRecords, is_prefixed_id};
use corral_backend::{BackendError, Labels, PlatformError, Result, SandboxInfo, SandboxStatus};
use serde::{Deserialize, Serialize};

/// What every sandbox id starts with.
pub const SANDBOX_PREFIX: &str = "loc-";
/// What every snapshot id starts with.
pub(crate) const SNAPSHOT_PREFIX: &str = "locsnap-";
/// The backend's name.
pub(crate) const NAME: &str = "local";

/// The layout of one state directory.
#[derive(Debug, Clone)]
pub(crate) struct State {
    dir: PathBuf,
}

impl State {
    /// Opens (creating as needed) the state directory `dir`.
    pub(crate) fn open(dir: PathBuf) -> std::io::Result<Self> {
        let state = State { dir };
        for sub in [state.sandboxes(), state.snapshots(), state.keys()] {
            std::fs::create_dir_all(sub)?;
        }
        Ok(state)
    }

    /// The state directory itself.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where sandboxes live.
    pub(crate) fn sandboxes(&self) -> PathBuf {
        self.dir.join("sandboxes")
    }

    /// Where snapshots live.
    pub(crate) fn snapshots(&self) -> PathBuf {
        self.dir.join("snapshots")
    }

    /// Where key claims live.
    pub(crate) fn keys(&self) -> PathBuf {
        self.dir.join("keys")
    }

    /// The directory of sandbox `id` (which must be a well-formed id).
    pub(crate) fn sandbox_dir(&self, id: &str) -> PathBuf {
        debug_assert!(is_sandbox_id(id));
        self.sandboxes().join(id)
    }

    /// The host directory behind the sandbox's `/`.
    pub(crate) fn root_dir(&self, id: &str) -> PathBuf {
        self.sandbox_dir(id).join("root")
    }

    /// The record of sandbox `id`.
    pub(crate) fn meta_path(&self, id: &str) -> PathBuf {
        self.sandbox_dir(id).join("meta.json")
    }

    /// The key-claim marker of sandbox `id`.
    pub(crate) fn claim_path(&self, id: &str) -> PathBuf {
        self.sandbox_dir(id).join("claim")
    }
}

/// The on-disk record of one sandbox.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Meta {
    /// Its id.
    pub(crate) id: String,
    /// Its get-or-create key.
    pub(crate) key: Option<corral_backend::SandboxKey>,
    /// Its labels.
    pub(crate) labels: Labels,
    /// Creation time, epoch milliseconds.
    pub(crate) created_at_ms: u64,
    /// The environment every command starts with.
    pub(crate) env: corral_backend::Environment,
    /// Every command runs without network (`network: none`).
    #[serde(default)]
    pub(crate) network_none: bool,
    /// The ports declared at create, reachable through `preview_url`.
    #[serde(default)]
    pub(crate) ports: Vec<u16>,
}

impl SandboxRecord for Meta {
    fn id(&self) -> &str {
        &self.id
    }

    fn created_at_ms(&self) -> u64 {
        self.created_at_ms
    }
}

impl Meta {
    /// The record as the `Backend` trait reports it.
    pub(crate) fn info(&self) -> SandboxInfo {
        SandboxInfo {
            id: self.id.clone(),
            backend: NAME.to_string(),
            key: self.key.clone(),
            labels: self.labels.clone(),
            status: SandboxStatus::Running,
            created_at_ms: self.created_at_ms,
            expires_at_ms: None,
        }
    }
}

/// Whether `s` is a well-formed sandbox id. Anything else is never joined
/// into a path: it names no sandbox.
pub(crate) fn is_sandbox_id(s: &str) -> bool {
    is_prefixed_id(s, SANDBOX_PREFIX)
}

/// Whether `s` is a well-formed snapshot id.
pub(crate) fn is_snapshot_id(s: &str) -> bool {
    is_prefixed_id(s, SNAPSHOT_PREFIX)
}

/// An error of the state directory itself, naming what was being done.
pub(crate) fn state_error(what: impl std::fmt::Display, err: &std::io::Error) -> BackendError {
    let mut e = PlatformError::io(format_args!("local state: {what}"), err);
    // A missing state entry is a defect of the state, not a missing object
    // the caller asked about; callers map real absences themselves: it is
    // reported as an `io` failure, not `not_found`.
    if let PlatformError::Io { kind, .. } = &mut e
        && *kind == std::io::ErrorKind::NotFound
    {
        *kind = std::io::ErrorKind::Other;
    }
    e.into()
}

/// The records of the sandboxes of `state`.
fn records(state: &State) -> SandboxRecords {
    SandboxRecords {
        backend: NAME,
        prefix: SANDBOX_PREFIX,
        dir: state.sandboxes(),
        state_error: |what, err| state_error(what, err),
    }
}

/// The record of sandbox `id`; `None` when there is no such sandbox or it
/// was never completely created.
pub(crate) fn read_meta(state: &State, id: &str) -> Result<Option<Meta>> {
    records(state).read(id)
}

/// The record of sandbox `id`, or `not_found`.
pub(crate) fn require_meta(state: &State, id: &str) -> Result<Meta> {
    read_meta(state, id)?.ok_or_else(|| BackendError::sandbox_not_found(id))
}

/// Every completely created sandbox, oldest first.
pub(crate) fn list_metas(state: &State) -> Result<Vec<Meta>> {
    records(state).list(|id| read_meta(state, id))
}

/// The state directory used when none is given: `$CORRAL_STATE_DIR`, else
/// `$XDG_STATE_HOME/corral`, else `$HOME/.local/state/corral`, else
/// `/var/lib/corral` (root without a home).
pub(crate) fn default_state_dir() -> PathBuf {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var("CORRAL_STATE_DIR") {
        return PathBuf::from(dir);
    }
    if let Some(dir) = var("XDG_STATE_HOME") {
        return PathBuf::from(dir).join("corral");
    }
    if let Some(home) = var("HOME") {
        return PathBuf::from(home).join(".local/state/corral");
    }
    PathBuf::from("/var/lib/corral")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_strict() {
        assert!(is_sandbox_id("loc-0123456789abcdef"));
        assert!(!is_sandbox_id("loc-0123456789ABCDEF"));
        assert!(!is_sandbox_id("loc-0123456789abcde"));
        assert!(!is_sandbox_id("loc-../../../etc/x"));
        assert!(!is_sandbox_id("never-existed"));
        assert!(is_snapshot_id("locsnap-0123456789abcdef"));
        assert!(!is_snapshot_id("loc-0123456789abcdef"));
        let r = random_hex().unwrap();
        assert!(is_sandbox_id(&format!("{SANDBOX_PREFIX}{r}")));
    }
}
