//! `cleanup`: sweep orphans before a cutoff; pins never outlive their expiry.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::bounds::MAX_PINNED_SNAPSHOTS;
use crate::{InstanceId, InvalidValue, SnapshotId, Timestamp};

/// `cleanup`: `now`, an `orphaned_before` cutoff no later than `now`, and at
/// most 1,024 distinct pinned snapshots.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(try_from = "RawCleanupRequest")]
pub struct CleanupRequest {
    now: Timestamp,
    orphaned_before: Timestamp,
    pinned_snapshots: Vec<SnapshotId>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "CleanupRequest")]
struct RawCleanupRequest {
    now: Timestamp,
    orphaned_before: Timestamp,
    #[serde(default)]
    #[schemars(length(max = 1024))]
    pinned_snapshots: Vec<SnapshotId>,
}

impl TryFrom<RawCleanupRequest> for CleanupRequest {
    type Error = InvalidValue;
    fn try_from(r: RawCleanupRequest) -> Result<Self, Self::Error> {
        Self::new(r.now, r.orphaned_before, r.pinned_snapshots)
    }
}

impl CleanupRequest {
    /// Validates `orphaned_before ≤ now`, at most 1,024 pins, none twice.
    pub fn new(
        now: Timestamp,
        orphaned_before: Timestamp,
        pinned_snapshots: Vec<SnapshotId>,
    ) -> Result<Self, InvalidValue> {
        if orphaned_before > now {
            return Err(InvalidValue::string(
                "orphaned_before",
                &orphaned_before.to_string(),
                format!("is later than now {now}"),
            ));
        }
        if pinned_snapshots.len() > MAX_PINNED_SNAPSHOTS {
            return Err(InvalidValue::value(
                "pinned_snapshots",
                format_args!("of {} entries", pinned_snapshots.len()),
                format!("exceeds {MAX_PINNED_SNAPSHOTS} entries"),
            ));
        }
        for (i, id) in pinned_snapshots.iter().enumerate() {
            if pinned_snapshots[..i].contains(id) {
                return Err(InvalidValue::string(
                    "pinned_snapshots",
                    id.as_str(),
                    "is pinned twice",
                ));
            }
        }
        Ok(Self {
            now,
            orphaned_before,
            pinned_snapshots,
        })
    }

    /// The sweep's notion of the present.
    pub fn now(&self) -> Timestamp {
        self.now
    }

    /// The opportunistic cutoff.
    pub fn orphaned_before(&self) -> Timestamp {
        self.orphaned_before
    }

    /// Snapshots exempt from the cutoff (never from their own expiry).
    pub fn pinned_snapshots(&self) -> &[SnapshotId] {
        &self.pinned_snapshots
    }

    /// Whether a snapshot is pinned.
    pub fn is_pinned(&self, snapshot_id: &SnapshotId) -> bool {
        self.pinned_snapshots.contains(snapshot_id)
    }

    /// Whether an instance allocated at `created_at` and expiring at
    /// `expires_at` is swept: it expired (`expires_at ≤ now`) or it was
    /// allocated before the cutoff.
    pub fn sweeps_instance(&self, created_at: Timestamp, expires_at: Timestamp) -> bool {
        expires_at <= self.now || created_at < self.orphaned_before
    }

    /// Whether a snapshot is swept: its own expiry has passed
    /// (`expires_at ≤ now`, pinned or not — "retention expiry always wins
    /// over the pin"), or it is not pinned and was created before the
    /// cutoff.
    pub fn sweeps_snapshot(
        &self,
        snapshot_id: &SnapshotId,
        created_at: Timestamp,
        expires_at: Timestamp,
    ) -> bool {
        expires_at <= self.now
            || (!self.is_pinned(snapshot_id) && created_at < self.orphaned_before)
    }
}

/// `cleanup`'s result: the ids destroyed, as two arrays.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CleanupResult {
    /// Instances destroyed.
    pub instances: Vec<InstanceId>,
    /// Snapshots destroyed.
    pub snapshots: Vec<SnapshotId>,
}
