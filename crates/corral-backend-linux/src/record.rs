//! The record of one sandbox (`<sandbox>/meta.json`) and the names every
//! piece of a sandbox is known by: the backend's name and the sandbox id.
//!
//! Low-level: a record is data. What it means on the host now (running,
//! paused, dead, expired) is read above it, in [`crate::state`]; the
//! modules that make a sandbox's pieces (its disk, its image, its user
//! namespace) read the record without depending on the state directory.

use corral_backend::statefile::{SandboxRecord, is_prefixed_id};
use corral_backend::{BackendError, Labels, SandboxError, SandboxInfo, SandboxStatus};
use serde::{Deserialize, Serialize};

/// The backend's name.
pub const NAME: &str = "linux";
/// What every sandbox id starts with.
pub const SANDBOX_PREFIX: &str = "lnx-";

/// The image a sandbox runs when the request names none (its record's
/// `image` then).
pub const HOST_IMAGE: &str = "host";

/// Whether `s` is a well-formed sandbox id; nothing else is joined into a path.
pub fn is_sandbox_id(s: &str) -> bool {
    is_prefixed_id(s, SANDBOX_PREFIX)
}

/// The file system a sandbox's writable layer is (see [`crate::disk`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DiskLayer {
    /// ext4 in a loop-mounted image file on the host's disk.
    Ext4,
    /// A tmpfs: every byte written is memory. What records written before
    /// the ext4 layer existed had.
    #[default]
    Tmpfs,
}

/// The on-disk record of one sandbox.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Meta {
    /// Its id.
    pub id: String,
    /// Its get-or-create key.
    pub key: Option<corral_backend::SandboxKey>,
    /// Its labels.
    pub labels: Labels,
    /// Creation time, epoch milliseconds.
    pub created_at_ms: u64,
    /// The environment every command starts with.
    pub env: corral_backend::Environment,
    /// Whether `network: none` was asked for (it is what every sandbox gets).
    pub network_none: bool,
    /// Host pid of the sandbox's PID 1.
    pub init_pid: u32,
    /// Its start time (clock ticks since boot), to never signal a reused pid.
    pub init_start: u64,
    /// Size of the sandbox's writable layer in bytes.
    pub disk_bytes: u64,
    /// The file system of its writable layer.
    #[serde(default)]
    pub disk_layer: DiskLayer,
    /// Why that layer is not ext4, when it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_fallback: Option<String>,
    /// The digest of the image it runs.
    #[serde(default)]
    pub image: String,
    /// When its `timeout` ends it, epoch milliseconds.
    #[serde(default)]
    pub expires_at_ms: Option<u64>,
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
    /// Whether its lifetime (`timeout`) is over at `now_ms`.
    pub fn expired_at(&self, now_ms: u64) -> bool {
        self.expires_at_ms.is_some_and(|t| now_ms >= t)
    }

    /// The refusal of an operation on this sandbox once its PID 1 is gone.
    pub fn dead_error(&self) -> BackendError {
        SandboxError::Dead {
            id: self.id.clone(),
            init_pid: self.init_pid,
        }
        .into()
    }

    /// The record as the `Backend` trait reports it.
    pub fn info(&self) -> SandboxInfo {
        SandboxInfo {
            id: self.id.clone(),
            backend: NAME.to_string(),
            key: self.key.clone(),
            labels: self.labels.clone(),
            status: SandboxStatus::Running,
            created_at_ms: self.created_at_ms,
            expires_at_ms: self.expires_at_ms,
        }
    }
}
