//! What a sandbox is to a backend: the create request and the sandbox record.

use std::collections::BTreeMap;
use std::time::Duration;

use corral_contract::Environment;
use serde::{Deserialize, Serialize};

use crate::error::{RequestError, Result};
use crate::key::SandboxKey;
pub use crate::labels::Labels;

/// The label every sandbox created through corral carries.
pub const CORRAL_LABEL: &str = "corral";

/// A sandbox's id, as its backend assigned it.
pub type SandboxId = String;

/// Whether a backend enforces unique keys itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyMode {
    /// The backend refuses a second sandbox with the same key (`conflict`).
    Exact,
    /// The backend cannot refuse duplicates: get-or-create finds then creates,
    /// and two racing callers may both create.
    BestEffort,
}

/// The compute size asked for. Every field left `None` means "the backend's
/// documented default"; a field set that the backend cannot enforce makes
/// `create` fail with `unsupported`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Size {
    /// CPU cores (fractions allowed), enforced as a quota.
    pub cpus: Option<f64>,
    /// Memory ceiling in bytes, without swap.
    pub memory_bytes: Option<u64>,
    /// Writable disk ceiling in bytes.
    pub disk_bytes: Option<u64>,
}

impl Size {
    /// True when nothing is asked for.
    pub fn is_unset(&self) -> bool {
        self.cpus.is_none() && self.memory_bytes.is_none() && self.disk_bytes.is_none()
    }
}

/// Limits beyond size.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Maximum number of processes (and threads) alive at once.
    pub pids: Option<u64>,
}

impl Limits {
    /// True when nothing is asked for.
    pub fn is_unset(&self) -> bool {
        self.pids.is_none()
    }
}

pub use crate::destination::Destination;

/// The network a sandbox gets.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "mode")]
pub enum Network {
    /// Whatever the backend gives by default (documented per backend). Asks
    /// for no enforcement.
    #[default]
    Default,
    /// No network at all (loopback only).
    None,
    /// Only these destinations are reachable, enforced by the kernel or the platform.
    Allowlist {
        /// The reachable destinations.
        destinations: Vec<Destination>,
    },
}

/// Everything `create` may be asked for.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CreateRequest {
    /// Compute size.
    pub size: Size,
    /// Environment every command in the sandbox starts with (its keys and
    /// values were checked where it was made).
    pub env: Environment,
    /// The network policy.
    pub network: Network,
    /// Ports to make reachable through `preview_url`.
    pub ports: Vec<u16>,
    /// Limits beyond size.
    pub limits: Limits,
    /// Labels to attach.
    pub labels: Labels,
    /// Restore from this snapshot instead of starting empty.
    pub snapshot: Option<String>,
    /// Destroy the sandbox after this long without any operation.
    #[serde(with = "opt_duration_ms")]
    pub idle_timeout: Option<Duration>,
    /// Destroy the sandbox this long after creation, whatever happens.
    #[serde(with = "opt_duration_ms")]
    pub timeout: Option<Duration>,
    /// A caller-chosen unique name for get-or-create.
    pub key: Option<SandboxKey>,
    /// The image to start from, where the backend has images (`None` = its default).
    pub image: Option<String>,
    /// End the sandbox when the process that created it ends, however it
    /// ends (`kill -9` included): for ephemeral sandboxes such as `corral
    /// run`'s. Declared by [`crate::Enforceable::bound_to_creator`].
    #[serde(default)]
    pub bound_to_creator: bool,
    /// Host directories bound into the sandbox, each checked where it was
    /// made. Declared by [`crate::Capabilities::binds`]; absent from older
    /// requests, which decode with none.
    #[serde(default)]
    pub binds: crate::HostBinds,
}

impl CreateRequest {
    /// Checks what every backend must refuse before allocating anything: a
    /// malformed size or port. The key, labels and environment need no
    /// check: [`SandboxKey`], [`Labels`] and [`Environment`] are valid from
    /// the moment they exist.
    pub fn validate(&self) -> Result<()> {
        if let Some(cpus) = self.size.cpus
            && !(cpus.is_finite() && cpus > 0.0)
        {
            return Err(RequestError::Cpus {
                cpus: cpus.to_string(),
            }
            .into());
        }
        for port in &self.ports {
            if *port == 0 {
                return Err(RequestError::PortZero.into());
            }
        }
        Ok(())
    }
}

/// Whether a sandbox can run commands right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxStatus {
    /// Running: commands may be executed.
    Running,
    /// Paused: its processes are frozen until `resume`.
    Paused,
    /// Dead: its init is gone (killed from outside, or by the OOM killer),
    /// so no command can run; `gc` reclaims what it still holds.
    Dead,
}

/// What a backend knows of one sandbox.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SandboxInfo {
    /// The id, unique within the backend.
    pub id: SandboxId,
    /// The backend's name.
    pub backend: String,
    /// The get-or-create key, if one was given.
    pub key: Option<SandboxKey>,
    /// The labels.
    pub labels: Labels,
    /// Running or paused.
    pub status: SandboxStatus,
    /// Creation time, epoch milliseconds.
    pub created_at_ms: u64,
    /// When the sandbox will be destroyed by its `timeout`, epoch milliseconds.
    pub expires_at_ms: Option<u64>,
}

/// Whether `labels` holds every pair of `wanted`.
pub fn labels_match(labels: &Labels, wanted: &Labels) -> bool {
    labels.matches(wanted)
}

/// A URL through which a sandbox's port is reachable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreviewUrl {
    /// The URL.
    pub url: String,
    /// Headers a client must send with each request.
    pub headers: BTreeMap<String, String>,
    /// When the URL stops working, epoch milliseconds.
    pub expires_at_ms: Option<u64>,
}

mod opt_duration_ms {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&(d.as_millis() as u64)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<u64>::deserialize(d)?.map(Duration::from_millis))
    }
}

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// The directory every backend creates in a new sandbox and runs commands
/// in when no working directory is given; also `HOME`.
pub const WORKSPACE_DIR: &str = "/workspace";

/// The `PATH` a command gets when the caller's environment sets none.
pub const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_bad_labels_env_and_keys() {
        assert!(Labels::new().with("a b", "x").is_err());
        assert!(Labels::new().with("", "x").is_err());
        assert!(Labels::new().with("ok", "line\nbreak").is_err());
        assert!(Labels::new().with("corral.dev/owner", "me").is_ok());
        assert!(Environment::new().with("1A", "x").is_err());
        assert!(Environment::new().with("A-B", "x").is_err());
        assert!(Environment::new().with("A", "x\0y").is_err());
        assert!(Environment::new().with("_A1", "").is_ok());
        assert!(SandboxKey::new("").is_err());
    }

    #[test]
    fn labels_match_is_subset() {
        let mut l = Labels::new();
        l.insert("a", "1").unwrap();
        l.insert("b", "2").unwrap();
        let mut w = Labels::new();
        assert!(labels_match(&l, &w));
        w.insert("a", "1").unwrap();
        assert!(labels_match(&l, &w));
        w.insert("c", "3").unwrap();
        assert!(!labels_match(&l, &w));
    }
}
