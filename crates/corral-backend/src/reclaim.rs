//! The optional `reclaim` member: taking back what crashed processes left.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::error::Result;

/// Reclaims what crashed processes left behind in a backend's state —
/// sandboxes that are no longer live or were never finished, and whatever
/// host state they held. Live sandboxes are never touched. Idempotent: a
/// second pass finds nothing the first one left reclaimable.
#[async_trait]
pub trait Reclaim: Send + Sync {
    /// Runs one reclaim pass and says what it took back.
    async fn reclaim(&self) -> Result<ReclaimReport>;
}

/// What one reclaim pass did, backend-neutral, with what only some
/// backends keep in [`ReclaimReport::detail`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReclaimReport {
    /// The ids of the sandboxes reclaimed.
    pub sandboxes: Vec<String>,
    /// What could not be reclaimed, one line each; the pass goes on with
    /// the others and a next pass retries them.
    pub errors: Vec<String>,
    /// What kind of state the backend reclaims, with its counts.
    pub detail: ReclaimDetail,
}

/// What kind of state a backend's reclaim pass takes back.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReclaimDetail {
    /// Only half-created sandboxes (and directories of interrupted
    /// destroys) of a backend whose finished sandboxes outlive crashes
    /// unharmed.
    #[default]
    HalfCreated,
    /// Every piece of host state of sandboxes that are not live.
    HostState(HostStateReclaim),
}

/// The host state a [`ReclaimDetail::HostState`] pass took back beside
/// the sandboxes themselves.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostStateReclaim {
    /// Live sandboxes left alone.
    pub spared: Vec<String>,
    /// Orphaned init processes killed.
    pub processes_killed: usize,
    /// Mounts detached outside a sandbox teardown.
    pub mounts_detached: usize,
    /// Sandbox cgroups with no sandbox left removed.
    pub cgroups: Vec<String>,
    /// Stale key claims removed.
    pub key_claims: usize,
    /// Host firewall tables of sandboxes whose link is gone removed.
    pub tables: Vec<String>,
    /// Half-built snapshots a crashed capture left removed.
    pub snapshot_temporaries: usize,
}
