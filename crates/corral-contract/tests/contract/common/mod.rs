//! Shared fixtures for the contract's integration tests.

use corral_contract::*;

pub const D1: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
pub const D2: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";
pub const D3: &str = "sha256:3333333333333333333333333333333333333333333333333333333333333333";

pub fn ts(s: &str) -> Timestamp {
    Timestamp::parse(s).unwrap()
}

pub fn path(s: &str) -> SandboxPath {
    SandboxPath::new(s).unwrap()
}

pub fn profile() -> SandboxProfile {
    SandboxProfile {
        id: ProfileId::new("prof-1").unwrap(),
        version: ProfileVersion::new("7").unwrap(),
        digest: Digest::new(D2).unwrap(),
        retention: RetentionMode::Durable,
        network: NetworkPolicy::Allowlist {
            destinations: Destinations::new(vec![HostPort::new("api.example.com:443").unwrap()])
                .unwrap(),
        },
        max_duration_seconds: DurationSeconds::new(600).unwrap(),
        packages: vec![PackageSpec {
            manager: PackageManager::Apt,
            name: PackageName::new("git").unwrap(),
            version: None,
        }],
        resources: ResourceLimits {
            memory_bytes: Some(MemoryBytes::new(512 * 1024 * 1024).unwrap()),
            ..ResourceLimits::default()
        },
    }
}

pub fn request() -> SandboxProvisionRequest {
    SandboxProvisionRequest {
        provider: ProviderId::new("memory").unwrap(),
        placement: Placement::Local,
        workspace_id: WorkspaceId::new("ws-1").unwrap(),
        session_id: SessionId::new("ses-1").unwrap(),
        run_id: RunId::new("run-1").unwrap(),
        attempt_id: AttemptId::new("att-1").unwrap(),
        lease_id: LeaseId::new("lease-1").unwrap(),
        lease_epoch: LeaseEpoch::new(3).unwrap(),
        target: TargetId::new("oneshot").unwrap(),
        profile: profile(),
        platform: Platform::LINUX_AMD64,
        root_image: ImageReference::new(format!("docker.io/library/alpine:3.20@{D1}")).unwrap(),
        mounts: Mounts::new(vec![
            MountSpec {
                path: path("/workspace/app"),
                access: MountAccess::ReadWrite,
            },
            MountSpec {
                path: path("/workspace/data"),
                access: MountAccess::ReadOnly,
            },
        ])
        .unwrap(),
        expires_at: ts("2026-11-29T20:00:00.000Z"),
    }
}

/// An envelope that declares everything (like the memory oracle).
pub fn full_declaration() -> CapabilityDeclaration {
    CapabilityDeclaration {
        placement: Placement::Local,
        tiers: vec![Tier::Simulated],
        platforms: vec![Platform::LINUX_AMD64, Platform::LINUX_ARM64],
        image_mode: ImageMode::Profile,
        package_managers: vec![PackageManager::Apt, PackageManager::Pip],
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
        max_mounts: MaxMounts::new(64).unwrap(),
        provider_revision: Revision::new("memory-1").unwrap(),
        materialization_revision: Revision::new("mat-1").unwrap(),
    }
}

pub fn full_caps() -> SandboxProviderCapabilities {
    SandboxProviderCapabilities::new(full_declaration()).unwrap()
}

pub fn instance(state: InstanceState) -> SandboxInstance {
    SandboxInstance::for_request(
        InstanceId::new("inst-1").unwrap(),
        &request(),
        &full_caps(),
        state,
    )
}

pub fn snapshot_request() -> SnapshotRequest {
    SnapshotRequest {
        instance_id: InstanceId::new("inst-1").unwrap(),
        expires_at: ts("2026-12-29T00:00:00.000Z"),
    }
}

pub fn snapshot_ref() -> SnapshotRef {
    SnapshotRef::for_instance(
        SnapshotId::new("snap-1").unwrap(),
        &snapshot_request(),
        &instance(InstanceState::Active),
        ts("2026-11-29T19:30:00.000Z"),
    )
}

pub fn command(limit: u64) -> SandboxCommand {
    SandboxCommand::new(
        CommandLine::Argv {
            argv: Argv::new(["echo", "hi"]).unwrap(),
        },
        TimeoutSeconds::new(30).unwrap(),
        OutputLimitBytes::new(limit).unwrap(),
    )
}

/// Asserts that decoding `json` as `T` fails and that the message contains
/// every fragment (the field and the rule).
pub fn refused<T: serde::de::DeserializeOwned + std::fmt::Debug>(json: &str, fragments: &[&str]) {
    match serde_json::from_str::<T>(json) {
        Ok(v) => panic!("accepted {json}: {v:?}"),
        Err(e) => {
            let msg = e.to_string();
            for f in fragments {
                assert!(
                    msg.contains(f),
                    "message {msg:?} lacks {f:?} (input {json})"
                );
            }
        }
    }
}

/// Asserts value → JSON → value is the identity, and JSON → value → JSON
/// reproduces the bytes.
pub fn round_trip<T>(value: &T)
where
    T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let json = serde_json::to_string(value).unwrap();
    let back: T = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{json}: {e}"));
    assert_eq!(&back, value, "{json}");
    assert_eq!(serde_json::to_string(&back).unwrap(), json);
}
