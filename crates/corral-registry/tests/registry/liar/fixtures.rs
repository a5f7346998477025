//! Fixtures: the liar over the memory oracle, the runtime around it, honest
//! requests built from the advertised envelope, and the assertions every
//! rejection test makes.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use corral_backend::{Backend, Labels};
use corral_backend_memory::MemoryBackend;
use corral_contract::{
    Argv, AttemptId, CommandLine, Digest, DurationSeconds, ExecuteRequest, ImageReference,
    InstanceState, LeaseEpoch, LeaseId, MountAccess, MountSpec, Mounts, NetworkMode, NetworkPolicy,
    Operation, OutputLimitBytes, ProfileId, ProfileVersion, ProviderId, ResourceLimits,
    RetentionMode, RunId, SandboxCommand, SandboxError, SandboxInstance, SandboxPath,
    SandboxProfile, SandboxProvider, SandboxProviderCapabilities, SandboxProvisionRequest,
    SessionId, TargetId, TimeoutSeconds, Timestamp, WorkspaceId,
};
use corral_registry::envelopes;
use corral_runtime::adapter::ContractAdapter;
use corral_runtime::runtime::Runtime;

use super::Liar;

/// The liar these tests use: the memory oracle behind the contract adapter.
pub type MemoryLiar = Liar<ContractAdapter<MemoryBackend>>;

/// The runtime holding the liar to the contract.
pub type LiarRuntime = Runtime<MemoryLiar>;

/// The rollback bound of every test that does not test the bound itself:
/// short, so that a runtime that waits on a rollback it should not wait on
/// fails fast rather than after the contract's 30 seconds.
pub const TEST_ROLLBACK_BOUND: Duration = Duration::from_secs(2);

/// The mount every instance declares (when the envelope accepts mounts).
pub const MOUNT: &str = "/workspace/app";

/// The profile's derived image digest.
pub const PROFILE_DIGEST: &str =
    "sha256:2222222222222222222222222222222222222222222222222222222222222222";

/// The root image, pinned by digest.
pub const ROOT_IMAGE: &str = "docker.io/library/alpine:3.20@sha256:1111111111111111111111111111111111111111111111111111111111111111";

/// A path literal.
pub fn path(text: &str) -> SandboxPath {
    SandboxPath::new(text).expect("a literal test path")
}

/// The memory oracle behind the contract adapter, with the envelope the
/// memory backend declares.
pub fn adapter() -> ContractAdapter<MemoryBackend> {
    ContractAdapter::new(Arc::new(MemoryBackend::new()), envelopes::memory())
        .expect("the memory envelope does not overclaim the memory backend")
}

/// A liar over the memory oracle that has not been told any lie yet.
pub fn memory_liar() -> MemoryLiar {
    Liar::new(adapter())
}

/// The runtime around `liar`, with the short test rollback bound.
pub fn runtime(liar: MemoryLiar) -> LiarRuntime {
    Runtime::new(liar)
        .expect("the memory envelope is a valid envelope")
        .with_rollback_bound(TEST_ROLLBACK_BOUND)
}

/// The wall clock as a contract timestamp.
pub fn now() -> Timestamp {
    Timestamp::from_system_time(SystemTime::now()).expect("the clock is in range")
}

/// An hour from now: far enough for every test, near enough to be sane.
pub fn in_an_hour() -> Timestamp {
    now()
        .checked_add_millis(3_600_000)
        .expect("an hour from now is in range")
}

/// An honest provision request the envelope `caps` can serve, for a
/// profile of `retention`.
pub fn provision_request(
    caps: &SandboxProviderCapabilities,
    retention: RetentionMode,
) -> SandboxProvisionRequest {
    let network = if caps.network_modes.contains(&NetworkMode::None) {
        NetworkPolicy::None
    } else {
        panic!("every envelope the liar tests use enforces network mode none")
    };
    let mounts = if caps.max_mounts.get() > 0 {
        vec![MountSpec {
            path: path(MOUNT),
            access: MountAccess::ReadWrite,
        }]
    } else {
        Vec::new()
    };
    SandboxProvisionRequest {
        provider: ProviderId::new("memory").expect("literal"),
        placement: caps.placement,
        workspace_id: WorkspaceId::new("ws-liar").expect("literal"),
        session_id: SessionId::new("session-liar").expect("literal"),
        run_id: RunId::new("run-liar").expect("literal"),
        attempt_id: AttemptId::new("attempt-1").expect("literal"),
        lease_id: LeaseId::new("lease-1").expect("literal"),
        lease_epoch: LeaseEpoch::new(1).expect("literal"),
        target: TargetId::new("oneshot").expect("literal"),
        profile: SandboxProfile {
            id: ProfileId::new("profile-liar").expect("literal"),
            version: ProfileVersion::new("1").expect("literal"),
            digest: Digest::new(PROFILE_DIGEST).expect("literal"),
            retention,
            network,
            max_duration_seconds: DurationSeconds::new(600).expect("literal"),
            packages: Vec::new(),
            resources: ResourceLimits::default(),
        },
        platform: caps.platforms[0],
        root_image: ImageReference::new(ROOT_IMAGE).expect("literal"),
        mounts: Mounts::new(mounts).expect("at most one mount"),
        expires_at: in_an_hour(),
    }
}

