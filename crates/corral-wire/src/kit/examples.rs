//! One valid value of every request the unary routes decode, built through
//! the contract's validating constructors (so an example that stopped being
//! valid fails here, not in a reader's adapter).

use corral_contract::*;

/// A content digest used by every example that needs one.
const DIGEST_IMAGE: &str =
    "sha256:1111111111111111111111111111111111111111111111111111111111111111";
/// The example profile's digest.
const DIGEST_PROFILE: &str =
    "sha256:2222222222222222222222222222222222222222222222222222222222222222";

/// The instance every example addresses.
pub(super) fn instance_id() -> Result<InstanceId, InvalidValue> {
    InstanceId::new("inst-1")
}

/// A sandbox path from `text`.
pub(super) fn path(text: &str) -> Result<SandboxPath, InvalidValue> {
    SandboxPath::new(text)
}

fn profile() -> Result<SandboxProfile, InvalidValue> {
    Ok(SandboxProfile {
        id: ProfileId::new("prof-1")?,
        version: ProfileVersion::new("7")?,
        digest: Digest::new(DIGEST_PROFILE)?,
        retention: RetentionMode::Durable,
        network: NetworkPolicy::Allowlist {
            destinations: Destinations::new(vec![HostPort::new("api.example.com:443")?])?,
        },
        max_duration_seconds: DurationSeconds::new(600)?,
        packages: vec![PackageSpec {
            manager: PackageManager::Apt,
            name: PackageName::new("git")?,
            version: None,
        }],
        resources: ResourceLimits {
            memory_bytes: Some(MemoryBytes::new(512 * 1024 * 1024)?),
            ..ResourceLimits::default()
        },
    })
}

/// A `provision` request.
pub(super) fn provision() -> Result<SandboxProvisionRequest, InvalidValue> {
    Ok(SandboxProvisionRequest {
        provider: ProviderId::new("memory")?,
        placement: Placement::Local,
        workspace_id: WorkspaceId::new("ws-1")?,
        session_id: SessionId::new("ses-1")?,
        run_id: RunId::new("run-1")?,
        attempt_id: AttemptId::new("att-1")?,
        lease_id: LeaseId::new("lease-1")?,
        lease_epoch: LeaseEpoch::new(3)?,
        target: TargetId::new("oneshot")?,
        profile: profile()?,
        platform: Platform::LINUX_AMD64,
        root_image: ImageReference::new(format!("docker.io/library/alpine:3.20@{DIGEST_IMAGE}"))?,
        mounts: Mounts::new(vec![MountSpec {
            path: path("/workspace/app")?,
            access: MountAccess::ReadWrite,
        }])?,
        expires_at: Timestamp::parse("2026-11-29T20:00:00.000Z")?,
    })
}

/// The capabilities envelope of a provider that declares everything.
pub(super) fn capabilities() -> Result<SandboxProviderCapabilities, InvalidValue> {
    SandboxProviderCapabilities::new(CapabilityDeclaration {
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
        max_mounts: MaxMounts::new(64)?,
        provider_revision: Revision::new("memory-1")?,
        materialization_revision: Revision::new("mat-1")?,
    })
}

/// A `write_file` request.
pub(super) fn write_file() -> Result<WriteFileRequest, InvalidValue> {
    Ok(WriteFileRequest {
        instance_id: instance_id()?,
        path: path("/workspace/app/hello.txt")?,
        content: FileContent::new(b"hello\n".to_vec())?,
        mode: FileMode::default(),
    })
}

/// A `begin_active_write` request.
pub(super) fn begin_active_write() -> Result<ActiveWriteRequest, InvalidValue> {
    Ok(ActiveWriteRequest {
        instance_id: instance_id()?,
        batch: ActiveWriteBatch::new(vec![ActiveWriteFile {
            path: path("/workspace/app/a.txt")?,
            content: FileContent::new(b"a\n".to_vec())?,
            mode: FileMode::default(),
        }])?,
    })
}

/// An `execute` request.
pub(super) fn execute() -> Result<ExecuteRequest, InvalidValue> {
    Ok(ExecuteRequest {
        instance_id: instance_id()?,
        command: SandboxCommand::new(
            CommandLine::Argv {
                argv: Argv::new(["echo", "hi"])?,
            },
            TimeoutSeconds::new(30)?,
            OutputLimitBytes::new(65_536)?,
        ),
    })
}

