//! `provision`: the request every instance is cross-checked against.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::capabilities::{Placement, Platform};
use crate::{
    AttemptId, ImageReference, LeaseEpoch, LeaseId, Mounts, ProviderId, RunId, SandboxProfile,
    SessionId, TargetId, Timestamp, WorkspaceId,
};

/// What the Runner asks a provider to allocate. Every field except the
/// provider-computed ones reappears verbatim in the returned
/// [`crate::SandboxInstance`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxProvisionRequest {
    /// The selected provider.
    pub provider: ProviderId,
    /// The selected placement.
    pub placement: Placement,
    /// The Workspace.
    pub workspace_id: WorkspaceId,
    /// The Session.
    pub session_id: SessionId,
    /// The Run.
    pub run_id: RunId,
    /// The attempt of the Run.
    pub attempt_id: AttemptId,
    /// The lease the Runner holds.
    pub lease_id: LeaseId,
    /// The lease's epoch.
    pub lease_epoch: LeaseEpoch,
    /// The execution target.
    pub target: TargetId,
    /// The profile.
    pub profile: SandboxProfile,
    /// The platform to run on.
    pub platform: Platform,
    /// The root image, pinned by digest.
    pub root_image: ImageReference,
    /// The declared mounts.
    pub mounts: Mounts,
    /// The instance's hard expiry; must come back unchanged.
    pub expires_at: Timestamp,
}