/// Provisions and activates an instance through the runtime, honestly
/// (the liar must not have been told a lie about either member).
pub async fn active(
    runtime: &LiarRuntime,
    retention: RetentionMode,
) -> (SandboxProvisionRequest, SandboxInstance) {
    let request = provision_request(runtime.capabilities(), retention);
    let instance = activate(runtime, request.clone()).await;
    (request, instance)
}

/// Provisions and activates `request` through the runtime, honestly.
pub async fn activate(runtime: &LiarRuntime, request: SandboxProvisionRequest) -> SandboxInstance {
    let provisioned = runtime
        .provision(request)
        .await
        .expect("an honest provision is accepted")
        .value;
    assert_eq!(provisioned.state, InstanceState::Provisioning);
    let active = runtime
        .activate(provisioned.instance_id)
        .await
        .expect("an honest activate is accepted")
        .value;
    assert_eq!(active.state, InstanceState::Active);
    active
}

/// `execute` of `argv` in `instance`, keeping at most `limit` bytes per
/// stream.
pub fn execute_request(instance: &SandboxInstance, argv: &[&str], limit: u64) -> ExecuteRequest {
    ExecuteRequest {
        instance_id: instance.instance_id.clone(),
        command: SandboxCommand::new(
            CommandLine::Argv {
                argv: Argv::new(argv.iter().copied()).expect("a literal argv"),
            },
            TimeoutSeconds::new(30).expect("literal"),
            OutputLimitBytes::new(limit).expect("a small limit"),
        ),
    }
}

/// The JSON rendering the runtime's cross-checks compare (and report as
/// `expected` / `actual`).
pub fn rendered<T: serde::Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).expect("contract values always render")
}

/// Asserts `error` is `SandboxProtocolInvalid{operation, field, expected,
/// actual}` exactly.
#[track_caller]
pub fn assert_protocol_invalid(
    error: &SandboxError,
    operation: Operation,
    field: &str,
    expected: &str,
    actual: &str,
) {
    let want = SandboxError::SandboxProtocolInvalid {
        operation,
        field: field.to_owned(),
        expected: expected.to_owned(),
        actual: actual.to_owned(),
    };
    assert_eq!(error, &want, "runtime said: {error}");
}

/// Asserts `error` is `SandboxProtocolInvalid` naming `operation` and
/// `field`, and returns its `expected` and `actual` for further checks.
#[track_caller]
pub fn protocol_invalid<'e>(
    error: &'e SandboxError,
    operation: Operation,
    field: &str,
) -> (&'e str, &'e str) {
    match error {
        SandboxError::SandboxProtocolInvalid {
            operation: op,
            field: f,
            expected,
            actual,
        } if *op == operation && f == field => (expected, actual),
        other => panic!(
            "expected SandboxProtocolInvalid naming {operation} and {field}, runtime said: {other}"
        ),
    }
}

/// Unwraps the error of a result the runtime must refuse.
#[track_caller]
pub fn refused<T>(result: Result<T, SandboxError>) -> SandboxError {
    match result {
        Ok(_) => panic!("the runtime accepted a lie"),
        Err(error) => error,
    }
}

/// The sandboxes the memory backend still holds: what a rollback must have
/// undone.
pub async fn live_sandboxes(liar: &MemoryLiar) -> usize {
    liar.inner()
        .backend()
        .list(&Labels::new())
        .await
        .expect("listing the memory backend")
        .len()
}

/// The snapshots the memory backend still holds.
pub async fn live_snapshots(liar: &MemoryLiar) -> usize {
    liar.inner()
        .backend()
        .snapshot_ops()
        .expect("the memory backend declares snapshots")
        .list_snapshots(&Labels::new())
        .await
        .expect("listing the memory backend's snapshots")
        .len()
}
