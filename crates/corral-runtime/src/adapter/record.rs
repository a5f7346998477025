//! What the adapter persists, and where: everything lives in the backend.
//!
//! The adapter keeps no state of its own that cleanup or a restarted runtime
//! would need. Each contract instance is one backend sandbox carrying:
//!
//! - **labels** (set once, at `create`; the workload cannot change them):
//!   `corral=contract`, `corral.contract=instance`, `corral.instance_id`,
//!   `corral.expires_at`, `corral.workspace_id`, `corral.session_id`, and
//!   `corral.request_sha256` — the SHA-256 of the instance's request as
//!   recorded below. Its get-or-create key is the instance id, so an
//!   instance is addressed with `Backend::find`, and `cleanup` decides from
//!   `Backend::list` alone;
//! - **the instance record** [`InstanceRecord`], JSON at [`RECORD_PATH`] in
//!   the provider-owned control root `/workspace/.checkfu`: the full
//!   provision request, the lifecycle state and whether the mounts are
//!   sealed;
//! - **the active-write journals**, under [`JOURNAL_ROOT`] in the same
//!   control root.
//!
//! Each contract snapshot is one backend snapshot whose id is the contract's
//! `snapshot_id` and whose labels ([`SnapshotIdentity`]) hold every other
//! field of its `SnapshotRef` except `created_at`, which is the backend's own
//! capture time.
//!
//! # Trust
//!
//! The control root is inside the sandbox. On a backend that isolates the
//! workload from it, the workload cannot touch the record; on one that does
//! not (the memory oracle's shell, the local backend's host processes) it
//! can. The adapter therefore trusts the record only as far as the labels
//! vouch for it: every read checks that the record names the labelled
//! instance and that its request hashes to `corral.request_sha256`, and
//! refuses a forged record as `SandboxOperationFailed{integrity_mismatch}`.
//! The mutable part (state, seal) is not vouched for by a label; a workload
//! that rewrites it can at most make the adapter accept a write or refuse
//! one that the runtime, which keeps its own lifecycle state and re-checks
//! every identity, decides anyway.

use crate::adapter::at;
use corral_backend::{
    Backend, CORRAL_LABEL, Labels, RequestError, SandboxInfo, SandboxKey, SnapshotInfo,
};
use corral_contract::bounds::CONTROL_ROOT;
use corral_contract::{
    Digest, FailureReason, InstanceId, InstanceState, Operation, Placement, ProfileId,
    ProfileVersion, ProviderId, SandboxError, SandboxInstance, SandboxProvisionRequest, SessionId,
    SnapshotId, SnapshotRef, Timestamp, WorkspaceId,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use super::ContractAdapter;
use super::errors::{Subject, failed, on};

/// Where the instance record lives inside every instance.
pub const RECORD_PATH: &str = "/workspace/.checkfu/instance.json";

/// Where the active-write journals live inside every instance, one
/// directory per transaction (see `beginActiveWrite`).
pub const JOURNAL_ROOT: &str = "/workspace/.checkfu/active-write";

/// The value of the [`CORRAL_LABEL`] on everything the adapter creates.
pub const CORRAL_VALUE: &str = "contract";
/// The label saying what a sandbox or snapshot is to the contract.
pub const CONTRACT: &str = "corral.contract";
/// [`CONTRACT`] on an instance's sandbox.
pub const KIND_INSTANCE: &str = "instance";
/// [`CONTRACT`] on a snapshot.
pub const KIND_SNAPSHOT: &str = "snapshot";
/// The instance id.
pub const INSTANCE_ID: &str = "corral.instance_id";
/// The instance's or snapshot's own expiry, a canonical timestamp.
pub const EXPIRES_AT: &str = "corral.expires_at";
/// The Workspace.
pub const WORKSPACE_ID: &str = "corral.workspace_id";
/// The Session (a clone's target Session).
pub const SESSION_ID: &str = "corral.session_id";
/// SHA-256 of the instance's request as stored in its record.
pub const REQUEST_SHA256: &str = "corral.request_sha256";
/// A snapshot's provider.
pub const PROVIDER: &str = "corral.provider";
/// A snapshot's placement.
pub const PLACEMENT: &str = "corral.placement";
/// The instance a snapshot was captured from.
pub const SOURCE_INSTANCE_ID: &str = "corral.source_instance_id";
/// A snapshot's profile id.
pub const PROFILE_ID: &str = "corral.profile_id";
/// A snapshot's profile version.
pub const PROFILE_VERSION: &str = "corral.profile_version";
/// A snapshot's profile digest.
pub const PROFILE_DIGEST: &str = "corral.profile_digest";

/// The instance record, JSON at [`RECORD_PATH`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InstanceRecord {
    /// The contract's id of the instance (also its sandbox's key).
    pub instance_id: InstanceId,
    /// The request the instance was provisioned (or resumed) for; every
    /// returned instance echoes it.
    pub request: SandboxProvisionRequest,
    /// `provisioning` or `active`.
    pub state: InstanceState,
    /// Whether `activate` (or `resume`) sealed the mounts: `read_only`
    /// mounts refuse every later write through the adapter.
    pub sealed: bool,
}

