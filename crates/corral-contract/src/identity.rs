//! The instance identity cross-check: seventeen top-level fields, twenty-one
//! equality checks.
//!
//! "Every returned instance is compared field by field against the request
//! the Runner sent … All must be byte-exact, and a mismatch is a
//! `SandboxProtocolInvalid` naming the `instance_identity` operation."
//! Byte-exact is implemented literally: both sides are rendered as JSON by
//! this crate's deterministic serializers and the strings are compared; the
//! same strings are the `expected`/`actual` of a mismatch.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::bounds::OUTPUT_PATH;
use crate::error::{ProtocolViolation, SandboxError};
use crate::lifecycle::InstanceState;
use crate::macros::vocabulary;
use crate::operation::Operation;
use crate::{SandboxInstance, SandboxProviderCapabilities, SandboxProvisionRequest};

vocabulary! {
    /// One of the twenty-one identity checks, named by its field path.
    pub enum IdentityField: "identity field" {
        /// `provider`.
        Provider = "provider",
        /// `placement`.
        Placement = "placement",
        /// `state`.
        State = "state",
        /// `workspace_id`.
        WorkspaceId = "workspace_id",
        /// `session_id`.
        SessionId = "session_id",
        /// `run_id`.
        RunId = "run_id",
        /// `attempt_id`.
        AttemptId = "attempt_id",
        /// `lease_id`.
        LeaseId = "lease_id",
        /// `lease_epoch`.
        LeaseEpoch = "lease_epoch",
        /// `target`.
        Target = "target",
        /// `profile`.
        Profile = "profile",
        /// `platform`.
        Platform = "platform",
        /// `root_image`.
        RootImage = "root_image",
        /// `mounts`.
        Mounts = "mounts",
        /// `output_path` (always `/mnt/session/outputs`).
        OutputPath = "output_path",
        /// `expires_at` (unchanged).
        ExpiresAt = "expires_at",
        /// `materialization.profile_digest` (= the profile's derived image digest).
        MaterializationProfileDigest = "materialization.profile_digest",
        /// `materialization.image_reference` (= `root_image`).
        MaterializationImageReference = "materialization.image_reference",
        /// `materialization.image_digest` (= the digest suffix of `root_image`).
        MaterializationImageDigest = "materialization.image_digest",
        /// `materialization.provider_revision` (= the advertised revision).
        MaterializationProviderRevision = "materialization.provider_revision",
        /// `materialization.materialization_revision` (= the advertised revision).
        MaterializationMaterializationRevision = "materialization.materialization_revision",
    }
}

/// One failed equality check: the field, and both sides as rendered JSON.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Mismatch<F> {
    /// The field that disagrees.
    pub field: F,
    /// The expected value, as JSON.
    pub expected: String,
    /// The returned value, as JSON.
    pub actual: String,
}

impl<F: std::fmt::Display> Mismatch<F> {
    /// The protocol violation this mismatch is.
    pub fn to_violation(&self) -> ProtocolViolation {
        ProtocolViolation::new(self.field.to_string(), &self.expected, &self.actual)
    }
}

/// A failed instance identity check.
pub type IdentityMismatch = Mismatch<IdentityField>;

/// Renders a value as the JSON the cross-checks compare.
pub(crate) fn render<T: Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|e| format!("<unrenderable: {e}>"))
}

/// Collects mismatches of one field-name type.
pub(crate) struct Checks<F>(pub(crate) Vec<Mismatch<F>>);

impl<F> Checks<F> {
    pub(crate) fn new() -> Self {
        Self(Vec::new())
    }

    /// Compares two values by their rendered JSON.
    pub(crate) fn eq<T: Serialize + ?Sized, U: Serialize + ?Sized>(
        &mut self,
        field: F,
        expected: &T,
        actual: &U,
    ) {
        let (expected, actual) = (render(expected), render(actual));
        if expected != actual {
            self.0.push(Mismatch {
                field,
                expected,
                actual,
            });
        }
    }

    /// Records a failed non-equality rule with its own rendering.
    pub(crate) fn fail(
        &mut self,
        field: F,
        expected: impl Into<String>,
        actual: impl Into<String>,
    ) {
        self.0.push(Mismatch {
            field,
            expected: expected.into(),
            actual: actual.into(),
        });
    }
}

/// The twenty-one identity checks of `instance` against `request`, the
/// provider's own `capabilities` (for the two advertised revisions) and the
/// state the operation must return (`provisioning` from `provision`,
/// `active` from `activate` and `resume`). Empty means the instance passes.
/// `instance_id` is not checked.
pub fn identity_mismatches(
    request: &SandboxProvisionRequest,
    instance: &SandboxInstance,
    capabilities: &SandboxProviderCapabilities,
    expected_state: InstanceState,
) -> Vec<IdentityMismatch> {
    use IdentityField as F;
    let mut c = Checks::new();
    c.eq(F::Provider, &request.provider, &instance.provider);
    c.eq(F::Placement, &request.placement, &instance.placement);
    c.eq(F::State, &expected_state, &instance.state);
    c.eq(
        F::WorkspaceId,
        &request.workspace_id,
        &instance.workspace_id,
    );
    c.eq(F::SessionId, &request.session_id, &instance.session_id);
    c.eq(F::RunId, &request.run_id, &instance.run_id);
    c.eq(F::AttemptId, &request.attempt_id, &instance.attempt_id);
    c.eq(F::LeaseId, &request.lease_id, &instance.lease_id);
    c.eq(F::LeaseEpoch, &request.lease_epoch, &instance.lease_epoch);
    c.eq(F::Target, &request.target, &instance.target);
    c.eq(F::Profile, &request.profile, &instance.profile);
    c.eq(F::Platform, &request.platform, &instance.platform);
    c.eq(F::RootImage, &request.root_image, &instance.root_image);
    c.eq(F::Mounts, &request.mounts, &instance.mounts);
    c.eq(F::OutputPath, OUTPUT_PATH, &instance.output_path);
    c.eq(F::ExpiresAt, &request.expires_at, &instance.expires_at);
    let m = &instance.materialization;
    c.eq(
        F::MaterializationProfileDigest,
        &request.profile.digest,
        &m.profile_digest,
    );
    c.eq(
        F::MaterializationImageReference,
        &request.root_image,
        &m.image_reference,
    );
    c.eq(
        F::MaterializationImageDigest,
        &request.root_image.digest(),
        &m.image_digest,
    );
    c.eq(
        F::MaterializationProviderRevision,
        &capabilities.provider_revision,
        &m.provider_revision,
    );
    c.eq(
        F::MaterializationMaterializationRevision,
        &capabilities.materialization_revision,
        &m.materialization_revision,
    );
    c.0
}

/// [`identity_mismatches`] as a result: the first mismatch (in the order of
/// the contract's list) as `SandboxProtocolInvalid{operation:
/// instance_identity, field, expected, actual}`.
pub fn check_instance_identity(
    request: &SandboxProvisionRequest,
    instance: &SandboxInstance,
    capabilities: &SandboxProviderCapabilities,
    expected_state: InstanceState,
) -> Result<(), SandboxError> {
    match identity_mismatches(request, instance, capabilities, expected_state).first() {
        Some(m) => Err(m.to_violation().into_error(Operation::InstanceIdentity)),
        None => Ok(()),
    }
}