/// A `read_file` request.
pub(super) fn read_file() -> Result<ReadFileRequest, InvalidValue> {
    ReadFileRequest::new(
        instance_id()?,
        path("/workspace/app/hello.txt")?,
        path("/workspace/app")?,
        MaximumBytes::new(4096)?,
    )
}

/// A `read_files` request.
pub(super) fn read_files() -> Result<ReadFilesRequest, InvalidValue> {
    ReadFilesRequest::new(
        instance_id()?,
        path("/workspace/app")?,
        vec![
            ReadFilesMember {
                path: path("/workspace/app/a.txt")?,
                maximum_bytes: MaximumBytes::new(1024)?,
            },
            ReadFilesMember {
                path: path("/workspace/app/b.txt")?,
                maximum_bytes: MaximumBytes::new(2048)?,
            },
        ],
    )
}

/// A `list_dir` request.
pub(super) fn list_dir() -> Result<ListDirRequest, InvalidValue> {
    Ok(ListDirRequest {
        instance_id: instance_id()?,
        root: path("/workspace/app")?,
        max_entries: MaxEntries::new(1000)?,
    })
}

/// A `list_project_dir` request.
pub(super) fn list_project_dir() -> Result<ListProjectDirRequest, InvalidValue> {
    Ok(ListProjectDirRequest {
        instance_id: instance_id()?,
        root: path("/workspace/app")?,
        max_entries: MaxEntries::new(1000)?,
    })
}

/// A `snapshot` request.
pub(super) fn snapshot() -> Result<SnapshotRequest, InvalidValue> {
    Ok(SnapshotRequest {
        instance_id: instance_id()?,
        expires_at: Timestamp::parse("2026-12-29T00:00:00.000Z")?,
    })
}

/// The snapshot the `snapshot` example would return.
pub(super) fn snapshot_ref() -> Result<SnapshotRef, InvalidValue> {
    let instance = SandboxInstance::for_request(
        instance_id()?,
        &provision()?,
        &capabilities()?,
        InstanceState::Active,
    );
    Ok(SnapshotRef::for_instance(
        SnapshotId::new("snap-1")?,
        &snapshot()?,
        &instance,
        Timestamp::parse("2026-11-29T19:30:00.000Z")?,
    ))
}

/// A `clone_snapshot` request.
pub(super) fn clone_snapshot() -> Result<CloneSnapshotRequest, InvalidValue> {
    Ok(CloneSnapshotRequest {
        source: snapshot_ref()?,
        target_session_id: SessionId::new("ses-2")?,
    })
}

/// A `release` request.
pub(super) fn release() -> Result<ReleaseRequest, InvalidValue> {
    Ok(ReleaseRequest {
        instance_id: instance_id()?,
        snapshot_expires_at: Some(Timestamp::parse("2026-12-29T00:00:00.000Z")?),
    })
}

/// A `resume` request.
pub(super) fn resume() -> Result<ResumeRequest, InvalidValue> {
    Ok(ResumeRequest {
        request: provision()?,
        snapshot: snapshot_ref()?,
    })
}

/// A `cleanup` request.
pub(super) fn cleanup() -> Result<CleanupRequest, InvalidValue> {
    CleanupRequest::new(
        Timestamp::parse("2026-11-29T20:00:00.000Z")?,
        Timestamp::parse("2026-11-29T19:00:00.000Z")?,
        vec![SnapshotId::new("snap-1")?],
    )
}

/// A process request (the `open` frame's payload).
pub(super) fn process_request() -> Result<SandboxProcessRequest, InvalidValue> {
    Ok(SandboxProcessRequest {
        executable: Executable::new("cat")?,
        arguments: Arguments::new(["-u"])?,
        working_directory: Some(path("/workspace/app")?),
        environment: Environment::new().with("LANG", "C.UTF-8")?,
    })
}

/// The evidence of the `opened` frame.
pub(super) fn evidence() -> Result<SandboxProcessEvidence, InvalidValue> {
    let request = process_request()?;
    Ok(SandboxProcessEvidence {
        instance_id: instance_id()?,
        provider: ProviderId::new("memory")?,
        placement: Placement::Local,
        process_id: ProcessId::new("p-1")?,
        started_at: Timestamp::parse("2026-11-29T12:00:00.000Z")?,
        executable: request.executable,
        arguments: request.arguments,
        working_directory: request.working_directory,
    })
}