impl InstanceRecord {
    /// The SHA-256 (lowercase hex) of the request as the record serializes
    /// it: the value of the `corral.request_sha256` label.
    pub fn request_sha256(request: &SandboxProvisionRequest) -> Result<String, serde_json::Error> {
        let json = serde_json::to_vec(request)?;
        Ok(hex::encode(Sha256::digest(json)))
    }
}

/// Labels made of this module's pairs. Every key is one of its constants and
/// every value a constant or a contract identifier, timestamp or digest
/// (printable ASCII, at most 256 bytes), all within the label rules — the
/// round-trip test below and every provision and snapshot test pass through
/// here — so a refusal is a defect of this module, never of a request.
fn labels_of<const N: usize>(pairs: [(String, String); N]) -> Labels {
    Labels::from_pairs(pairs).expect("the adapter's own labels follow the label rules")
}

/// The get-or-create key of an instance's sandbox: its instance id, the
/// one place the contract's identity becomes a backend key.
pub(crate) fn instance_key(instance_id: &InstanceId) -> Result<SandboxKey, RequestError> {
    SandboxKey::new(instance_id.to_string())
}

/// The labels of a new instance's sandbox.
pub(crate) fn instance_labels(
    instance_id: &InstanceId,
    request: &SandboxProvisionRequest,
) -> Result<Labels, serde_json::Error> {
    Ok(labels_of([
        (CORRAL_LABEL.to_owned(), CORRAL_VALUE.to_owned()),
        (CONTRACT.to_owned(), KIND_INSTANCE.to_owned()),
        (INSTANCE_ID.to_owned(), instance_id.to_string()),
        (EXPIRES_AT.to_owned(), request.expires_at.to_string()),
        (WORKSPACE_ID.to_owned(), request.workspace_id.to_string()),
        (SESSION_ID.to_owned(), request.session_id.to_string()),
        (
            REQUEST_SHA256.to_owned(),
            InstanceRecord::request_sha256(request)?,
        ),
    ]))
}

/// The selector of every contract instance (or, with [`KIND_SNAPSHOT`],
/// snapshot).
pub(crate) fn selector(kind: &str) -> Labels {
    labels_of([
        (CORRAL_LABEL.to_owned(), CORRAL_VALUE.to_owned()),
        (CONTRACT.to_owned(), kind.to_owned()),
    ])
}

/// What a sandbox's labels say about the instance it holds; `None` for a
/// sandbox that is not a contract instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InstanceLabels {
    pub(crate) instance_id: InstanceId,
    pub(crate) expires_at: Timestamp,
    pub(crate) request_sha256: String,
}

impl InstanceLabels {
    pub(crate) fn parse(labels: &Labels) -> Option<Self> {
        let get = |k: &str| labels.get(k).map(String::as_str);
        if get(CORRAL_LABEL) != Some(CORRAL_VALUE) || get(CONTRACT) != Some(KIND_INSTANCE) {
            return None;
        }
        Some(Self {
            instance_id: InstanceId::new(get(INSTANCE_ID)?).ok()?,
            expires_at: Timestamp::parse(get(EXPIRES_AT)?).ok()?,
            request_sha256: get(REQUEST_SHA256)?.to_owned(),
        })
    }
}

/// Everything a snapshot's labels hold: its `SnapshotRef` but for
/// `snapshot_id` (the backend's id) and `created_at` (the backend's capture
/// time).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotIdentity {
    /// The provider holding it.
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
    /// The profile's digest.
    pub profile_digest: Digest,
    /// Its own retention deadline.
    pub expires_at: Timestamp,
}

impl SnapshotIdentity {
    /// The identity of a ref.
    pub fn of(r: &SnapshotRef) -> Self {
        Self {
            provider: r.provider.clone(),
            placement: r.placement,
            source_instance_id: r.source_instance_id.clone(),
            workspace_id: r.workspace_id.clone(),
            session_id: r.session_id.clone(),
            profile_id: r.profile_id.clone(),
            profile_version: r.profile_version.clone(),
            profile_digest: r.profile_digest.clone(),
            expires_at: r.expires_at,
        }
    }

