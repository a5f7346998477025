//! `release`: durable instances settle a snapshot, ZDR instances vanish.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::capabilities::RetentionMode;
use crate::error::ProtocolViolation;
use crate::{InstanceId, InvalidValue, SnapshotRef, Timestamp};

/// `release`: end an active instance according to its retention.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReleaseRequest {
    /// The instance.
    pub instance_id: InstanceId,
    /// The retention deadline of the snapshot a durable release settles;
    /// absent for an `ephemeral_zdr` instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_expires_at: Option<Timestamp>,
}

/// How a release settled. Wire form tagged by `disposition`:
/// `{"disposition":"released","snapshot":{…}}` or
/// `{"disposition":"destroyed"}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, JsonSchema)]
#[serde(tag = "disposition", rename_all = "snake_case", deny_unknown_fields)]
pub enum ReleaseDisposition {
    /// Durable: the instance's state lives on in this snapshot.
    Released {
        /// The settled snapshot (boxed: it is by far the larger variant).
        snapshot: Box<SnapshotRef>,
    },
    /// ZDR: every trace is destroyed.
    Destroyed,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
enum DispositionTag {
    Released,
    Destroyed,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDisposition {
    disposition: DispositionTag,
    #[serde(default)]
    snapshot: Option<Box<SnapshotRef>>,
}

impl<'de> Deserialize<'de> for ReleaseDisposition {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let raw = RawDisposition::deserialize(deserializer)?;
        match (raw.disposition, raw.snapshot) {
            (DispositionTag::Released, Some(snapshot)) => Ok(Self::Released { snapshot }),
            (DispositionTag::Destroyed, None) => Ok(Self::Destroyed),
            (DispositionTag::Released, None) => Err(D::Error::custom(InvalidValue::rule(
                "snapshot",
                "is missing (a released disposition carries its snapshot)",
            ))),
            (DispositionTag::Destroyed, Some(_)) => Err(D::Error::custom(InvalidValue::rule(
                "snapshot",
                "is present but the disposition is destroyed",
            ))),
        }
    }
}

impl ReleaseDisposition {
    /// The Runner's check: `released` only for `durable`, `destroyed` only
    /// for `ephemeral_zdr`.
    pub fn validate_for(&self, retention: RetentionMode) -> Result<(), ProtocolViolation> {
        match (self, retention) {
            (Self::Released { .. }, RetentionMode::Durable)
            | (Self::Destroyed, RetentionMode::EphemeralZdr) => Ok(()),
            (Self::Released { .. }, RetentionMode::EphemeralZdr) => Err(ProtocolViolation::new(
                "disposition",
                "destroyed (retention ephemeral_zdr)",
                "released",
            )),
            (Self::Destroyed, RetentionMode::Durable) => Err(ProtocolViolation::new(
                "disposition",
                "released (retention durable)",
                "destroyed",
            )),
        }
    }
}
