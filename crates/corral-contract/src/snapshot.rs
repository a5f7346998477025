//! `snapshot`, `cloneSnapshot` and `resume`: snapshot identity and its checks.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::capabilities::Placement;
use crate::identity::{Checks, Mismatch, render};
use crate::macros::vocabulary;
use crate::{
    Digest, InstanceId, ProfileId, ProfileVersion, ProviderId, SandboxInstance,
    SandboxProvisionRequest, SessionId, SnapshotId, Timestamp, WorkspaceId,
};

/// `snapshot`: capture an active, durable instance under a retention deadline.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SnapshotRequest {
    /// The instance to capture.
    pub instance_id: InstanceId,
    /// The snapshot's own retention deadline, independent of the instance's
    /// expiry; must come back exactly.
    pub expires_at: Timestamp,
}

/// A snapshot, as `snapshot`, `cloneSnapshot` and a durable `release` return
/// it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SnapshotRef {
    /// The provider's identifier of the snapshot.
    pub snapshot_id: SnapshotId,
    /// The provider that holds it.
    pub provider: ProviderId,
    /// Its placement.
    pub placement: Placement,
    /// The instance it was captured from.
    pub source_instance_id: InstanceId,
    /// The Workspace.
    pub workspace_id: WorkspaceId,
    /// The Session it is bound to.
    pub session_id: SessionId,
    /// The profile's id.
    pub profile_id: ProfileId,
    /// The profile's version.
    pub profile_version: ProfileVersion,
    /// The profile's derived image digest.
    pub profile_digest: Digest,
    /// Its retention deadline.
    pub expires_at: Timestamp,
    /// When it was captured.
    pub created_at: Timestamp,
}

vocabulary! {
    /// A field of a [`SnapshotRef`] a check can refuse.
    pub enum SnapshotField: "snapshot field" {
        /// `snapshot_id`.
        SnapshotId = "snapshot_id",
        /// `provider`.
        Provider = "provider",
        /// `placement`.
        Placement = "placement",
        /// `source_instance_id`.
        SourceInstanceId = "source_instance_id",
        /// `workspace_id`.
        WorkspaceId = "workspace_id",
        /// `session_id`.
        SessionId = "session_id",
        /// `profile_id`.
        ProfileId = "profile_id",
        /// `profile_version`.
        ProfileVersion = "profile_version",
        /// `profile_digest`.
        ProfileDigest = "profile_digest",
        /// `expires_at`.
        ExpiresAt = "expires_at",
        /// `created_at`.
        CreatedAt = "created_at",
    }
}

/// A failed snapshot check.
pub type SnapshotMismatch = Mismatch<SnapshotField>;

/// The `snapshot` checks: the ref agrees with its source instance on
/// provider, placement, `source_instance_id` (the requested instance), `workspace_id`, `session_id`,
/// `profile_id`, `profile_version` and `profile_digest`, and carries exactly
/// the requested `expires_at`.
pub fn snapshot_mismatches(
    request: &SnapshotRequest,
    source: &SandboxInstance,
    snapshot: &SnapshotRef,
) -> Vec<SnapshotMismatch> {
    use SnapshotField as F;
    let mut c = Checks::new();
    c.eq(F::Provider, &source.provider, &snapshot.provider);
    c.eq(F::Placement, &source.placement, &snapshot.placement);
    c.eq(
        F::SourceInstanceId,
        &request.instance_id,
        &snapshot.source_instance_id,
    );
    c.eq(F::WorkspaceId, &source.workspace_id, &snapshot.workspace_id);
    c.eq(F::SessionId, &source.session_id, &snapshot.session_id);
    c.eq(F::ProfileId, &source.profile.id, &snapshot.profile_id);
    c.eq(
        F::ProfileVersion,
        &source.profile.version,
        &snapshot.profile_version,
    );
    c.eq(
        F::ProfileDigest,
        &source.profile.digest,
        &snapshot.profile_digest,
    );
    c.eq(F::ExpiresAt, &request.expires_at, &snapshot.expires_at);
    c.0
}

/// `cloneSnapshot`: clone a snapshot into a distinct target Session.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CloneSnapshotRequest {
    /// The snapshot to clone.
    pub source: SnapshotRef,
    /// The Session the clone is bound to.
    pub target_session_id: SessionId,
}

