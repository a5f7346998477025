//! The instance a provider returns, and its materialization record.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::capabilities::{Placement, Platform};
use crate::lifecycle::InstanceState;
use crate::{
    AttemptId, Digest, ImageReference, InstanceId, LeaseEpoch, LeaseId, Mounts, ProviderId,
    Revision, RunId, SandboxPath, SandboxProfile, SandboxProviderCapabilities,
    SandboxProvisionRequest, SessionId, TargetId, Timestamp, WorkspaceId,
};

/// How the instance's root filesystem was materialized. Each of its five
/// fields is one identity check.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Materialization {
    /// Equal to the profile's derived image digest (`profile.digest`).
    pub profile_digest: Digest,
    /// Equal to `root_image`.
    pub image_reference: ImageReference,
    /// Equal to the digest suffix of `root_image` — derived from it, not
    /// reported by an image store.
    pub image_digest: Digest,
    /// Equal to the provider's advertised `provider_revision`.
    pub provider_revision: Revision,
    /// Equal to the provider's advertised `materialization_revision`.
    pub materialization_revision: Revision,
}

impl Materialization {
    /// The only materialization record the identity check accepts for this
    /// request and envelope.
    pub fn expected(
        request: &SandboxProvisionRequest,
        capabilities: &SandboxProviderCapabilities,
    ) -> Self {
        Self {
            profile_digest: request.profile.digest.clone(),
            image_reference: request.root_image.clone(),
            image_digest: request.root_image.digest(),
            provider_revision: capabilities.provider_revision.clone(),
            materialization_revision: capabilities.materialization_revision.clone(),
        }
    }
}

/// A live instance, as `provision`, `activate` and `resume` return it.
///
/// Seventeen top-level fields are identity (see [`crate::identity_mismatches`]);
/// `instance_id` is not one of them: it is the provider's name for the
/// allocation, which the Runner learns here and uses to address it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxInstance {
    /// The provider's identifier of this instance (not an identity check).
    pub instance_id: InstanceId,
    /// Identity: equal to the request's.
    pub provider: ProviderId,
    /// Identity: equal to the request's.
    pub placement: Placement,
    /// Identity: `provisioning` from `provision`, `active` from `activate`
    /// and `resume`.
    pub state: InstanceState,
    /// Identity: equal to the request's.
    pub workspace_id: WorkspaceId,
    /// Identity: equal to the request's.
    pub session_id: SessionId,
    /// Identity: equal to the request's.
    pub run_id: RunId,
    /// Identity: equal to the request's.
    pub attempt_id: AttemptId,
    /// Identity: equal to the request's.
    pub lease_id: LeaseId,
    /// Identity: equal to the request's.
    pub lease_epoch: LeaseEpoch,
    /// Identity: equal to the request's.
    pub target: TargetId,
    /// Identity: equal to the request's.
    pub profile: SandboxProfile,
    /// Identity: equal to the request's.
    pub platform: Platform,
    /// Identity: equal to the request's.
    pub root_image: ImageReference,
    /// Identity: equal to the request's.
    pub mounts: Mounts,
    /// Identity: always `/mnt/session/outputs`.
    pub output_path: SandboxPath,
    /// Identity: equal to the request's, unchanged — not the deadline the
    /// platform actually assigned.
    pub expires_at: Timestamp,
    /// Identity: five checks, see [`Materialization`].
    pub materialization: Materialization,
}

impl SandboxInstance {
    /// The instance that passes every identity check for `request` under
    /// `capabilities`, in `state`, named `instance_id` — what an adapter
    /// should return.
    pub fn for_request(
        instance_id: InstanceId,
        request: &SandboxProvisionRequest,
        capabilities: &SandboxProviderCapabilities,
        state: InstanceState,
    ) -> Self {
        Self {
            instance_id,
            provider: request.provider.clone(),
            placement: request.placement,
            state,
            workspace_id: request.workspace_id.clone(),
            session_id: request.session_id.clone(),
            run_id: request.run_id.clone(),
            attempt_id: request.attempt_id.clone(),
            lease_id: request.lease_id.clone(),
            lease_epoch: request.lease_epoch,
            target: request.target.clone(),
            profile: request.profile.clone(),
            platform: request.platform,
            root_image: request.root_image.clone(),
            mounts: request.mounts.clone(),
            output_path: SandboxPath::output_path(),
            expires_at: request.expires_at,
            materialization: Materialization::expected(request, capabilities),
        }
    }

    /// The same instance in another state (what `activate` returns).
    #[must_use]
    pub fn with_state(mut self, state: InstanceState) -> Self {
        self.state = state;
        self
    }

    /// The profile's retention mode.
    pub fn retention(&self) -> crate::RetentionMode {
        self.profile.retention
    }
}
