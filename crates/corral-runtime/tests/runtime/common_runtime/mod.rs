//! Shared fixtures for the runtime, narrow and select tests: contract values,
//! and [`Fake`], a hand-made provider that counts its calls and can be told
//! to lie.

pub mod calls;
pub mod fake;
pub mod process;
pub mod rollback;
pub mod world;

use corral_contract::*;
use corral_runtime::runtime::Runtime;

pub use calls::refusal_of;
pub use fake::{Entry, Fake};
pub use process::{DestroyMode, ProcessScript};
pub use rollback::RollbackMode;

pub const D1: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
pub const D2: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";

pub fn ts(s: &str) -> Timestamp {
    Timestamp::parse(s).unwrap()
}

pub fn path(s: &str) -> SandboxPath {
    SandboxPath::new(s).unwrap()
}

pub fn id(s: &str) -> InstanceId {
    InstanceId::new(s).unwrap()
}

/// The instance deadline every fixture request carries.
pub const EXPIRES: &str = "2026-11-29T20:00:00.000Z";

/// An envelope that declares everything.
pub fn full_declaration() -> CapabilityDeclaration {
    CapabilityDeclaration {
        placement: Placement::Local,
        tiers: vec![Tier::Simulated, Tier::Container],
        platforms: vec![Platform::LINUX_AMD64],
        image_mode: ImageMode::Profile,
        package_managers: vec![PackageManager::Apt],
        network_modes: vec![NetworkMode::None, NetworkMode::Allowlist],
        retention_modes: vec![RetentionMode::EphemeralZdr, RetentionMode::Durable],
        snapshots: true,
        snapshot_custody: SnapshotCustody::Provider,
        snapshot_clone: true,
        list_dir: true,
        list_project_dir: true,
        read_files: true,
        physically_contained_file_read: true,
        active_mount_write: true,
        open_process: true,
        egress_certification: EgressCertification::KernelEnforced,
        enforcement: Enforcement::uniform(EnforcementLevel::ProviderEnforced),
        max_mounts: MaxMounts::new(8).unwrap(),
        provider_revision: Revision::new("fake-1").unwrap(),
        materialization_revision: Revision::new("fake-materialize-1").unwrap(),
    }
}

pub fn caps(declaration: CapabilityDeclaration) -> SandboxProviderCapabilities {
    SandboxProviderCapabilities::new(declaration).unwrap()
}

pub fn full_caps() -> SandboxProviderCapabilities {
    caps(full_declaration())
}

pub fn allowlist() -> NetworkPolicy {
    NetworkPolicy::Allowlist {
        destinations: Destinations::new(vec![HostPort::new("api.example.com:443").unwrap()])
            .unwrap(),
    }
}

pub fn profile(retention: RetentionMode, network: NetworkPolicy) -> SandboxProfile {
    SandboxProfile {
        id: ProfileId::new("prof-1").unwrap(),
        version: ProfileVersion::new("7").unwrap(),
        digest: Digest::new(D2).unwrap(),
        retention,
        network,
        max_duration_seconds: DurationSeconds::new(600).unwrap(),
        packages: Vec::new(),
        resources: ResourceLimits::default(),
    }
}

pub fn mounts(list: &[(&str, MountAccess)]) -> Mounts {
    Mounts::new(
        list.iter()
            .map(|(p, access)| MountSpec {
                path: path(p),
                access: *access,
            })
            .collect(),
    )
    .unwrap()
}

/// `/workspace/app` (read-write) and `/workspace/data` (read-only).
pub fn two_mounts() -> Mounts {
    mounts(&[
        ("/workspace/app", MountAccess::ReadWrite),
        ("/workspace/data", MountAccess::ReadOnly),
    ])
}

pub fn request_for(profile: SandboxProfile, mounts: Mounts) -> SandboxProvisionRequest {
    SandboxProvisionRequest {
        provider: ProviderId::new("fake").unwrap(),
        placement: Placement::Local,
        workspace_id: WorkspaceId::new("ws-1").unwrap(),
        session_id: SessionId::new("ses-1").unwrap(),
        run_id: RunId::new("run-1").unwrap(),
        attempt_id: AttemptId::new("att-1").unwrap(),
        lease_id: LeaseId::new("lease-1").unwrap(),
        lease_epoch: LeaseEpoch::new(3).unwrap(),
        target: TargetId::new("oneshot").unwrap(),
        profile,
        platform: Platform::LINUX_AMD64,
        root_image: ImageReference::new(format!("docker.io/library/alpine:3.20@{D1}")).unwrap(),
        mounts,
        expires_at: ts(EXPIRES),
    }
}

/// A ZDR, `none`-network request with [`two_mounts`].
pub fn zdr_request() -> SandboxProvisionRequest {
    request_for(
        profile(RetentionMode::EphemeralZdr, NetworkPolicy::None),
        two_mounts(),
    )
}

/// A durable, `none`-network request with [`two_mounts`].
pub fn durable_request() -> SandboxProvisionRequest {
    request_for(
        profile(RetentionMode::Durable, NetworkPolicy::None),
        two_mounts(),
    )
}

pub fn runtime(fake: Fake) -> Runtime<Fake> {
    Runtime::new(fake).unwrap()
}

/// Provisions `request` through the runtime; returns the instance id.
pub async fn provisioned(runtime: &Runtime<Fake>, request: SandboxProvisionRequest) -> InstanceId {
    runtime.provision(request).await.unwrap().value.instance_id
}

/// Provisions and activates `request` through the runtime.
pub async fn active(runtime: &Runtime<Fake>, request: SandboxProvisionRequest) -> InstanceId {
    let id = provisioned(runtime, request).await;
    runtime.activate(id.clone()).await.unwrap();
    id
}

pub fn command(timeout: u64, limit: u64) -> SandboxCommand {
    SandboxCommand::new(
        CommandLine::Argv {
            argv: Argv::new(["echo", "hi"]).unwrap(),
        },
        TimeoutSeconds::new(timeout).unwrap(),
        OutputLimitBytes::new(limit).unwrap(),
    )
}

pub fn member(p: &str, maximum_bytes: u64) -> ReadFilesMember {
    ReadFilesMember {
        path: path(p),
        maximum_bytes: MaximumBytes::new(maximum_bytes).unwrap(),
    }
}

/// Asserts `err` is `SandboxProtocolInvalid` naming `operation` and `field`;
/// returns `(expected, actual)`.
pub fn protocol_invalid(err: &SandboxError, operation: Operation, field: &str) -> (String, String) {
    protocol_invalid_in("", err, operation, field)
}

/// [`protocol_invalid`] for one row of a table: `case` names the row in every
/// failure message.
pub fn protocol_invalid_in(
    case: &str,
    err: &SandboxError,
    operation: Operation,
    field: &str,
) -> (String, String) {
    match err {
        SandboxError::SandboxProtocolInvalid {
            operation: op,
            field: f,
            expected,
            actual,
        } => {
            assert_eq!((*op, f.as_str()), (operation, field), "{case}: {err}");
            (expected.clone(), actual.clone())
        }
        other => {
            panic!("{case}: expected SandboxProtocolInvalid{{{operation}, {field}}}, got {other}")
        }
    }
}