/// The `cloneSnapshot` checks: the clone keeps the source's provider,
/// placement, `source_instance_id`, Workspace and profile; uses a
/// **different** `snapshot_id`; binds `session_id` to the target Session;
/// keeps `expires_at` byte-identical; and has `created_at` at or after the
/// source's and strictly before its own expiry.
pub fn clone_mismatches(
    request: &CloneSnapshotRequest,
    clone: &SnapshotRef,
) -> Vec<SnapshotMismatch> {
    use SnapshotField as F;
    let source = &request.source;
    let mut c = Checks::new();
    if clone.snapshot_id == source.snapshot_id {
        c.fail(
            F::SnapshotId,
            format!("an id other than {}", render(&source.snapshot_id)),
            render(&clone.snapshot_id),
        );
    }
    c.eq(F::Provider, &source.provider, &clone.provider);
    c.eq(F::Placement, &source.placement, &clone.placement);
    c.eq(
        F::SourceInstanceId,
        &source.source_instance_id,
        &clone.source_instance_id,
    );
    c.eq(F::WorkspaceId, &source.workspace_id, &clone.workspace_id);
    c.eq(F::SessionId, &request.target_session_id, &clone.session_id);
    c.eq(F::ProfileId, &source.profile_id, &clone.profile_id);
    c.eq(
        F::ProfileVersion,
        &source.profile_version,
        &clone.profile_version,
    );
    c.eq(
        F::ProfileDigest,
        &source.profile_digest,
        &clone.profile_digest,
    );
    c.eq(F::ExpiresAt, &source.expires_at, &clone.expires_at);
    if clone.created_at < source.created_at {
        c.fail(
            F::CreatedAt,
            format!("at or after {}", render(&source.created_at)),
            render(&clone.created_at),
        );
    } else if clone.created_at >= clone.expires_at {
        c.fail(
            F::CreatedAt,
            format!("strictly before {}", render(&clone.expires_at)),
            render(&clone.created_at),
        );
    }
    c.0
}

/// `resume`: rehydrate a snapshot into a fresh `active` instance for
/// `request`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResumeRequest {
    /// What the resumed instance must be (cross-checked like `provision`'s,
    /// with `state: active`).
    pub request: SandboxProvisionRequest,
    /// The snapshot to rehydrate.
    pub snapshot: SnapshotRef,
}

/// The `resume` admission: the snapshot agrees with the request on provider,
/// placement, Workspace, Session and profile (`profile_id`,
/// `profile_version`, `profile_digest`).
pub fn resume_mismatches(resume: &ResumeRequest) -> Vec<SnapshotMismatch> {
    use SnapshotField as F;
    let (r, s) = (&resume.request, &resume.snapshot);
    let mut c = Checks::new();
    c.eq(F::Provider, &r.provider, &s.provider);
    c.eq(F::Placement, &r.placement, &s.placement);
    c.eq(F::WorkspaceId, &r.workspace_id, &s.workspace_id);
    c.eq(F::SessionId, &r.session_id, &s.session_id);
    c.eq(F::ProfileId, &r.profile.id, &s.profile_id);
    c.eq(F::ProfileVersion, &r.profile.version, &s.profile_version);
    c.eq(F::ProfileDigest, &r.profile.digest, &s.profile_digest);
    c.0
}

impl SnapshotRef {
    /// The ref that passes every `snapshot` check for `request` on `source`,
    /// captured at `created_at` and named `snapshot_id` — what an adapter
    /// should return.
    pub fn for_instance(
        snapshot_id: SnapshotId,
        request: &SnapshotRequest,
        source: &SandboxInstance,
        created_at: Timestamp,
    ) -> Self {
        Self {
            snapshot_id,
            provider: source.provider.clone(),
            placement: source.placement,
            source_instance_id: source.instance_id.clone(),
            workspace_id: source.workspace_id.clone(),
            session_id: source.session_id.clone(),
            profile_id: source.profile.id.clone(),
            profile_version: source.profile.version.clone(),
            profile_digest: source.profile.digest.clone(),
            expires_at: request.expires_at,
            created_at,
        }
    }

    /// The clone that passes every `cloneSnapshot` check, named
    /// `snapshot_id` and made at `created_at`.
    pub fn cloned(
        &self,
        snapshot_id: SnapshotId,
        target: SessionId,
        created_at: Timestamp,
    ) -> Self {
        Self {
            snapshot_id,
            session_id: target,
            created_at,
            ..self.clone()
        }
    }

    /// Whether the snapshot's own retention deadline has passed at `now`.
    pub fn is_expired(&self, now: Timestamp) -> bool {
        self.expires_at <= now
    }
}