    /// The labels that carry it. Every key the backend may copy from the
    /// source sandbox that means something else on a snapshot
    /// (`corral.contract`, `corral.expires_at`) is overwritten.
    pub fn labels(&self) -> Labels {
        labels_of([
            (CORRAL_LABEL.to_owned(), CORRAL_VALUE.to_owned()),
            (CONTRACT.to_owned(), KIND_SNAPSHOT.to_owned()),
            (PROVIDER.to_owned(), self.provider.to_string()),
            (PLACEMENT.to_owned(), self.placement.to_string()),
            (
                SOURCE_INSTANCE_ID.to_owned(),
                self.source_instance_id.to_string(),
            ),
            (WORKSPACE_ID.to_owned(), self.workspace_id.to_string()),
            (SESSION_ID.to_owned(), self.session_id.to_string()),
            (PROFILE_ID.to_owned(), self.profile_id.to_string()),
            (PROFILE_VERSION.to_owned(), self.profile_version.to_string()),
            (PROFILE_DIGEST.to_owned(), self.profile_digest.to_string()),
            (EXPIRES_AT.to_owned(), self.expires_at.to_string()),
        ])
    }

    /// Reads the identity back; `None` for a snapshot that is not a contract
    /// snapshot (or whose labels do not parse).
    pub fn parse(labels: &Labels) -> Option<Self> {
        let get = |k: &str| labels.get(k).map(String::as_str);
        if get(CORRAL_LABEL) != Some(CORRAL_VALUE) || get(CONTRACT) != Some(KIND_SNAPSHOT) {
            return None;
        }
        Some(Self {
            provider: ProviderId::new(get(PROVIDER)?).ok()?,
            placement: Placement::parse(get(PLACEMENT)?).ok()?,
            source_instance_id: InstanceId::new(get(SOURCE_INSTANCE_ID)?).ok()?,
            workspace_id: WorkspaceId::new(get(WORKSPACE_ID)?).ok()?,
            session_id: SessionId::new(get(SESSION_ID)?).ok()?,
            profile_id: ProfileId::new(get(PROFILE_ID)?).ok()?,
            profile_version: ProfileVersion::new(get(PROFILE_VERSION)?).ok()?,
            profile_digest: Digest::new(get(PROFILE_DIGEST)?).ok()?,
            expires_at: Timestamp::parse(get(EXPIRES_AT)?).ok()?,
        })
    }

    /// The ref this identity describes.
    pub fn into_ref(self, snapshot_id: SnapshotId, created_at: Timestamp) -> SnapshotRef {
        SnapshotRef {
            snapshot_id,
            provider: self.provider,
            placement: self.placement,
            source_instance_id: self.source_instance_id,
            workspace_id: self.workspace_id,
            session_id: self.session_id,
            profile_id: self.profile_id,
            profile_version: self.profile_version,
            profile_digest: self.profile_digest,
            expires_at: self.expires_at,
            created_at,
        }
    }
}

/// A located instance: its sandbox and its verified record.
#[derive(Debug, Clone)]
pub(crate) struct Located {
    pub(crate) sandbox_id: String,
    pub(crate) record: InstanceRecord,
}

/// A located snapshot: the backend's record and the verified identity.
#[derive(Debug, Clone)]
pub(crate) struct StoredSnapshot {
    pub(crate) info: SnapshotInfo,
    pub(crate) identity: SnapshotIdentity,
}

impl<B: Backend> ContractAdapter<B> {
    /// The contract instance `instance_id`: its sandbox (found by key, its
    /// labels naming it) and its record, checked against the labels.
    /// `SandboxInstanceNotFound` when there is none — including a sandbox
    /// whose provision never wrote its record.
    pub(crate) async fn locate(
        &self,
        operation: Operation,
        instance_id: &InstanceId,
    ) -> Result<Located, SandboxError> {
        let not_found = || SandboxError::SandboxInstanceNotFound {
            instance_id: instance_id.clone(),
        };
        let subject = Subject::Instance(instance_id);
        let info = self
            .find_sandbox(instance_id)
            .await
            .map_err(on(operation, subject))?
            .ok_or_else(not_found)?;
        let labels = InstanceLabels::parse(&info.labels).ok_or_else(not_found)?;
        let bytes = self
            .backend
            .files()
            .read(&info.id, &at(RECORD_PATH).map_err(on(operation, subject))?)
            .await
            .map_err(on(operation, subject))?;
        let integrity = || failed(operation, FailureReason::IntegrityMismatch);
        let record: InstanceRecord = serde_json::from_slice(&bytes).map_err(|_| integrity())?;
        let digest = InstanceRecord::request_sha256(&record.request).map_err(|_| integrity())?;
        if record.instance_id != labels.instance_id || digest != labels.request_sha256 {
            return Err(integrity());
        }
        Ok(Located {
            sandbox_id: info.id,
            record,
        })
    }

    /// The sandbox keyed `instance_id` whose labels name that instance.
    pub(crate) async fn find_sandbox(
        &self,
        instance_id: &InstanceId,
    ) -> corral_backend::Result<Option<SandboxInfo>> {
        let found = self.backend.find(&instance_key(instance_id)?).await?;
        Ok(found.filter(|info| {
            InstanceLabels::parse(&info.labels).is_some_and(|l| &l.instance_id == instance_id)
        }))
    }

    /// Writes `record` into sandbox `sandbox_id`, creating the control root.
    pub(crate) async fn save_record(
        &self,
        operation: Operation,
        sandbox_id: &str,
        record: &InstanceRecord,
    ) -> Result<(), SandboxError> {
        let json = serde_json::to_vec_pretty(record)
            .map_err(|_| failed(operation, FailureReason::PlatformRejected))?;
        let subject = Subject::Instance(&record.instance_id);
        let files = self.backend.files();
        files
            .mkdir(
                sandbox_id,
                &at(CONTROL_ROOT).map_err(on(operation, subject))?,
                true,
            )
            .await
            .map_err(on(operation, subject))?;
        files
            .write(
                sandbox_id,
                &at(RECORD_PATH).map_err(on(operation, subject))?,
                &json,
                Some(0o600),
            )
            .await
            .map_err(on(operation, subject))
    }

    /// The instance a record describes, as the contract returns it.
    pub(crate) fn instance_of(&self, record: &InstanceRecord) -> SandboxInstance {
        SandboxInstance::for_request(
            record.instance_id.clone(),
            &record.request,
            &self.envelope,
            record.state,
        )
    }

    /// The contract snapshot `snapshot_id`, if the backend holds it.
    pub(crate) async fn find_snapshot(
        &self,
        operation: Operation,
        snapshot_id: &SnapshotId,
    ) -> Result<Option<StoredSnapshot>, SandboxError> {
        let Some(ops) = self.backend.snapshot_ops() else {
            return Ok(None);
        };
        let listed = ops
            .list_snapshots(&selector(KIND_SNAPSHOT))
            .await
            .map_err(on(operation, Subject::Snapshot(snapshot_id)))?;
        Ok(listed
            .into_iter()
            .filter(|info| info.id == snapshot_id.as_str())
            .find_map(|info| {
                let identity = SnapshotIdentity::parse(&info.labels)?;
                Some(StoredSnapshot { info, identity })
            }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn everything_persisted_in_an_instance_is_under_the_control_root() {
        use corral_contract::SandboxPath;
        let root = SandboxPath::new(CONTROL_ROOT).unwrap();
        for at in [RECORD_PATH, JOURNAL_ROOT] {
            let at = SandboxPath::new(at).unwrap();
            assert!(at.starts_with(&root) && at != root, "{at}");
        }
    }

    #[test]
    fn snapshot_identity_round_trips_through_labels() {
        let identity = SnapshotIdentity {
            provider: ProviderId::new("p").unwrap(),
            placement: Placement::Local,
            source_instance_id: InstanceId::new("ci-1").unwrap(),
            workspace_id: WorkspaceId::new("w").unwrap(),
            session_id: SessionId::new("s").unwrap(),
            profile_id: ProfileId::new("prof").unwrap(),
            profile_version: ProfileVersion::new("1").unwrap(),
            profile_digest: Digest::from_sha256_bytes([7; 32]),
            expires_at: Timestamp::parse("2030-01-01T00:00:00.000Z").unwrap(),
        };
        let mut labels = identity.labels();
        // Made through the label rules: every pair passed them.
        let checked = Labels::try_from(labels.as_map().clone()).unwrap();
        assert_eq!(checked, labels);
        assert_eq!(SnapshotIdentity::parse(&labels), Some(identity));
        labels.insert(CONTRACT, KIND_INSTANCE).unwrap();
        assert_eq!(SnapshotIdentity::parse(&labels), None);
    }
}
